# source: https://github.com/declare-lab/tango/blob/34ecd38898508017ca937508a047b42817d2b070/mustango/diffusers/tests/models/test_models_vq.py
# Hard negative (P48-3, engine): diffusers' model tests (vendored in declare-lab/tango) load a model
# and move it with the chained statement `model.to(torch_device).eval()`, then feed it inputs moved
# to `torch_device`. `Module.to` moves in place and `eval()` returns the module: the model is on
# `torch_device`, and GL112 must stay silent. On the base the engine reads an expression statement
# as a move only when its outermost call is the move (`model.eval().to(d)` is silent), so
# `model.to(d).eval()` and `model.to(d).train()` leave the model "never moved". Own code in the
# test's shape: a tiny VQ autoencoder fitted for a few steps after `model.to(torch_device).train()`,
# then checked after `model.to(torch_device).eval()` under `no_grad`.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

torch_device = "cuda" if torch.cuda.is_available() else "cpu"


class TinyVQModel(nn.Module):
    def __init__(self, in_channels=3, latent_channels=4, num_codes=16):
        super().__init__()
        self.encoder = nn.Conv2d(in_channels, latent_channels, 3, padding=1)
        self.codebook = nn.Embedding(num_codes, latent_channels)
        self.decoder = nn.Conv2d(latent_channels, in_channels, 3, padding=1)

    @classmethod
    def from_pretrained(cls, name):
        torch.manual_seed(len(name))
        return cls()

    def forward(self, sample):
        h = self.encoder(sample)
        flat = h.permute(0, 2, 3, 1).reshape(-1, h.size(1))
        codes = torch.cdist(flat, self.codebook.weight).argmin(dim=1)
        q = self.codebook(codes).view(h.size(0), h.size(2), h.size(3), h.size(1)).permute(0, 3, 1, 2)
        commit = F.mse_loss(h, q.detach()) + F.mse_loss(q, h.detach())
        q = h + (q - h).detach()
        return self.decoder(q), commit


def fit(model, images, steps=40):
    model.to(torch_device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    history = []
    batch = images.to(torch_device)
    for _ in range(steps):
        recon, commit = model(batch)
        loss = F.mse_loss(recon, batch) + 0.25 * commit
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


def test_output_pretrained(model):
    model.to(torch_device).eval()
    torch.manual_seed(0)
    image = torch.randn(1, 3, 8, 8)
    image = image.to(torch_device)
    with torch.no_grad():
        output, _ = model(image)
    output_slice = output[0, -1, -3:, -3:].flatten().cpu()
    assert output_slice.shape == (9,)
    return output_slice


torch.manual_seed(0)
images = torch.rand(8, 3, 8, 8)
model = TinyVQModel.from_pretrained("fusing/vqgan-dummy")
history = fit(model, images)
test_output_pretrained(model)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": torch_device}))
