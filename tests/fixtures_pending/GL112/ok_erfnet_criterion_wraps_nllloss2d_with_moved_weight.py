# source: https://github.com/Eromera/erfnet_pytorch/blob/d4a46faf9e46/train/main.py (PRECISION31 A4)
# Hard negative (GL112, pending on the engine): the segmentation trainer's criterion is a small
# module of the file, `CrossEntropyLoss2d(weight)`, whose only state is a `torch.nn.NLLLoss2d(weight)`
# (a deprecated subclass of NLLLoss) holding the class weights. The weights are moved with the
# model under `if args.cuda:` before the criterion is built, so the criterion needs no move: it
# holds nothing else. `model.is_stateless_module` knows a torch loss by a name ending in `Loss`;
# `NLLLoss2d` ends in `Loss2d`, so the wrapper counts as a module with state left on the host.
# With `torch.nn.NLLLoss(weight)` in its place the script is silent today.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
NUM_CLASSES = 3


class CrossEntropyLoss2d(torch.nn.Module):
    def __init__(self, weight=None):
        super().__init__()
        self.loss = torch.nn.NLLLoss2d(weight)

    def forward(self, outputs, targets):
        return self.loss(torch.nn.functional.log_softmax(outputs, dim=1), targets)


class Net(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, num_classes, 1)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x)))


def train(args, model):
    weight = torch.ones(NUM_CLASSES)
    weight[0] = 2.0
    images = torch.randn(8, 3, 8, 8)
    labels = (images[:, :1] > 0).long() + (images[:, 1:2] > 0.5).long()
    if args.cuda:
        weight = weight.cuda()
    criterion = CrossEntropyLoss2d(weight)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for step in range(25):
        if args.cuda:
            inputs = images.cuda()
            targets = labels.cuda()
        else:
            inputs, targets = images, labels
        outputs = model(inputs)
        optimizer.zero_grad()
        loss = criterion(outputs, targets[:, 0])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true", default=torch.cuda.is_available())
args = parser.parse_args([])
model = Net(NUM_CLASSES)
if args.cuda:
    model = model.cuda()
losses = train(args, model)
device = next(model.parameters()).device.type
print(f'GPULINT-TRAIN {{"first_loss": {losses[0]:.4f}, "last_loss": {losses[-1]:.4f}, "device": "{device}"}}')
