# source: https://github.com/pytorch/pytorch/issues/17854
# ".cuda() cost much more time": to warp an image by a predicted flow the reporter builds the pixel
# grid once, `fy, fx = torch.meshgrid(torch.arange(0, h), torch.arange(0, w))`, and then, at every
# run of the operation, `new_fx = torch.add(fx.float().cuda(), flow[0])` (and the same for fy):
# the grid is converted and copied host-to-device again each time, and the profile shows the
# `.cuda()` taking most of the time. The answer: keep the operands in CUDA memory so that no
# transfer is needed. Here a tiny flow network is trained to align two images with that warp.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class FlowNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 2, 3, padding=1))

    def forward(self, img1, img2):
        return self.net(torch.cat([img1, img2], dim=1))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n, h, w = 8, 16, 16
    base = F.avg_pool2d(torch.rand(n, 1, h + 4, w + 4), 3, stride=1)
    img1 = base[:, :, 1:h + 1, 1:w + 1].to(device)
    img2 = base[:, :, 2:h + 2, 1:w + 1].to(device)  # shifted by one row

    fy, fx = torch.meshgrid(torch.arange(0, h), torch.arange(0, w), indexing="ij")
    model = FlowNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(40):
        flow = model(img1, img2)
        new_fx = torch.add(fx.float().to(device), flow[:, 0])  # expect: GL504
        new_fy = torch.add(fy.float().to(device), flow[:, 1])  # expect: GL504
        grid = torch.stack([2.0 * new_fx / (w - 1) - 1.0, 2.0 * new_fy / (h - 1) - 1.0], dim=-1)
        warped = F.grid_sample(img2, grid, align_corners=True)
        loss = F.l1_loss(warped, img1) + 0.01 * flow.abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": float(losses[0]), "last_loss": float(losses[-1]), "device": device.type}))


if __name__ == "__main__":
    main()
