# source: https://github.com/shunsukesaito/SCANimate/issues/8
# SCANimate's training app picks its GPU from the options (`cuda = torch.device('cuda:%d' % gpu)`),
# moves the skinning networks and the scan tensors with `.to(device=cuda)`, but moves the SMPL
# tensors of each batch with an index-less `.cuda()`, which lands on the current device (GPU 0).
# With `--gpu 1` the root-transform einsum mixes cuda:1 and cuda:0 tensors and fails ("Tensors are on
# different gpu when training with cuda:1"); the report asks for `.to(cuda)` everywhere. (The
# crash needs two GPUs: `gpulint run --gpus 2 file.py --gpu 1`; with the default --gpu 0 it trains
# on one GPU. Like the app, it needs a GPU.)
import argparse
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def homogenize(v):
    return torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)


class ScanDataset(Dataset):
    def __init__(self, n=64, n_pts=32):
        g = torch.Generator().manual_seed(0)
        self.scans = torch.randn(n, n_pts, 3, generator=g)
        self.lbs = torch.softmax(self.scans @ torch.randn(3, 4, generator=g), dim=-1)
        self.rot = torch.linalg.qr(torch.randn(n, 3, 3, generator=g)).Q

    def __len__(self):
        return len(self.scans)

    def __getitem__(self, i):
        root = torch.eye(4)
        root[:3, :3] = self.rot[i]
        inv_root = torch.linalg.inv(root)
        posed = (homogenize(self.scans[i]) @ root.T)[:, :3]
        return {
            "scan_cano_uni": posed,
            "gt_lbs": self.lbs[i],
            "smpl_data": {"inv_rootT": inv_root, "bmin": posed.min(0).values, "bmax": posed.max(0).values},
        }


class SkinningNet(nn.Module):
    def __init__(self, n_joints=4):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, n_joints))

    def forward(self, pts, bmin, bmax):
        pts = (pts - bmin[:, None]) / (bmax - bmin)[:, None].clamp(min=1e-3)
        return torch.softmax(self.mlp(pts), dim=-1)


def train_skinning_net(inv_skin_net, train_data_loader, cuda, epochs=8):
    optimizer = torch.optim.Adam(inv_skin_net.parameters(), lr=1e-2)
    losses = []
    for epoch in range(epochs):
        inv_skin_net.train()
        for train_idx, train_data in enumerate(train_data_loader):
            scan_posed = train_data["scan_cano_uni"].to(device=cuda)
            gt_lbs = train_data["gt_lbs"].to(device=cuda)
            smpl_data = train_data["smpl_data"]
            bmax = smpl_data["bmax"].cuda()  # expect: GL113
            bmin = smpl_data["bmin"].cuda()  # expect: GL113
            inv_rootT = smpl_data["inv_rootT"].cuda()  # expect: GL113

            # get rid of the global rotation of the posed scans
            scan_posed = torch.einsum("bst,bvt->bvs", inv_rootT, homogenize(scan_posed))[:, :, :3]
            pred_lbs = inv_skin_net(scan_posed, bmin, bmax)
            err = nn.functional.mse_loss(pred_lbs, gt_lbs)

            optimizer.zero_grad()
            err.backward()
            optimizer.step()
            losses.append(err.detach())
    return torch.stack(losses).tolist()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    opt = parser.parse_args()
    torch.manual_seed(0)
    cuda = torch.device("cuda:%d" % opt.gpu)
    inv_skin_net = SkinningNet().to(cuda)
    train_data_loader = DataLoader(ScanDataset(), batch_size=8, shuffle=True)
    losses = train_skinning_net(inv_skin_net, train_data_loader, cuda)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": cuda.type}))


if __name__ == "__main__":
    main()
