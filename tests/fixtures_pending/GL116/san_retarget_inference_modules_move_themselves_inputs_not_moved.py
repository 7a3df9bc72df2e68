# source: https://github.com/ANYMS-A/Skeleton_Aware_Networks_for_Deep_Motion_Retargeting/issues/1
# Skeleton-Aware Networks (motion retargeting): every network class moves itself at the end of its
# constructor, `self.to(args.cuda_device)` (Encoder, StaticEncoder, Decoder in model/enc_and_dec.py).
# train.py moves each batch to `args.cuda_device`; inference.py builds the same networks, loads the
# weights, and feeds them the DataLoader's motions and the static offsets as they come, on the CPU:
# `s_latent_a = static_enc_a(static_a)` fails with "Input type (torch.FloatTensor) and weight type
# (torch.cuda.FloatTensor) should be the same". Here: small 2D-conv encoders/decoder over synthetic
# joint-rotation clips, a short training run in train.py's manner, then inference.py's loop.
# fails-on-cuda: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor)
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda_device", type=str, default="cuda:0" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=30)
    return parser.parse_args()


class MotionDataset(Dataset):
    def __init__(self, n=16, joints=6, frames=8, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.offsets = [torch.randn(joints, 3, generator=g), torch.randn(joints, 3, generator=g) * 1.2]
        self.items = []
        for _ in range(n):
            dyn_a = torch.randn(4, joints, frames, generator=g)
            dyn_b = dyn_a * 0.8 + 0.1 * self.offsets[1].mean()
            self.items.append((dyn_a, dyn_b))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


class StaticEncoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.enc_layer = nn.Sequential(nn.Conv2d(3, 8, 1), nn.LeakyReLU())
        self.to(args.cuda_device)

    def forward(self, x):
        return self.enc_layer(x)


class Encoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.enc_layer1 = nn.Sequential(nn.Conv2d(7, 8, (1, 3), padding=(0, 1)), nn.LeakyReLU())
        self.enc_layer2 = nn.Sequential(nn.Conv2d(16, 16, (1, 3), padding=(0, 1)), nn.LeakyReLU())
        self.to(args.cuda_device)

    def forward(self, x, s_latent):
        return self.enc_layer2(torch.cat([self.enc_layer1(x), s_latent], dim=1))


class Decoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.dec_layer = nn.Conv2d(16 + 8 + 3, 4, (1, 3), padding=(0, 1))
        self.to(args.cuda_device)

    def forward(self, d_latent, s_latent, sx):
        return self.dec_layer(torch.cat([d_latent, s_latent, sx], dim=1))


def static_of(offset, batch, frames):
    return offset.permute(1, 0).unsqueeze(2).repeat(1, 1, frames).unsqueeze(0).repeat(batch, 1, 1, 1).detach()


def train(args, dataset, workdir):
    dataloader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    offset_a, offset_b = dataset.offsets
    enc_a, static_enc_a, static_enc_b, dec_b = Encoder(args), StaticEncoder(args), StaticEncoder(args), Decoder(args)
    params = [p for m in (enc_a, static_enc_a, static_enc_b, dec_b) for p in m.parameters()]
    optimizer = torch.optim.Adam(params, lr=3e-3)
    criterion_mse = nn.MSELoss()
    losses = []
    for epoch in range(args.epochs):
        for dynamic_a, dynamic_b in dataloader:
            dynamic_a, dynamic_b = dynamic_a.to(args.cuda_device), dynamic_b.to(args.cuda_device)
            b, f = dynamic_a.size(0), dynamic_a.size(3)
            static_a = static_of(offset_a, b, f).to(args.cuda_device)
            static_b = static_of(offset_b, b, f).to(args.cuda_device)
            s_latent_a = static_enc_a(static_a)
            d_latent_a = enc_a(torch.cat([dynamic_a, static_a], dim=1), s_latent_a)
            pred_dynamic_b = dec_b(d_latent_a, static_enc_b(static_b), static_b)
            loss = criterion_mse(pred_dynamic_b, dynamic_b)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    for name, m in (("enc_a", enc_a), ("static_enc_a", static_enc_a), ("static_enc_b", static_enc_b), ("dec_b", dec_b)):
        torch.save(m.state_dict(), os.path.join(workdir, f"{name}.pt"))
    return losses


def inference(args, dataset, workdir):
    dataloader = DataLoader(dataset, batch_size=1)
    offset_a, offset_b = dataset.offsets
    enc_a, static_enc_a, static_enc_b, dec_b = Encoder(args), StaticEncoder(args), StaticEncoder(args), Decoder(args)
    enc_a.load_state_dict(torch.load(os.path.join(workdir, "enc_a.pt"), map_location="cpu"))
    static_enc_a.load_state_dict(torch.load(os.path.join(workdir, "static_enc_a.pt"), map_location="cpu"))
    static_enc_b.load_state_dict(torch.load(os.path.join(workdir, "static_enc_b.pt"), map_location="cpu"))
    dec_b.load_state_dict(torch.load(os.path.join(workdir, "dec_b.pt"), map_location="cpu"))
    for m in (enc_a, static_enc_a, static_enc_b, dec_b):
        m.eval()
    criterion_mse = nn.MSELoss()
    total = 0.0
    with torch.no_grad():
        for dynamic_a, dynamic_b in dataloader:
            tmp_batch, tmp_frame = dynamic_a.size(0), dynamic_a.size(3)
            static_a = static_of(offset_a, tmp_batch, tmp_frame)
            static_b = static_of(offset_b, tmp_batch, tmp_frame)
            mix_a = torch.cat([dynamic_a, static_a], dim=1)
            s_latent_a = static_enc_a(static_a)  # expect: GL116
            d_latent_a = enc_a(mix_a, s_latent_a)  # expect: GL116
            s_latent_b = static_enc_b(static_b)  # expect: GL116
            pred_dynamic_b = dec_b(d_latent_a, s_latent_b, static_b)  # expect: GL116
            total += criterion_mse(pred_dynamic_b, dynamic_b).item()  # expect: GL101
    return total / len(dataset)


if __name__ == "__main__":
    args = get_args()
    torch.manual_seed(0)
    dataset = MotionDataset()
    with tempfile.TemporaryDirectory() as workdir:
        losses = train(args, dataset, workdir)
        print("inference mse", round(inference(args, dataset, workdir), 4))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(args.cuda_device).type}))
