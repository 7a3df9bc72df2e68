# source: https://github.com/patrickloeber/pytorchTutorial/pull/13
# fixture: static
# The tutorial moves the model to the GPU, takes one example batch with next(iter(test_loader))
# and hands it, still on the CPU, to writer.add_graph(model, ...), which runs the model on it
# (static: the tutorial needs tensorboard, which the test environment does not install).
import sys

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter("runs/mnist1")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

input_size = 784
hidden_size = 500
num_classes = 10
batch_size = 100

test_dataset = torchvision.datasets.MNIST(root="./data", train=False, transform=transforms.ToTensor())
test_loader = torch.utils.data.DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=False)

examples = iter(test_loader)
example_data, example_targets = next(examples)


class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super().__init__()
        self.l1 = nn.Linear(input_size, hidden_size)
        self.relu = nn.ReLU()
        self.l2 = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        return self.l2(self.relu(self.l1(x)))


model = NeuralNet(input_size, hidden_size, num_classes).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

writer.add_graph(model, example_data.reshape(-1, 28 * 28))  # expect: GL101
writer.close()
sys.exit()
