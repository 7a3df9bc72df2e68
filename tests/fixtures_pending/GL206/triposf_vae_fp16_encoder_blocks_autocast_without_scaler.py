# source: https://github.com/VAST-AI-Research/TripoSF/issues/5
# A reader's training pipeline for TripoSF's sparse VAE: the model's `local_pc_encoder` stays in
# fp32 (its forward even forces `torch.autocast("cuda", dtype=torch.float32)`), while the VAE
# `encoder` is built "preset to FP16": with `use_fp16` its constructor converts its transformer
# blocks to float16 (TRELLIS-style `convert_to_fp16()`: `l.weight.data = l.weight.data.half()`),
# keeping only the input and output layers in fp32. The training loop runs the model under
# `torch.cuda.amp.autocast(dtype=torch.float16)` and steps `AdamW(model.parameters(), eps=1e-4)`
# with a plain `loss.backward()`: no GradScaler anywhere. The reporter saw the float16 layers stop
# updating (all but the output layers), another reader got NaN losses.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import AdamW

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def convert_module_to_f16(l):
    if isinstance(l, nn.Linear):
        l.weight.data = l.weight.data.half()
        if l.bias is not None:
            l.bias.data = l.bias.data.half()


class LocalPointEncoder(nn.Module):
    def __init__(self, out_channels=16):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3, out_channels), nn.GELU(), nn.Linear(out_channels, out_channels))
        self.coord_embed = nn.Linear(3, out_channels)

    def forward(self, points_sample, voxel_coords):
        return self.mlp(points_sample).mean(dim=1) + self.coord_embed(voxel_coords)


class SparseEncoder(nn.Module):
    def __init__(self, in_channels=16, model_channels=32, latent_channels=8, num_blocks=2, use_fp16=False):
        super().__init__()
        self.dtype = torch.float16 if use_fp16 else torch.float32
        self.input_layer = nn.Linear(in_channels, model_channels)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(model_channels), nn.Linear(model_channels, model_channels)) for _ in range(num_blocks)])
        self.out_layer = nn.Linear(model_channels, 2 * latent_channels)
        if use_fp16:
            self.convert_to_fp16()  # expect: GL206

    def convert_to_fp16(self):
        self.blocks.apply(convert_module_to_f16)

    def forward(self, x, sample_posterior=False):
        h = self.input_layer(x).type(self.dtype)
        for block in self.blocks:
            h = h + block(h)
        h = self.out_layer(h.type(x.dtype))
        mean, logvar = h.chunk(2, dim=-1)
        return mean, (mean, logvar)


class SparseDecoder(nn.Module):
    def __init__(self, latent_channels=8, out_channels=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_channels, 32), nn.GELU(), nn.Linear(32, out_channels))

    def forward(self, latent):
        return self.net(latent)


class TripoSFVAE(nn.Module):
    def __init__(self, use_fp16=True):
        super().__init__()
        self.local_pc_encoder = LocalPointEncoder()
        self.encoder = SparseEncoder(use_fp16=use_fp16)
        self.decoder = SparseDecoder()

    def forward(self, points_sample, sparse_voxel_coords):
        with torch.autocast("cuda", dtype=torch.float32):
            sparse_pc_features = self.local_pc_encoder(points_sample, sparse_voxel_coords)
        latent, posterior = self.encoder(sparse_pc_features, sample_posterior=False)
        recon_pcs_per_voxel = self.decoder(latent)
        return posterior, recon_pcs_per_voxel


def main():
    torch.manual_seed(0)
    model = TripoSFVAE(use_fp16=True).to(device)
    optimizer = AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, eps=1e-4)
    g = torch.Generator().manual_seed(1)
    input_pcs = torch.rand(64, 16, 3, generator=g) - 0.5
    input_voxel = input_pcs.mean(dim=1)
    losses = []
    for step in range(60):
        idx = torch.randint(0, 64, (16,), generator=g)
        pcs, vox = input_pcs[idx].to(device), input_voxel[idx].to(device)
        with torch.cuda.amp.autocast(dtype=torch.float16):  # expect: GL201, GL205
            posterior, recon_pcs_per_voxel = model(pcs, vox)
        mean, logvar = posterior
        loss = F.mse_loss(recon_pcs_per_voxel.float(), vox) + 1e-4 * mean.float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
