# source: https://github.com/pytorch/pytorch/issues/61704
# fails-on-cuda: Expected all tensors to be on the same device
# The beginners' quickstart: train a classifier on the device with DataLoader batches moved in the
# loop, then, at the end, take one sample straight from the test dataset (`x, y = test_data[0][0],
# test_data[0][1]`) and run `pred = model(x)` under no_grad. The sample never went through a move,
# so the linear layer meets a CPU input ("Expected all tensors to be on the same device ... when
# checking argument mat1"). The commenter adds `x = x.to(device)`.
import json

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

classes = ["T-shirt/top", "Trouser", "Pullover", "Dress"]


class FashionLike(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, 1, 8, 8, generator=g)
        self.labels = self.images.view(n, -1)[:, :4].argmax(dim=1)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


def train(dataloader, model, loss_fn, optimizer, device, losses):
    model.train()
    for X, y in dataloader:
        X, y = X.to(device), y.to(device)
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())


torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
training_data = FashionLike(256, 0)
test_data = FashionLike(64, 1)
train_dataloader = DataLoader(training_data, batch_size=32)
model = NeuralNetwork().to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
losses = []
for t in range(20):
    train(train_dataloader, model, loss_fn, optimizer, device, losses)

model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    pred = model(x)  # expect: GL101
    predicted, actual = classes[pred[0].argmax(0)], classes[y]
print(f'Predicted: "{predicted}", Actual: "{actual}"')
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
