# source: https://github.com/lavi135246/pytorch-Learning-to-See-in-the-Dark/issues/10
# pytorch-Learning-to-See-in-the-Dark train_Sony.py: the U-Net ("SeeInDark") and every input/ground
# truth patch go to `device` (cuda when available); the per-image losses are kept in a NumPy array
# `g_loss = np.zeros((5000, 1))` and each step stores `g_loss[ind] = loss.data`, then prints
# `np.mean(g_loss[np.where(g_loss)])`. On the CPU this works; on a GPU the assignment converts a CUDA
# tensor to NumPy: "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the
# tensor to host memory first." (the thread's fix, later in the repository: `loss.cpu().data`).
# Here: a two-level U-Net on packed 4-channel synthetic "raw" patches, a few epochs.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

ps = 16  # patch size for training
save_freq = 100
learning_rate = 1e-3


class SeeInDark(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.conv3 = nn.Conv2d(32, 16, 3, padding=1)
        self.out = nn.Conv2d(16, 12, 1)

    def forward(self, x):
        c1 = F.leaky_relu(self.conv1(x), 0.2)
        c2 = F.leaky_relu(self.conv2(F.max_pool2d(c1, 2)), 0.2)
        u = torch.cat([self.up(c2), c1], 1)
        c3 = F.leaky_relu(self.conv3(u), 0.2)
        return F.pixel_shuffle(self.out(c3), 2)


def reduce_mean(out_im, gt_im):
    return torch.abs(out_im - gt_im).mean()


rng = np.random.RandomState(0)
torch.manual_seed(0)
train_ids = list(range(12))
gt_images = [rng.rand(1, 2 * ps, 2 * ps, 3).astype(np.float32) for _ in train_ids]
input_images = [np.ascontiguousarray(g.reshape(1, ps, 2, ps, 2, 3).mean(axis=(2, 4, 5))[..., None].repeat(4, -1) * 0.5)
                for g in gt_images]

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SeeInDark().to(device)
opt = optim.Adam(model.parameters(), lr=learning_rate)

g_loss = np.zeros((5000, 1))
losses = []
for epoch in range(0, 15):
    cnt = 0
    for ind in rng.permutation(len(train_ids)):
        input_patch = input_images[ind]
        gt_patch = gt_images[ind]
        if rng.randint(2, size=1)[0] == 1:  # random flip
            input_patch = np.flip(input_patch, axis=1)
            gt_patch = np.flip(gt_patch, axis=1)
        input_patch = np.minimum(input_patch, 1.0)
        gt_patch = np.maximum(gt_patch, 0.0)

        in_img = torch.from_numpy(input_patch.copy()).permute(0, 3, 1, 2).to(device)
        gt_img = torch.from_numpy(gt_patch.copy()).permute(0, 3, 1, 2).to(device)

        model.zero_grad()
        out_img = model(in_img)
        loss = reduce_mean(out_img, gt_img)
        loss.backward()
        opt.step()
        g_loss[ind] = loss.data  # expect: GL109
        cnt += 1
    mean_loss = np.mean(g_loss[np.where(g_loss)])
    losses.append(float(mean_loss))
    print("%d %d Loss=%.3f" % (epoch, cnt, mean_loss))

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
