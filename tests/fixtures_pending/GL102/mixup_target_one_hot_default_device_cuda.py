# source: https://github.com/huggingface/pytorch-image-models/pull/1222
# timm-style Mixup: the helpers `one_hot()` and `mixup_target()` build the soft targets with a
# default argument `device='cuda'`, and `Mixup.__call__` never passes the batch's device, so a
# run with `--device cpu` (or on a CPU-only machine, where the flag defaults to the CPU) fails
# while the model and the batches follow the flag.
# On a GPU machine the flag defaults to CUDA and the script trains; the CPU run is the bug.
import argparse
import json

import numpy as np
import torch
import torch.nn as nn


def one_hot(x, num_classes, on_value=1.0, off_value=0.0, device="cuda"):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value, device=device).scatter_(1, x, on_value)  # expect: GL102


def mixup_target(target, num_classes, lam=1.0, smoothing=0.0, device="cuda"):
    off_value = smoothing / num_classes
    on_value = 1.0 - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value, device=device)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value, device=device)
    return y1 * lam + y2 * (1.0 - lam)


class Mixup:
    def __init__(self, mixup_alpha=0.1, label_smoothing=0.1, num_classes=4, seed=0):
        self.mixup_alpha = mixup_alpha
        self.label_smoothing = label_smoothing
        self.num_classes = num_classes
        self.rng = np.random.default_rng(seed)

    def __call__(self, x, target):
        lam = float(self.rng.beta(self.mixup_alpha, self.mixup_alpha))
        x.mul_(lam).add_(x.flip(0).mul_(1.0 - lam))
        target = mixup_target(target, self.num_classes, lam, self.label_smoothing)
        return x, target


class SoftTargetCrossEntropy(nn.Module):
    def forward(self, x, target):
        return torch.sum(-target * torch.log_softmax(x, dim=-1), dim=-1).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(0)
    images = torch.randn(512, 16)
    labels = torch.argmax(images[:, :4], dim=1)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    mixup_fn = Mixup(num_classes=4)
    train_loss_fn = SoftTargetCrossEntropy()

    losses = []
    for step in range(args.steps):
        idx = torch.randint(0, 512, (64,))
        input, target = images[idx].to(device), labels[idx].to(device)
        input, target = mixup_fn(input, target)
        output = model(input)
        loss = train_loss_fn(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10  # mixup makes single steps noisy
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))


if __name__ == "__main__":
    main()
