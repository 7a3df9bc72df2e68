# source: https://github.com/DashAISoftware/dashAI/pull/679
# DashAI's image classifiers: the model class keeps `self.device` (CUDA when available) and the
# network in `self.model`; train() moves the network to `self.device` and trains it. A trained
# model is saved and later loaded "in a fresh process": the `load` classmethod rebuilds the
# network on the CPU (`torch.load(..., map_location="cpu")`) and returns a new instance whose
# predict() moves only the input images to `self.device`: "Input type (torch.cuda.FloatTensor) and
# weight type (torch.FloatTensor) should be the same". The PR adds `self.model.to(self.device)`
# before the eval loop of predict().
# (A small CNN on synthetic 16x16 images; the checkpoint goes to a temporary directory.)
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class CNN(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class CNNImageClassifier:
    def __init__(self, num_classes=3, epochs=8, batch_size=32, lr=0.05):
        self.num_classes = num_classes
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = None

    def train(self, x_train, y_train):
        self.model = CNN(self.num_classes).to(self.device)
        optimizer = torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        loader = DataLoader(TensorDataset(x_train, y_train), batch_size=self.batch_size, shuffle=True)
        losses = []
        self.model.train()
        for epoch in range(self.epochs):
            for images, labels in loader:
                images, labels = images.to(self.device), labels.to(self.device)
                loss = criterion(self.model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        return losses

    def predict(self, x_pred):
        loader = DataLoader(TensorDataset(x_pred), batch_size=self.batch_size)
        self.model.eval()
        probs = []
        with torch.no_grad():
            for (images,) in loader:
                images = images.to(self.device)
                outputs = self.model(images)  # expect: GL112
                probs.append(torch.softmax(outputs, dim=1).cpu())
        return torch.cat(probs)

    def save(self, filename):
        torch.save({"num_classes": self.num_classes, "state_dict": self.model.state_dict()}, filename)

    @classmethod
    def load(cls, filename):
        checkpoint = torch.load(filename, map_location="cpu", weights_only=True)
        instance = cls(num_classes=checkpoint["num_classes"])
        instance.model = CNN(checkpoint["num_classes"])
        instance.model.load_state_dict(checkpoint["state_dict"])
        return instance


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 3, (192,), generator=g)
    colors = torch.rand(3, 3, 1, 1, generator=g)
    images = colors[labels].expand(-1, 3, 16, 16) + 0.05 * torch.randn(192, 3, 16, 16, generator=g)
    classifier = CNNImageClassifier()
    losses = classifier.train(images[:160], labels[:160])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cnn.pt")
        classifier.save(path)
        loaded = CNNImageClassifier.load(path)
        probs = loaded.predict(images[160:])
    accuracy = (probs.argmax(1) == labels[160:]).float().mean().item()
    print("accuracy of the loaded model:", round(accuracy, 3))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": classifier.device.type}))


if __name__ == "__main__":
    main()
