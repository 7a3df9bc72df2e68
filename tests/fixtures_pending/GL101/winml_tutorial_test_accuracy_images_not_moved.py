# source: https://github.com/MicrosoftDocs/windows-ai-docs/issues/94
# Windows ML tutorial "Train your image classification model with PyTorch": `train()` picks the
# device, moves the module-level `model` there (`model.to(device)`) and moves every training batch,
# then calls the file's helper `testAccuracy()` after each epoch. That helper iterates the test
# loader and calls `model(images)` with the batch as the loader gives it: "Input type
# (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same", raised at the
# accuracy test although "the forward function seems happy during the training process".
# (CIFAR-10 is stood in for by random 3x32x32 images whose class decides a colour shift.)
# fails-on-cuda: should be the same
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
batch_size = 10
number_of_labels = 10

images_all = torch.randn(200, 3, 32, 32)
labels_all = torch.randint(0, number_of_labels, (200,))
images_all += labels_all.view(-1, 1, 1, 1).float() * 0.3
train_set = TensorDataset(images_all[:160], labels_all[:160])
test_set = TensorDataset(images_all[160:], labels_all[160:])
train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=0)
test_loader = DataLoader(test_set, batch_size=batch_size, shuffle=False, num_workers=0)


class Network(nn.Module):
    def __init__(self):
        super(Network, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=12, kernel_size=5, stride=1, padding=1)
        self.bn1 = nn.BatchNorm2d(12)
        self.conv2 = nn.Conv2d(in_channels=12, out_channels=12, kernel_size=5, stride=1, padding=1)
        self.bn2 = nn.BatchNorm2d(12)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv4 = nn.Conv2d(in_channels=12, out_channels=24, kernel_size=5, stride=1, padding=1)
        self.bn4 = nn.BatchNorm2d(24)
        self.fc1 = nn.Linear(24 * 12 * 12, number_of_labels)

    def forward(self, input):
        output = F.relu(self.bn1(self.conv1(input)))
        output = F.relu(self.bn2(self.conv2(output)))
        output = self.pool(output)
        output = F.relu(self.bn4(self.conv4(output)))
        output = output.view(-1, 24 * 12 * 12)
        return self.fc1(output)


model = Network()
loss_fn = nn.CrossEntropyLoss()
optimizer = Adam(model.parameters(), lr=0.001, weight_decay=0.0001)
save_dir = tempfile.mkdtemp()


def saveModel():
    path = os.path.join(save_dir, "myFirstModel.pth")
    torch.save(model.state_dict(), path)


def testAccuracy():
    model.eval()
    accuracy = 0.0
    total = 0.0
    with torch.no_grad():
        for data in test_loader:
            images, labels = data
            outputs = model(images)  # expect: GL101
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            accuracy += (predicted == labels).sum().item()
    accuracy = 100 * accuracy / total
    return accuracy


def train(num_epochs):
    best_accuracy = 0.0
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    print("The model will be running on", device, "device")
    model.to(device)
    losses = []
    for epoch in range(num_epochs):
        model.train()
        running_loss = 0.0
        for i, (images, labels) in enumerate(train_loader, 0):
            images = Variable(images.to(device))
            labels = Variable(labels.to(device))
            optimizer.zero_grad()
            outputs = model(images)
            loss = loss_fn(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        losses.append(running_loss / len(train_loader))
        accuracy = testAccuracy()
        print("For epoch", epoch + 1, "the test accuracy over the whole test set is %d %%" % (accuracy))
        if accuracy > best_accuracy:
            saveModel()
            best_accuracy = accuracy
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    train(4)
