# source: https://github.com/AidenDurrant/MoCo-Pytorch/blob/373b5fafdbf5/src/train.py
# MoCo-Pytorch's linear evaluation (`finetune`): main.py freezes every parameter of the pretrained
# encoder but the last `fc` layer (`requires_grad = False`), then `finetune` puts the whole encoder
# in eval mode at the top of every epoch ("Freeze the encoder, train classification head"), so the
# backbone's batch-norm statistics stay those of pretraining, picks the loader (a progress bar on
# the printing rank, the plain loader otherwise) and trains the head; after each epoch
# `evaluate(...)` scores the encoder on the validation set (in eval mode, again). The encoder is
# never put back in training mode in this loop, on purpose: the standard linear-probe protocol.
# Hard negative: GL404 must be silent at both `eval()` calls (P42-1).
# (ResNet replaced by a tiny conv net with batch norm; synthetic images; the `print_progress`
# branch keeps the real shape of an `if`/`else` between the `eval()` and the training loop.)
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Args:
    finetune_epochs = 4
    print_progress = False


class Encoder(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
        )
        self.fc = nn.Linear(8, n_classes)

    def forward(self, x):
        return self.fc(self.features(x))


def make_loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    offsets = torch.tensor([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0], [-2.0, -2.0, -2.0]])
    x = torch.randn(n, 3, 8, 8, generator=g) + offsets[y][:, :, None, None]
    data = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(data, batch_size=16, shuffle=True, generator=g)


def evaluate(encoder, dataloaders, mode, args):
    criterion = nn.CrossEntropyLoss().to(device)
    encoder.eval()
    run_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for inputs, target in dataloaders[mode]:
            inputs = inputs.to(device)
            target = target.to(device)
            output = encoder(inputs)
            run_loss += criterion(output, target).item()
            correct += (output.argmax(1) == target).sum().item()
            seen += target.size(0)
    return run_loss / len(dataloaders[mode]), correct / seen


def finetune(encoder, dataloaders, args):
    optimiser = torch.optim.SGD([p for p in encoder.parameters() if p.requires_grad], lr=0.5, momentum=0.9)
    criterion = nn.CrossEntropyLoss().to(device)
    losses = []
    for epoch in range(args.finetune_epochs):
        # Freeze the encoder, train the classification head
        encoder.eval()

        if args.print_progress:
            print("Epoch {}/{}".format(epoch + 1, args.finetune_epochs))
            train_dataloader = list(dataloaders["train"])
        else:
            train_dataloader = dataloaders["train"]

        for inputs, target in train_dataloader:
            inputs = inputs.to(device)
            target = target.to(device)
            optimiser.zero_grad()
            output = encoder(inputs)
            loss = criterion(output, target)
            loss.backward()
            optimiser.step()
            losses.append(loss.item())

        valid_loss, valid_acc = evaluate(encoder, dataloaders, "valid", args)
        print("epoch {} valid loss {:.3f} acc {:.3f}".format(epoch + 1, valid_loss, valid_acc))
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    base_encoder = Encoder().to(device)
    for name, param in base_encoder.named_parameters():
        if name not in ["fc.weight", "fc.bias"]:
            param.requires_grad = False
    dataloaders = {"train": make_loader(128, 1), "valid": make_loader(64, 2)}
    losses = finetune(base_encoder, dataloaders, Args())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
