# source: https://github.com/shunsukesaito/SCANimate/issues/8
# fixture: static (needs several GPUs: with --gpu_id 1 the `.cuda()` tensors stay on cuda:0)
# SCANimate-style skinning training: `main` builds `cuda = torch.device('cuda:%d' % gpu_id)` and
# moves the networks there; the training helper receives that device, moves some batch fields with
# `.to(device=cuda)` and the SMPL fields with an index-less `.cuda()`, which is always the current
# GPU (cuda:0).
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

K = 4  # joints


class ScanFrames(Dataset):
    def __init__(self, n_frames=32, n_pts=64):
        g = torch.Generator().manual_seed(0)
        self.cano = torch.rand(n_frames, n_pts, 3, generator=g)
        self.offsets = torch.randn(n_frames, K, 3, generator=g) * 0.3
        centers = torch.rand(K, 3, generator=g)
        w = torch.softmax(-8 * torch.cdist(self.cano, centers.expand(n_frames, K, 3)), dim=-1)
        self.posed = self.cano + torch.einsum("fnk,fkc->fnc", w, self.offsets)

    def __len__(self):
        return self.cano.shape[0]

    def __getitem__(self, i):
        return {
            "f_id": torch.tensor(i),
            "scan_cano_uni": self.posed[i],
            "smpl_data": {"smpl_cano": self.cano[i], "jT": self.offsets[i]},
        }


class SkinningNet(nn.Module):
    def __init__(self, g_dim=8):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3 + g_dim, 32), nn.ReLU(), nn.Linear(32, K))
        self.global_feat = None

    def set_global_feat(self, feat):
        self.global_feat = feat

    def forward(self, pts, scan, jT):
        feat = self.global_feat[:, None].expand(-1, pts.shape[1], -1)
        w = torch.softmax(self.mlp(torch.cat([pts, feat], -1)), dim=-1)
        pred = pts + torch.einsum("bnk,bkc->bnc", w, jT)
        return pred, ((pred - scan) ** 2).mean()


def train_skinning_net(opt, skin_net, lat_vecs, train_data_loader, cuda):
    optimizer = torch.optim.Adam(list(skin_net.parameters()) + list(lat_vecs.parameters()), lr=opt.lr)
    losses = []
    for epoch in range(opt.num_epoch):
        skin_net.train()
        for train_idx, train_data in enumerate(train_data_loader):
            scan_posed = train_data["scan_cano_uni"].to(device=cuda)
            f_ids = train_data["f_id"].to(device=cuda)
            smpl_data = train_data["smpl_data"]

            smpl_cano = smpl_data["smpl_cano"].cuda()
            jT = smpl_data["jT"].cuda()

            lat = lat_vecs(f_ids)
            skin_net.set_global_feat(lat)
            _, err = skin_net(smpl_cano, scan_posed, jT)  # expect: GL116

            optimizer.zero_grad()
            err.backward()
            optimizer.step()
            losses.append(err.item())
    return losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu_id", type=int, default=0)
    parser.add_argument("--num_epoch", type=int, default=15)
    parser.add_argument("--lr", type=float, default=1e-2)
    opt = parser.parse_args()
    torch.manual_seed(0)

    cuda = torch.device("cuda:%d" % opt.gpu_id)
    dataset = ScanFrames()
    train_data_loader = DataLoader(dataset, batch_size=8, shuffle=True)
    skin_net = SkinningNet().to(cuda)
    lat_vecs = nn.Embedding(len(dataset), 8).to(cuda)
    losses = train_skinning_net(opt, skin_net, lat_vecs, train_data_loader, cuda)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": cuda.type}))


if __name__ == "__main__":
    main()
