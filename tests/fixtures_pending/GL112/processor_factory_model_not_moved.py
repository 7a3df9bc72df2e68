# source: https://github.com/openpifpaf/openpifpaf/issues/35
# predict-style script: a factory function builds the network from args; a Processor class keeps
# self.device and moves the image batch there; nobody moves the network ("I was not updating
# model to cuda").
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json

import torch
import torch.nn as nn


def factory_from_args(width=8):
    return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 2))


class Processor:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    def step(self, images, labels):
        images, labels = images.to(self.device), labels.to(self.device)
        fields = self.model(images)  # expect: GL112
        loss = nn.functional.cross_entropy(fields, labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
device = torch.device(type="cuda") if torch.cuda.is_available() else torch.device("cpu")
processor = Processor(factory_from_args(), device)
losses = []
for i in range(50):
    labels = torch.randint(0, 2, (16,))
    images = torch.randn(16, 3, 8, 8) + labels[:, None, None, None].float()
    losses.append(processor.step(images, labels))
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
