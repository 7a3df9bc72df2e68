# source: https://github.com/atong01/conditional-flow-matching/issues/102
# examples/images/cifar10: train_cifar10.py's step loop calls utils_cifar.generate_samples(model,
# savedir, step) every `save_step` steps; generate_samples() puts the model in eval mode and
# integrates the learned vector field from `torch.randn(64, 3, 32, 32).to(device)`: the noise is
# drawn on the CPU and copied to the GPU at every call ("create the tensor directly on the
# specified device via torch.randn(..., device=device)"; the report also cites the MNIST notebook).
# 2-D points replace CIFAR-10 and an Euler loop replaces torchdyn's NeuralODE.
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
n_epochs = 6
batch_size = 32
sigma = 0.0
save_step = 20

centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
labels = torch.randint(0, 3, (384,))
points = centers[labels] + 0.1 * torch.randn(384, 2)
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(points, labels), batch_size=batch_size, shuffle=True, drop_last=True)


class UNetModel(nn.Module):
    def __init__(self, dim=2, num_classes=3, hidden=64):
        super().__init__()
        self.label_emb = nn.Embedding(num_classes, hidden)
        self.inp = nn.Linear(dim + 1, hidden)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, t, x, y):
        h = self.inp(torch.cat([x, t[:, None]], dim=-1)) + self.label_emb(y)
        return self.out(h)


def sample_location_and_conditional_flow(x0, x1):
    t = torch.rand(x0.shape[0]).type_as(x0)
    xt = t[:, None] * x1 + (1 - t[:, None]) * x0 + sigma * torch.randn_like(x0)
    ut = x1 - x0
    return t, xt, ut


def generate_samples(model, savedir, step, net_="normal"):
    model.eval()
    generated_class_list = torch.arange(3, device=device).repeat(22)[:64]
    with torch.no_grad():
        x = torch.randn(64, 2).to(device)  # expect: GL501
        steps = 20
        for k in range(steps):
            t = torch.full((64,), k / steps, device=device)
            x = x + model(t, x, generated_class_list) / steps
    model.train()
    return x.std(dim=0).tolist()


model = UNetModel().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
history = []
for epoch in range(n_epochs):
    for i, data in enumerate(train_loader):
        optimizer.zero_grad()
        x1 = data[0].to(device)
        y = data[1].to(device)
        x0 = torch.randn_like(x1)
        t, xt, ut = sample_location_and_conditional_flow(x0, x1)
        vt = model(t, xt, y)
        loss = torch.mean((vt - ut) ** 2)
        loss.backward()
        optimizer.step()
        step = epoch * len(train_loader) + i
        if step % save_step == 0:
            print("generated spread:", generate_samples(model, "results", step))
    history.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": torch.device(device).type}))
