# source: https://github.com/jindongwang/transferlearning/blob/f951df1188858f6eb561b89e37deb93295ff1c82/code/ASR/CMatch/ctc_aligner.py
# Pending hard negative (P46-1): the label lengths are made by a helper `np2tensor(array, device=None)`
# -> `torch.from_numpy(array).to(device)`, so they stay on the CPU, and the `torch.arange(...)`
# compared with them is on the CPU too: nothing mixes devices. GL116 fires on the `arange` lines.
import json

import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def np2tensor(array, device=None):
    return torch.from_numpy(array).to(device)


def label_mask(ys):
    ylens = np2tensor(np.fromiter([len(y) for y in ys], dtype=np.int32))
    path_lens = 2 * ylens.long() + 1
    max_path_len = int(path_lens.max())
    outside = torch.arange(max_path_len, dtype=torch.int64) >= path_lens.unsqueeze(1)
    rotate = (torch.arange(max_path_len) + path_lens[:, None]) % max_path_len
    return outside, rotate


def main():
    torch.manual_seed(0)
    model = nn.Linear(8, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(20):
        ys = [list(range(1 + step % 3)), list(range(2))]
        outside, rotate = label_mask(ys)
        x = torch.randn(outside.size(0), 8, device=device)
        weight = (~outside).float().sum(1).to(device) + rotate.float().mean(1).to(device)
        loss = (model(x).pow(2).mean(1) * weight).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
