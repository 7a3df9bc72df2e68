# source: https://github.com/nshaud/DeepHyperX/issues/51
# models.py: train(net, optimizer, criterion, data_loader, epoch, scheduler, device, ...,
# val_loader=...) puts the net in train mode at the top of each epoch, steps over the patches,
# then calls val(net, val_loader, device=device, supervision=...) and feeds -val_acc to a
# ReduceLROnPlateau scheduler. val() runs the net under torch.no_grad() but never calls
# net.eval(), so the validation accuracy is measured with dropout on and batch norm updating its
# running statistics from validation batches (the report: "why during validation not using
# model.eval()?").
import json

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset


class HyperX(Dataset):
    def __init__(self, data, gt, ignored_labels=(0,)):
        self.data, self.gt = data, gt
        self.ignored_labels = list(ignored_labels)

    def __len__(self):
        return len(self.gt)

    def __getitem__(self, i):
        return self.data[i], self.gt[i]


class Baseline(nn.Module):
    def __init__(self, input_channels=10, n_classes=4, dropout=True):
        super().__init__()
        self.use_dropout = dropout
        self.fc1 = nn.Linear(input_channels, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, n_classes)
        self.dropout = nn.Dropout(p=0.5)

    def forward(self, x):
        x = torch.relu(self.bn(self.fc1(x)))
        if self.use_dropout:
            x = self.dropout(x)
        return self.fc2(x)


def train(net, optimizer, criterion, data_loader, epoch, scheduler=None, device=torch.device("cpu"), val_loader=None, supervision="full", history=None):
    net.to(device)
    for e in range(1, epoch + 1):
        net.train()
        avg_loss = 0.0
        for batch_idx, (data, target) in enumerate(data_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = net(data)
            loss = criterion(output, target)
            loss.backward()
            optimizer.step()
            avg_loss += loss.item()
        avg_loss /= len(data_loader)
        history.append(avg_loss)
        if val_loader is not None:
            val_acc = val(net, val_loader, device=device, supervision=supervision)
            metric = -val_acc
        else:
            metric = avg_loss
        if isinstance(scheduler, optim.lr_scheduler.ReduceLROnPlateau):
            scheduler.step(metric)
        elif scheduler is not None:
            scheduler.step()


def val(net, data_loader, device="cpu", supervision="full"):
    accuracy, total = 0.0, 0.0
    ignored_labels = data_loader.dataset.ignored_labels
    for batch_idx, (data, target) in enumerate(data_loader):  # expect: GL404
        with torch.no_grad():
            data, target = data.to(device), target.to(device)
            if supervision == "full":
                output = net(data)
            elif supervision == "semi":
                outs = net(data)
                output, rec = outs
            _, output = torch.max(output, dim=1)
            for out, pred in zip(output.view(-1), target.view(-1)):
                if out.item() in ignored_labels:
                    continue
                accuracy += out.item() == pred.item()
                total += 1
    return accuracy / max(total, 1.0)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(256, 10)
    gt = (x[:, :4].argmax(dim=1) + 1) % 4
    train_loader = DataLoader(HyperX(x[:192], gt[:192]), batch_size=16, shuffle=True)
    val_loader = DataLoader(HyperX(x[192:], gt[192:]), batch_size=16)
    net = Baseline()
    optimizer = optim.Adam(net.parameters(), lr=1e-2)
    criterion = nn.CrossEntropyLoss()
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=5)
    history = []
    train(net, optimizer, criterion, train_loader, 8, scheduler=scheduler, device=device, val_loader=val_loader, history=history)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
