# source: https://github.com/bpowell122/tomodrgn/pull/9
# bpowell122/tomodrgn#9 (fixes #8): `tomodrgn train_vae --multigpu` wraps the TiltSeriesHetOnlyVAE
# in `DataParallelPassthrough(model)`, a torch.nn.DataParallel subclass whose `__getattr__` falls
# back to the wrapped module (so `model.encode(...)`, `model.encoder.reparameterize(...)` and
# `model.decode(...)` keep working), and trains with autocast and a GradScaler. save_checkpoint()
# stored `'model_state_dict': model.state_dict()`: the wrapper's keys, prefixed "module.", while
# `--load` restores the checkpoint into the bare model before wrapping, which fails with
# "Unexpected key(s) in state_dict". The PR adds `unwrapped_state_dict()` to the passthrough class
# and saves it when the model is wrapped. Shrunk to a small VAE on synthetic "images"; the wrap
# keeps its condition (`args.multigpu and torch.cuda.device_count() > 1`).
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class DataParallelPassthrough(torch.nn.DataParallel):
    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


class Encoder(nn.Module):
    def __init__(self, in_dim, zdim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, 2 * zdim))

    def forward(self, x):
        return self.net(x).chunk(2, dim=-1)

    def reparameterize(self, mu, logvar):
        return mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)


class TiltSeriesHetOnlyVAE(nn.Module):
    def __init__(self, in_dim=16, zdim=4):
        super().__init__()
        self.encoder = Encoder(in_dim, zdim)
        self.decoder = nn.Sequential(nn.Linear(zdim + 2, 32), nn.ReLU(), nn.Linear(32, 1))

    def encode(self, batch_images):
        return self.encoder(batch_images)

    def decode(self, coords, z):
        z = z.unsqueeze(1).expand(-1, coords.shape[1], -1)
        return self.decoder(torch.cat([coords, z], dim=-1)).squeeze(-1)

    def forward(self, batch_images, coords):
        z_mu, z_logvar = self.encode(batch_images)
        return self.decode(coords, self.encoder.reparameterize(z_mu, z_logvar)), z_mu, z_logvar


def train_batch(*, model, scaler, optim, batch_images, coords, beta, use_amp):
    optim.zero_grad()
    model.train()
    with torch.amp.autocast(device_type=batch_images.device.type, enabled=use_amp):
        z_mu, z_logvar = model.encode(batch_images)
        z = model.encoder.reparameterize(z_mu, z_logvar)
        batch_images_recon = model.decode(coords=coords, z=z)
        with torch.amp.autocast(device_type=batch_images.device.type, enabled=False):
            gen_loss = F.mse_loss(batch_images_recon.float(), batch_images.float())
            kld_loss = beta * torch.mean(-0.5 * torch.sum(1 + z_logvar.float() - z_mu.float().pow(2) - z_logvar.float().exp(), dim=1))
            loss = gen_loss + kld_loss
    scaler.scale(gen_loss).backward(retain_graph=True)
    scaler.scale(kld_loss).backward()
    scaler.step(optim)
    scaler.update()
    return torch.stack((loss, gen_loss, kld_loss)).detach().cpu().numpy()


def save_checkpoint(*, model, scaler, optim, epoch, out_weights):
    torch.save({  # expect: GL304
        "epoch": epoch,
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": optim.state_dict(),
        "scaler": scaler.state_dict() if scaler is not None else None,
    }, out_weights)


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = TiltSeriesHetOnlyVAE()
    optim = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler(device=device.type, enabled=use_amp)
    if args.load:
        checkpoint = torch.load(args.load, weights_only=True, map_location=device)
        model.load_state_dict(checkpoint["model_state_dict"])
        model.to(device)
        optim.load_state_dict(checkpoint["optimizer_state_dict"])
        start_epoch = checkpoint["epoch"] + 1
        scaler.load_state_dict(checkpoint["scaler"])
    else:
        start_epoch = 0
        model.to(device)

    if args.multigpu and torch.cuda.device_count() > 1:
        args.batch_size *= torch.cuda.device_count()
        model = DataParallelPassthrough(model)

    g = torch.Generator().manual_seed(0)
    images = torch.tanh(torch.randn(128, 2, generator=g) @ torch.randn(2, 16, generator=g))
    coords = torch.linspace(-1, 1, 16).view(1, 16, 1).expand(128, 16, 2).contiguous()
    data_train = torch.utils.data.TensorDataset(images, coords)
    data_train_generator = torch.utils.data.DataLoader(data_train, batch_size=args.batch_size, shuffle=True)
    losses = []
    for epoch in range(start_epoch, args.num_epochs):
        losses_accum = 0.0
        for batch_images, batch_coords in data_train_generator:
            batch_images = batch_images.to(device)
            batch_coords = batch_coords.to(device)
            losses_batch = train_batch(model=model, scaler=scaler, optim=optim, batch_images=batch_images, coords=batch_coords, beta=0.01, use_amp=use_amp)
            losses_accum += losses_batch[0] * len(batch_images)
        losses.append(losses_accum / len(data_train))
        if args.checkpoint and (epoch + 1) % args.checkpoint == 0:
            save_checkpoint(model=model, scaler=scaler, optim=optim, epoch=epoch, out_weights=f"{args.outdir}/weights.{epoch}.pkl")
    return losses, device


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--multigpu", action="store_true", default=True)
    parser.add_argument("--load", default=None)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=16)
    parser.add_argument("--num-epochs", dest="num_epochs", type=int, default=8)
    parser.add_argument("--checkpoint", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args([])
    args.outdir = tempfile.mkdtemp()
    losses, device = main(args)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": float(losses[0]), "last_loss": float(losses[-1]), "device": device.type}))
