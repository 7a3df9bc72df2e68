# source: https://github.com/lucidrains/tr-rosetta-pytorch/pull/5 (commit 20b7dc4)
# tr-rosetta-pytorch's `preprocess(msa_file)` (utils.py) one-hot encodes the MSA on `d()` (a helper
# answering 'cuda' when CUDA is available), builds the 1-D features there and the 2-D DCA couplings
# with `fast_dca(msa1hot, w) if nrow > 1 else torch.zeros((ncol, ncol, 442)).float()`: for an MSA of
# a single sequence the couplings are zeros made on the host, and the `torch.cat` of the pair
# features fails on a GPU machine ("found at least two devices, cuda:0 and cpu! ... wrapper__cat").
# Here a small distance-bin network is trained on the features of a few synthetic A3M files, one
# of which holds a single sequence, as in the PR's report.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import os
import string
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def d(tensor=None):
    if tensor is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" if tensor.is_cuda else "cpu"


def parse_a3m(filename):
    table = str.maketrans(dict.fromkeys(string.ascii_lowercase))
    with open(filename) as fh:
        seqs = [line.strip().translate(table) for line in fh if line[0] != ">"]
    alphabet = np.array(list("ARNDCQEGHILKMFPSTWYV-"), dtype="|S1").view(np.uint8)
    msa = np.array([list(s) for s in seqs], dtype="|S1").view(np.uint8)
    for i in range(alphabet.shape[0]):
        msa[msa == alphabet[i]] = i
    msa[msa > 20] = 20
    return msa


def msa2pssm(msa1hot, w):
    beff = w.sum()
    f_i = (w[:, None, None] * msa1hot).sum(dim=0) / beff + 1e-9
    h_i = (-f_i * torch.log(f_i)).sum(dim=1)
    return torch.cat((f_i, h_i[:, None]), dim=1)


def reweight(msa1hot, cutoff):
    id_min = msa1hot.shape[1] * cutoff
    id_mtx = torch.einsum("ikl,jkl->ij", msa1hot, msa1hot)
    return 1.0 / (id_mtx > id_min).float().sum(dim=-1)


def fast_dca(msa1hot, weights, penalty=4.5):
    device = msa1hot.device
    nr, nc, ns = msa1hot.shape
    x = msa1hot.view(nr, -1)
    num_points = weights.sum() - torch.sqrt(weights.mean())
    mean = (x * weights[:, None]).sum(dim=0, keepdim=True) / num_points
    x = (x - mean) * torch.sqrt(weights[:, None])
    cov = (x.t() @ x) / num_points
    cov_reg = cov + torch.eye(nc * ns, device=device) * penalty / torch.sqrt(weights.sum())
    x1 = torch.inverse(cov_reg).view(nc, ns, nc, ns)
    features = x1.transpose(1, 2).contiguous().reshape(nc, nc, ns * ns)
    x3 = torch.sqrt((x1[:, :-1, :, :-1] ** 2).sum(dim=(1, 3))) * (1 - torch.eye(nc, device=device))
    apc = x3.sum(dim=0, keepdim=True) * x3.sum(dim=1, keepdim=True) / x3.sum()
    contacts = (x3 - apc) * (1 - torch.eye(nc, device=device))
    return torch.cat((features, contacts[:, :, None]), dim=2)


def preprocess(msa_file, wmin=0.8, ns=21):
    a3m = torch.from_numpy(parse_a3m(msa_file)).long()
    nrow, ncol = a3m.shape
    msa1hot = F.one_hot(a3m, ns).float().to(d())
    w = reweight(msa1hot, wmin).float().to(d())

    f1d_seq = msa1hot[0, :, :20].float()
    f1d_pssm = msa2pssm(msa1hot, w)
    f1d = torch.cat((f1d_seq, f1d_pssm), dim=1)
    f1d = f1d[None, :, :].reshape((1, ncol, 42))

    f2d_dca = fast_dca(msa1hot, w) if nrow > 1 else torch.zeros((ncol, ncol, 442)).float()
    f2d_dca = f2d_dca[None, :, :, :]
    f2d = torch.cat((  # expect: GL116
        f1d[:, :, None, :].repeat(1, 1, ncol, 1),
        f1d[:, None, :, :].repeat(1, ncol, 1, 1),
        f2d_dca,
    ), dim=-1)
    f2d = f2d.view(1, ncol, ncol, 442 + 2 * 42)
    return f2d.permute((0, 3, 2, 1))


class DistanceNet(nn.Module):
    def __init__(self, in_dim=526, dim=16, n_bins=4):
        super().__init__()
        self.project = nn.Conv2d(in_dim, dim, kernel_size=1)
        self.block = nn.Conv2d(dim, dim, kernel_size=3, padding=1)
        self.to_dist = nn.Conv2d(dim, n_bins, kernel_size=1)

    def forward(self, x):
        x = F.elu(self.project(x))
        x = F.elu(self.block(x)) + x
        return self.to_dist(x)


def write_msas(tmp, rng, ncol=8):
    letters = "ARNDCQEGHILKMFPSTWYV"
    paths = []
    for k, nrow in enumerate([6, 4, 1, 5]):
        query = "".join(rng.choice(list(letters), ncol))
        rows = [query] + ["".join(c if rng.random() > 0.2 else rng.choice(list(letters)) for c in query) for _ in range(nrow - 1)]
        path = os.path.join(tmp, f"msa{k}.a3m")
        with open(path, "w") as fh:
            for i, row in enumerate(rows):
                fh.write(f">seq{i}\n{row}\n")
        paths.append(path)
    return paths


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = d()
    net = DistanceNet().to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    first_loss = last_loss = None
    with tempfile.TemporaryDirectory() as tmp:
        features = [preprocess(path) for path in write_msas(tmp, rng)]
    ncol = features[0].shape[-1]
    idx = torch.arange(ncol)
    target = (idx[:, None] - idx[None, :]).abs().clamp(max=3)[None].to(device)
    for epoch in range(15):
        for f2d in features:
            loss = F.cross_entropy(net(f2d), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if first_loss is None:
                first_loss = loss.item()
            last_loss = loss.item()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first_loss, "last_loss": last_loss, "device": torch.device(device).type}))


if __name__ == "__main__":
    main()
