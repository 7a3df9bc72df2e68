# source: https://github.com/nerfstudio-project/nerfacc/issues/307
# An instant-NGP style radiance-field example builds a GradScaler(2**10) and calls
# grad_scaler.scale(loss).backward(), then optimizer.step() directly: the gradients are never
# unscaled (they stay 1024x too large) and inf/NaN steps are never skipped. The maintainer agrees it
# amounts to (loss * 1024).backward(); the fix steps through the scaler and updates its scale.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class RadianceField(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, hidden), nn.ReLU())
        self.rgb_head = nn.Linear(hidden, 3)
        self.density_head = nn.Linear(hidden, 1)

    def forward(self, positions):
        h = self.encoder(positions)
        return torch.sigmoid(self.rgb_head(h)), F.softplus(self.density_head(h))


def render_rays(field, rays_o, rays_d, n_samples=8):
    t = torch.linspace(0.0, 1.0, n_samples, device=rays_o.device)
    pts = rays_o[:, None, :] + rays_d[:, None, :] * t[None, :, None]
    rgb, sigma = field(pts.reshape(-1, 3))
    rgb = rgb.reshape(-1, n_samples, 3)
    weights = torch.softmax(sigma.reshape(-1, n_samples), dim=1)
    return (weights[..., None] * rgb).sum(dim=1)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    radiance_field = RadianceField().to(device)
    optimizer = torch.optim.Adam(radiance_field.parameters(), lr=1e-2, eps=1e-15)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[40], gamma=0.33)
    grad_scaler = torch.amp.GradScaler(device.type, 2**10)

    rays_o = torch.randn(64, 3)
    rays_d = F.normalize(torch.randn(64, 3), dim=-1)
    target_rgb = torch.sigmoid(rays_o @ torch.randn(3, 3))

    losses = []
    for step in range(60):
        radiance_field.train()
        idx = torch.randint(0, rays_o.shape[0], (32,))
        o, d, pixels = rays_o[idx].to(device), rays_d[idx].to(device), target_rgb[idx].to(device)
        rgb = render_rays(radiance_field, o, d)
        loss = F.smooth_l1_loss(rgb, pixels)

        optimizer.zero_grad()
        # Adam is used, so the gradients are left scaled
        grad_scaler.scale(loss).backward()
        optimizer.step()  # expect: GL203
        scheduler.step()
        losses.append(loss.item())

    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
