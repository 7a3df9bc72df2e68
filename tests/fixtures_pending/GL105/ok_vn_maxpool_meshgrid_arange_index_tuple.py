# source: https://github.com/FlyingGiraffe/vnn/blob/f3197e210022/models/vn_layers.py
# Hard negative (real shape, benchmarks/PRECISION34.md P34-A2): Vector Neurons' `VNMaxPool`
# picks, per channel, the vector with the largest projection on a learned direction. Its forward
# builds `torch.meshgrid([torch.arange(j) for j in x.size()[:-1]])` on the host, appends the
# device argmax `idx` to that tuple and indexes `x[index_tuple]`. The aranges are used only as
# indices: advanced indexing moves CPU index tensors to the indexed tensor's device, so it runs on
# the CPU and on CUDA (the repository trains this layer on the GPU). GL105 reports the arange
# (the forward flow reads the tuple concatenation with `idx` as meeting a device tensor).
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
EPS = 1e-6


class VNLinear(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.map_to_feat = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x):
        return self.map_to_feat(x.transpose(1, -1)).transpose(1, -1)


class VNMaxPool(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.map_to_dir = nn.Linear(in_channels, in_channels, bias=False)

    def forward(self, x):
        d = self.map_to_dir(x.transpose(1, -1)).transpose(1, -1)
        dotprod = (x * d).sum(2, keepdims=True)
        idx = dotprod.max(dim=-1, keepdim=False)[1]
        index_tuple = torch.meshgrid([torch.arange(j) for j in x.size()[:-1]], indexing="ij") + (idx,)
        x_max = x[index_tuple]
        return x_max


class TinyVNClassifier(nn.Module):
    def __init__(self, num_classes=2):
        super().__init__()
        self.lin = VNLinear(1, 8)
        self.pool = VNMaxPool(8)
        self.head = nn.Linear(8, num_classes)

    def forward(self, points):
        x = self.lin(points.unsqueeze(1))           # [B, 8, 3, N]
        x = self.pool(x)                            # [B, 8, 3]
        feat = torch.norm(x, dim=2) + EPS           # rotation-invariant [B, 8]
        return self.head(feat)


if __name__ == "__main__":
    torch.manual_seed(0)
    pts = torch.randn(64, 3, 16)
    labels = (pts.norm(dim=1).max(dim=1)[0] > 2.2).long()
    model = TinyVNClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    first = last = None
    for epoch in range(20):
        for i in range(0, 64, 16):
            x, y = pts[i:i + 16].to(device), labels[i:i + 16].to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            first = loss.item() if first is None else first
            last = loss.item()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
