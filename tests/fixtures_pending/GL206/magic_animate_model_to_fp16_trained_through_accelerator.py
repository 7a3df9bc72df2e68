# source: https://github.com/jinxixiang/magic_animate_unofficial/issues/6
# train.py main(...): builds `accelerator = Accelerator(gradient_accumulation_steps=1)` (no
# mixed_precision: Accelerate adds no loss scaling), the MagicAnimate module (UNet, appearance
# encoder, ControlNet) and AdamW over its trainable parameters (eps=1e-8), then casts the whole
# model with `weight_type = torch.float16; model.to(local_rank, dtype=weight_type)`, prepares model
# and optimizer with `accelerator.prepare`, and trains with `accelerator.backward(loss)`,
# `accelerator.clip_grad_norm_(...)`, `optimizer.step()`. Reported: "If the precision of model is
# FP16, the loss becomes NAN. But FP32 will fix the problem" (V100, so no bf16); the answers point
# at Adam's eps underflowing in fp16. Pure fp16 weights and optimizer state, no GradScaler.
# (needs `accelerate`, not installed here, and the diffusion models: static)
# fixture: static
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator


class MagicAnimate(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.appearance_encoder = nn.Conv2d(channels, 16, 3, padding=1)
        self.unet = nn.Sequential(nn.Conv2d(channels + 16, 32, 3, padding=1), nn.SiLU(), nn.Conv2d(32, channels, 3, padding=1))

    def forward(self, init_latents, source_image):
        ref = self.appearance_encoder(source_image)
        return self.unet(torch.cat([init_latents, ref], dim=1))


def main(learning_rate=3e-5, adam_epsilon=1e-8, max_train_steps=100, train_batch_size=2):
    accelerator = Accelerator(gradient_accumulation_steps=1)
    local_rank = accelerator.device
    model = MagicAnimate()
    model.requires_grad_(True)
    trainable_params = list(filter(lambda p: p.requires_grad, model.parameters()))
    optimizer = torch.optim.AdamW(trainable_params, lr=learning_rate, eps=adam_epsilon)

    weight_type = torch.float16
    model.to(local_rank, dtype=weight_type)  # expect: GL206

    model, optimizer = accelerator.prepare(model, optimizer)
    model.train()
    for step in range(max_train_steps):
        latents = torch.randn(train_batch_size, 4, 8, 8, device=local_rank, dtype=weight_type)
        source = torch.randn(train_batch_size, 4, 8, 8, device=local_rank, dtype=weight_type)
        noise = torch.randn_like(latents)
        model_pred = model(latents + noise, source)
        loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(trainable_params, 1.0)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
