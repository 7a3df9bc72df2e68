# source: https://github.com/huggingface/lerobot (src/lerobot/policies/molmoact2/molmoact2_hf_model/modeling_molmoact2.py:
# build_batched_images / merge_visual_inputs / generate_actions_from_inputs; PRECISION53)
# The model builds its batched images and pooling indices with `device=pixel_values.device` and
# `device=image_token_pooling.device`, only under `if pixel_values is not None:`. The action
# generator calls the model with text only (`self(input_ids=...)`: both default to None), so in
# that call the branch never runs. The engine analyses the builder in that call's context, reads
# `device=<None>.device` as the host, and reports the factories (GL105 here; GL116 x3 in the real
# file, where the indices meet image features inside the vision backbone). P53-2.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class VisionBackbone(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)

    def forward(self, images, pooled_patches_idx):
        features = self.encoder(images)
        valid = pooled_patches_idx >= 0
        to_pool = features * valid.to(features.dtype)[:, :, None]
        return to_pool.mean(dim=1)


class Model(nn.Module):
    def __init__(self, vocab=12, dim=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.vision_backbone = VisionBackbone(dim)
        self.head = nn.Linear(dim, 2)

    def build_batched_images(self, pixel_values, image_token_pooling):
        images = torch.zeros(pixel_values.shape, dtype=pixel_values.dtype, device=pixel_values.device)
        images[:] = pixel_values
        token_pooling = torch.full(
            image_token_pooling.shape, -1, dtype=image_token_pooling.dtype, device=image_token_pooling.device
        )
        token_pooling[:] = image_token_pooling
        return images, token_pooling

    def forward(self, input_ids, pixel_values=None, image_token_pooling=None):
        x = self.wte(input_ids).mean(dim=1)
        if pixel_values is not None:
            images, token_pooling = self.build_batched_images(pixel_values, image_token_pooling)
            x = x + self.vision_backbone(images, token_pooling)
        return self.head(x)

    def generate_actions_from_inputs(self, *, input_ids):
        return self(input_ids=input_ids).argmax(dim=-1)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    input_ids = torch.randint(0, 12, (32, 5)).to(device)
    pixels = torch.randn(32, 4, 8).to(device)
    pooling = torch.randint(-1, 4, (32, 4)).to(device)
    labels = (pixels.mean(dim=(1, 2)) > 0).long().to(device)
    losses = []
    for step in range(40):
        loss = F.cross_entropy(model(input_ids, pixels, pooling), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        actions = model.generate_actions_from_inputs(input_ids=input_ids)
    print("actions:", actions.shape[0])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
