# source: https://github.com/decoderesearch/SAELens/pull/723
# SAELens' SAETrainer builds a `torch.amp.GradScaler` in __init__ and routes every training step
# through it: the forward runs under `torch.autocast(device_type=..., dtype=torch.bfloat16,
# enabled=cfg.autocast)`, then `scaler.scale(loss).backward()`, `scaler.unscale_(optimizer)`,
# `clip_grad_norm_(sae.parameters(), 1.0)`, `scaler.step(optimizer)`, `scaler.update()`, and
# `optimizer.zero_grad()` after the step. The PR removes the scaler as dead weight (bf16 has fp32's
# exponent range, nothing underflows): bf16 autocast with or without a scaler is correct, and the
# scaler is used in the documented order. GL201-GL204 must stay silent.
import json
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class TrainerConfig:
    lr: float = 3e-3
    autocast: bool = True
    total_training_steps: int = 60
    l1_coefficient: float = 1e-3


class SAE(nn.Module):
    def __init__(self, d_in=16, d_sae=32):
        super().__init__()
        self.W_enc = nn.Parameter(torch.randn(d_in, d_sae) * 0.1)
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(torch.randn(d_sae, d_in) * 0.1)
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def training_forward_pass(self, x, l1_coefficient):
        feature_acts = torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)
        sae_out = feature_acts @ self.W_dec + self.b_dec
        mse_loss = (sae_out.float() - x.float()).pow(2).sum(-1).mean()
        l1_loss = l1_coefficient * feature_acts.float().abs().sum(-1).mean()
        return mse_loss + l1_loss


class SAETrainer:
    def __init__(self, sae, data_provider, cfg, device):
        self.sae = sae
        self.data_provider = data_provider
        self.cfg = cfg
        self.device = device
        self.optimizer = torch.optim.Adam(sae.parameters(), lr=cfg.lr, betas=(0.9, 0.999))
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: 1.0)
        self.grad_scaler = torch.amp.GradScaler(device=device.type, enabled=cfg.autocast and device.type == "cuda")
        self.autocast_if_enabled = torch.autocast(
            device_type=device.type, dtype=torch.bfloat16, enabled=cfg.autocast and device.type == "cuda"
        )
        self.losses = []

    def fit(self):
        for n_training_steps in range(self.cfg.total_training_steps):
            batch = next(self.data_provider).to(self.device)
            loss = self._train_step(self.sae, batch)
            self.losses.append(loss)
        return self.sae

    def _train_step(self, sae, sae_in):
        sae.train()
        with self.autocast_if_enabled:
            loss = sae.training_forward_pass(sae_in, self.cfg.l1_coefficient)
        self.grad_scaler.scale(loss).backward()
        self.grad_scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0)
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()
        self.optimizer.zero_grad()
        self.lr_scheduler.step()
        return loss.item()


def activation_stream(dictionary, batch_size):
    g = torch.Generator().manual_seed(0)
    while True:
        codes = torch.relu(torch.randn(batch_size, dictionary.shape[0], generator=g) - 1.0)
        yield codes @ dictionary


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sae = SAE().to(device)
    trainer = SAETrainer(sae, activation_stream(torch.randn(32, 16), 32), TrainerConfig(), device)
    trainer.fit()
    losses = trainer.losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
