# source: https://github.com/pytorch/pytorch/issues/20260
# fails-on-cuda: Cannot re-initialize CUDA in forked subprocess
# The reporter does heavy preprocessing on the GPU inside a transform function of their own:
# the function sends each sample to the GPU (`tensor.cuda()` in the report; here the
# file's CUDA-when-available `device`), filters it there and hands it back to the host;
# the Dataset calls it from `__getitem__`. The model was sent to the GPU before, and the
# DataLoader has `num_workers > 0`, so each forked worker touches CUDA and fails with "CUDA error:
# initialization error" (today: "Cannot re-initialize CUDA in forked subprocess"). (Images
# replaced by synthetic 1x16x16 maps; the heavy filter by a 3x3 box blur done with conv2d.)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def gpu_denoise(tensor):
    tensor = tensor.to(device)  # expect: GL114
    kernel = torch.full((1, 1, 3, 3), 1.0 / 9, device=tensor.device)
    return F.conv2d(tensor.unsqueeze(0), kernel, padding=1).squeeze(0).cpu()


class NoisyImages(Dataset):
    def __init__(self, n, transform=None):
        g = torch.Generator().manual_seed(0)
        self.labels = torch.randint(0, 2, (n,), generator=g)
        base = self.labels.float()[:, None, None, None] * torch.ones(n, 1, 16, 16)
        self.images = base + 0.8 * torch.randn(n, 1, 16, 16, generator=g)
        self.transform = transform

    def __getitem__(self, index):
        img = self.images[index]
        if self.transform is not None:
            img = self.transform(img)
        return img, self.labels[index]

    def __len__(self):
        return len(self.labels)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(NoisyImages(64, transform=gpu_denoise), batch_size=16, shuffle=True, num_workers=2)
    losses = []
    for epoch in range(4):
        for img, label in loader:
            img, label = img.to(device), label.to(device)
            loss = F.cross_entropy(model(img), label)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
