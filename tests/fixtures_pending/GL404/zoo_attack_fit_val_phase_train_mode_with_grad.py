# source: https://github.com/as791/ZOO_Attack_PyTorch/issues/7
# ZOO_Attack_PyTorch (setup_mnist_model.py): `fit()` keeps the loaders in a dict
# `{'train': ..., 'val': ...}` and runs one loop over the phases per epoch. The 'val' phase calls the
# model exactly like the 'train' phase, only without the backward/step: the MNIST net's Dropout2d
# stays on (no `model.eval()`) and autograd records a graph for every validation batch (no
# `torch.no_grad()`). The issue asks for both; the fix (PR #10) switches the mode per phase and runs
# the 'val' forward under no_grad. (A smaller MNIST-shaped CNN on synthetic 1x28x28 images, fixed seed.)
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class MNIST(nn.Module):
    def __init__(self):
        super(MNIST, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 8, 3, 1)
        self.dropout1 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(8 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.dropout1(F.relu(self.fc1(x)))
        return self.fc2(x)


def fit(model, device, train_loader, val_loader, optimizer, criterion, epochs):
    data_loader = {"train": train_loader, "val": val_loader}
    print("Fitting the model...")
    train_loss, val_loss = [], []
    step_losses = []
    for epoch in range(epochs):
        loss_per_epoch, val_loss_per_epoch = 0, 0
        acc_per_epoch, val_acc_per_epoch, total, val_total = 0, 0, 0, 0
        for phase in ("train", "val"):
            for i, data in enumerate(data_loader[phase]):  # expect: GL404
                inputs, labels = data[0].to(device), data[1].to(device)
                outputs = model(inputs)  # expect: GL403
                preds = torch.max(outputs, 1)[1]
                loss = criterion(outputs, labels)
                if phase == "train":
                    acc_per_epoch += (labels == preds).sum().item()
                    total += labels.size(0)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    loss_per_epoch += loss.item()
                    step_losses.append(loss.item())
                else:
                    val_acc_per_epoch += (labels == preds).sum().item()
                    val_total += labels.size(0)
                    val_loss_per_epoch += loss.item()
        print("Epoch: {} Loss: {:0.6f} Acc: {:0.6f} Val_Loss: {:0.6f} Val_Acc: {:0.6f}".format(
            epoch + 1, loss_per_epoch / len(train_loader), acc_per_epoch / total,
            val_loss_per_epoch / len(val_loader), val_acc_per_epoch / val_total))
        train_loss.append(loss_per_epoch / len(train_loader))
        val_loss.append(val_loss_per_epoch / len(val_loader))
    return train_loss, val_loss, step_losses


if __name__ == "__main__":
    np.random.seed(42)
    torch.manual_seed(42)
    images = torch.randn(384, 1, 28, 28)
    labels = (images[:, 0, :14].mean(dim=(1, 2)) > 0).long() * 5 + (images[:, 0, :, :14].mean(dim=(1, 2)) > 0).long()
    dataset = torch.utils.data.TensorDataset(images, labels)
    train_set, val_set = torch.utils.data.random_split(dataset, [320, 64])
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=32, shuffle=True)

    use_cuda = True
    device = torch.device("cuda" if (use_cuda and torch.cuda.is_available()) else "cpu")
    model = MNIST().to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-6)
    criterion = nn.CrossEntropyLoss()
    train_loss, val_loss, step_losses = fit(model, device, train_loader, val_loader, optimizer, criterion, 5)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(step_losses[:5]) / 5, "last_loss": sum(step_losses[-5:]) / 5, "device": device.type}))
