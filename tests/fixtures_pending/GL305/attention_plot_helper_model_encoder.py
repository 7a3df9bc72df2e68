# source: https://github.com/epfml/attention-cnn/issues/11
# fails-on-cuda: object has no attribute 'encoder'
# The training script wraps the BERT-style image model in nn.DataParallel; the plotting helper it
# calls after each epoch reads `model.encoder.layer[...]` to draw attention positions, which fails
# with "'DataParallel' object has no attribute 'encoder'" (the reporter replaced every
# model.encoder with model.module.encoder in plotting.py).
import json

import torch
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attention = nn.Linear(dim, dim)
        self.attention_spreads = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return x + torch.tanh(self.attention(x))


class Encoder(nn.Module):
    def __init__(self, dim, n_layers):
        super().__init__()
        self.layer = nn.ModuleList([Layer(dim) for _ in range(n_layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class BertImage(nn.Module):
    def __init__(self, dim=16, n_layers=2, n_classes=4):
        super().__init__()
        self.features_upscale = nn.Linear(3, dim)
        self.encoder = Encoder(dim, n_layers)
        self.classifier = nn.Linear(dim, n_classes)

    def forward(self, pixels):
        h = self.encoder(self.features_upscale(pixels))
        return self.classifier(h.mean(dim=1))


def plot_attention_positions_all_layers(model, width):
    spreads = []
    for layer_idx in range(len(model.encoder.layer)):  # expect: GL305
        spreads.append(model.encoder.layer[layer_idx].attention_spreads.detach().cpu() * width)  # expect: GL305
    return torch.stack(spreads)


def train(model, device, epochs):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    pixels = torch.randn(96, 9, 3)
    labels = (pixels[:, :, 0].mean(dim=1) > 0).long() + 2 * (pixels[:, :, 1].mean(dim=1) > 0).long()
    history = []
    for epoch in range(epochs):
        for i in range(0, 96, 16):
            x, y = pixels[i : i + 16].to(device), labels[i : i + 16].to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        plot_attention_positions_all_layers(model, width=3)
        history.append(loss.item())
    return history


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = BertImage().to(device)
    if device.type == "cuda":
        model = nn.DataParallel(model)
    history = train(model, device, epochs=10)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
