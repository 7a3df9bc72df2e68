# source: https://github.com/afiaka87/glide-finetune/issues/5
# Fine-tuning a diffusion text-to-image model "in half precision": with use_fp16 the model's own
# convert_to_fp16() walks its blocks and casts every conv/linear weight and bias to float16
# (`l.weight.data = l.weight.data.half()`, as the GLIDE code base does), then AdamW trains it with no
# loss scaling. After the first iteration the weights become NaN (AdamW's default eps=1e-8 is 0 in
# float16); the linked PR raises eps, the usual fix keeps fp32 weights with autocast + GradScaler.
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def convert_module_to_f16(l):
    if isinstance(l, (nn.Conv1d, nn.Conv2d, nn.Linear)):
        l.weight.data = l.weight.data.half()
        if l.bias is not None:
            l.bias.data = l.bias.data.half()


class Text2ImUNet(nn.Module):
    def __init__(self, ch=8, use_fp16=False):
        super().__init__()
        self.dtype = torch.float16 if use_fp16 else torch.float32
        self.input_blocks = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.SiLU())
        self.output_blocks = nn.Sequential(nn.Conv2d(ch, 3, 3, padding=1))

    def convert_to_fp16(self):
        self.input_blocks.apply(convert_module_to_f16)
        self.output_blocks.apply(convert_module_to_f16)

    def forward(self, x, timesteps):
        h = self.input_blocks(x.type(self.dtype))
        return self.output_blocks(h).float()


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    glide_model = Text2ImUNet(use_fp16=args.use_fp16)
    if args.use_fp16:
        glide_model.convert_to_fp16()  # expect: GL206
    glide_model.to(device)
    glide_model.train()
    optimizer = torch.optim.AdamW(glide_model.parameters(), lr=args.learning_rate)
    images = torch.rand(16, 3, 8, 8) * 2 - 1
    x_start = images.to(device)
    losses = []
    for step in range(20):
        noise = torch.randn_like(x_start)
        timesteps = torch.randint(0, 100, (x_start.shape[0],), device=device)
        x_t = x_start + 0.5 * noise
        optimizer.zero_grad()
        loss = F.mse_loss(glide_model(x_t, timesteps), noise)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_fp16", type=bool, default=True)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    main(parser.parse_args())
