# source: https://github.com/runa91/barc_release/issues/9
# BARC's image-to-3D training script: a dataset whose samples are prepared on the CPU (crops,
# augmentation), a batch sampler that puts two dogs of the same breed next to each other, RMSprop,
# and `do_training_epoch(train_loader, model, loss_module, device, ...)` moving each batch to the GPU.
# The reporter ran it with the data-loading workers set to 0: GPU utilisation swung between 0% and
# 90%, "most of time is 0% waiting for data". The maintainer: data preparation is done on the CPU and
# takes a while, use a big number of workers. (Here the workers option defaults to 0, as in the
# reporter's run; the repository's default is 4.)
import argparse
import json
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Sampler


class StanExt(Dataset):
    def __init__(self, n=96, n_breeds=6):
        g = torch.Generator().manual_seed(0)
        self.breeds = torch.arange(n) % n_breeds
        self.images = torch.randn(n, 3, 16, 16, generator=g) + self.breeds[:, None, None, None] * 0.3
        self.keypoints = self.images.mean(dim=(1,)).flatten(1)[:, :8]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i]
        if random.random() < 0.5:  # augmentation on the CPU
            img = img.flip(-1)
        return {"img": img, "breed": self.breeds[i], "keyp": self.keypoints[i]}

    def get_data_sampler_info(self):
        return {"breeds": self.breeds.tolist()}


class CustomPairBatchSampler(Sampler):
    """Batches of pairs: two dogs of the same breed right after each other."""

    def __init__(self, data_sampler_info, batch_size):
        self.by_breed = {}
        for i, b in enumerate(data_sampler_info["breeds"]):
            self.by_breed.setdefault(b, []).append(i)
        self.batch_size = batch_size

    def __iter__(self):
        pairs = []
        for idx in self.by_breed.values():
            idx = random.sample(idx, len(idx))
            pairs += [idx[i : i + 2] for i in range(0, len(idx) - 1, 2)]
        random.shuffle(pairs)
        per_batch = self.batch_size // 2
        for i in range(0, len(pairs), per_batch):
            yield [j for pair in pairs[i : i + per_batch] for j in pair]

    def __len__(self):
        return (sum(len(v) // 2 for v in self.by_breed.values()) * 2 + self.batch_size - 1) // self.batch_size


class ModelImageTo3d(nn.Module):
    def __init__(self, n_breeds=6):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.keyp_head = nn.Linear(32, 8)
        self.breed_head = nn.Linear(32, n_breeds)

    def forward(self, img):
        feat = self.backbone(img)
        return self.keyp_head(feat), self.breed_head(feat)


def do_training_epoch(train_loader, model, loss_module, device, optimizer):
    model.train()
    losses = []
    with torch.enable_grad():
        for inputs in train_loader:
            img = inputs["img"].to(device)
            keyp = inputs["keyp"].to(device)
            breed = inputs["breed"].to(device)
            pred_keyp, pred_breed = model(img)
            loss = loss_module(pred_keyp, keyp) + nn.functional.cross_entropy(pred_breed, breed)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    return torch.stack(losses).mean()


def main(args):
    if torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
        torch.backends.cudnn.benchmark = True
    else:
        device = torch.device("cpu")
    torch.set_grad_enabled(False)

    model = ModelImageTo3d().to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9)
    loss_module = nn.MSELoss().to(device)

    train_dataset = StanExt()
    train_custom_batch_sampler = CustomPairBatchSampler(train_dataset.get_data_sampler_info(), batch_size=12)
    train_loader = DataLoader(  # expect: GL502
        train_dataset,
        batch_sampler=train_custom_batch_sampler,
        num_workers=args.workers, pin_memory=True)

    losses = []
    for epoch in range(6):
        losses.append(do_training_epoch(train_loader, model, loss_module, device, optimizer).item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    torch.manual_seed(52)
    random.seed(643)
    parser = argparse.ArgumentParser(description="Train a image-to-3d model.")
    parser.add_argument("-j", "--workers", default=0, type=int, metavar="N", help="number of data loading workers")
    main(parser.parse_args())
