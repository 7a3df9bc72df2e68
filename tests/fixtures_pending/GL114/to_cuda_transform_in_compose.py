# source: https://github.com/pytorch/pytorch/issues/13775
# fails-on-cuda: Cannot re-initialize CUDA in forked subprocess
# The reporter wants each input on the GPU before a large matmul, so a ToCuda() transform class
# (`tensor.cuda()` when CUDA is available) is appended to the dataset's Compose of transforms; the
# DataLoader has num_workers=1, so the transform runs in a forked worker and CUDA fails there.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class ToTensor:
    def __call__(self, sample):
        return torch.as_tensor(sample, dtype=torch.float32)


class ToCuda:
    def __init__(self):
        self.is_cuda = torch.cuda.is_available()

    def __call__(self, tensor):
        if self.is_cuda:
            tensor = tensor.cuda()  # expect: GL114
        return tensor


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class DigitsDataset(Dataset):
    def __init__(self, transform, n=256):
        g = torch.Generator().manual_seed(0)
        self.images = (torch.rand(n, 784, generator=g) - 0.5).tolist()
        self.labels = [int(sum(img[:392]) > sum(img[392:])) for img in self.images]
        self.transform = transform

    def __getitem__(self, index):
        return self.transform(self.images[index]), self.labels[index]

    def __len__(self):
        return len(self.images)


def main():
    torch.manual_seed(0)
    transform = Compose([ToTensor(), ToCuda()])
    dataset = DigitsDataset(transform)
    loader = DataLoader(dataset, batch_size=32, num_workers=1)

    model = torch.nn.Linear(784, 2)
    if torch.cuda.is_available():
        model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(5):
        for images, labels in loader:
            labels = labels.to(images.device)
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": next(model.parameters()).device.type}))


if __name__ == "__main__":
    main()
