# source: https://github.com/mlpc-ucsd/BLIVA/issues/29
# BLIVA (built on LAVIS): Blip2Base.init_vision_encoder() builds the ViT and, for
# `vit_precision="fp16"`, runs convert_weights_to_fp16(), which `model.apply()`s a function
# setting `l.weight.data = l.weight.data.half()` on every Conv/Linear layer. With the default
# `freeze_vit=True` those weights are frozen and left out of the optimizer; the reporter unfroze
# the ViT (`freeze_vit=False`), so the runner's GradScaler meets float16 gradients at its first
# step: "ValueError: Attempting to unscale FP16 gradients". LAVIS's load_model() turns the model
# back to float32 on a CPU device (`model.float()`), so only GPU runs convert.
# (A tiny patch-embedding ViT and a linear head instead of EVA-ViT-g and the Q-Former/LLM.)
# fails-on-cuda: Attempting to unscale FP16 gradients
import contextlib
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def convert_weights_to_fp16(model: nn.Module):
    """Convert applicable model parameters to fp16"""

    def _convert_weights_to_fp16(l):
        if isinstance(l, (nn.Conv1d, nn.Conv2d, nn.Linear)):
            l.weight.data = l.weight.data.half()
            if l.bias is not None:
                l.bias.data = l.bias.data.half()

    model.apply(_convert_weights_to_fp16)


class TinyViT(nn.Module):
    def __init__(self, patch=4, width=32, depth=2):
        super().__init__()
        self.num_features = width
        self.patch_embed = nn.Conv2d(3, width, kernel_size=patch, stride=patch)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width * 2), nn.GELU(), nn.Linear(width * 2, width)) for _ in range(depth))

    def forward(self, image):
        x = self.patch_embed(image).flatten(2).transpose(1, 2)
        for blk in self.blocks:
            x = x + blk(x)
        return x


def disabled_train(self, mode=True):
    return self


class Blip2Base(nn.Module):
    @property
    def device(self):
        return next(self.parameters()).device

    def maybe_autocast(self, dtype=torch.float16):
        if self.device != torch.device("cpu"):
            return torch.autocast("cuda", dtype=dtype)
        return contextlib.nullcontext()

    def init_vision_encoder(self, precision):
        visual_encoder = TinyViT()
        if precision == "fp16":
            convert_weights_to_fp16(visual_encoder)
        ln_vision = nn.LayerNorm(visual_encoder.num_features)
        return visual_encoder, ln_vision


class BLIVA(Blip2Base):
    def __init__(self, num_classes=4, freeze_vit=True, vit_precision="fp16"):
        super().__init__()
        self.visual_encoder, self.ln_vision = self.init_vision_encoder(vit_precision)
        if freeze_vit:
            for name, param in self.visual_encoder.named_parameters():
                param.requires_grad = False
            self.visual_encoder = self.visual_encoder.eval()
            self.visual_encoder.train = disabled_train
        self.query_proj = nn.Linear(self.visual_encoder.num_features, 32)
        self.head = nn.Linear(32, num_classes)

    def forward(self, samples):
        image = samples["image"]
        with self.maybe_autocast():
            image_embeds = self.ln_vision(self.visual_encoder(image))
        query = self.query_proj(image_embeds.float()).mean(1)
        logits = self.head(torch.tanh(query))
        return {"loss": F.cross_entropy(logits, samples["label"])}


def load_model(device, freeze_vit):
    model = BLIVA(freeze_vit=freeze_vit, vit_precision="fp16")
    if device == "cpu" or device == torch.device("cpu"):
        model = model.float()
    return model.to(device)


def train_epoch(model, loader, optimizer, scaler, device, losses):
    model.train()
    for image, label in loader:
        samples = {"image": image.to(device), "label": label.to(device)}
        with torch.autocast(device.type, enabled=device.type == "cuda"):
            loss = model(samples)["loss"]
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # expect: GL207
        scaler.update()
        losses.append(loss.item())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 4, (128,), generator=g)
    colors = torch.rand(4, 3, 1, 1, generator=g)
    images = colors[labels].expand(-1, 3, 16, 16) + 0.1 * torch.randn(128, 3, 16, 16, generator=g)
    loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
    model = load_model(device, freeze_vit=False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
    losses = []
    for epoch in range(5):
        train_epoch(model, loader, optimizer, scaler, device, losses)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
