# source: https://github.com/Linardos/SalEMA/issues/7
# The model's learnable EMA coefficient is made with nn.Parameter(...).to(device) in __init__:
# on a GPU the result is a plain non-leaf copy, so passing it to the optimizer as its own
# param group raises; on the CPU `.to` returns the Parameter itself and training works.
# fails-on-cuda: can't optimize a non-leaf Tensor
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SalEMA(nn.Module):
    def __init__(self, dim=8, alpha=0.25):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.decoder = nn.Linear(dim, 1)
        self.alpha = nn.Parameter(torch.tensor([alpha])).to(device)  # expect: GL117

    def forward(self, frames):
        state = torch.zeros(frames.size(0), frames.size(2), device=frames.device)
        for t in range(frames.size(1)):
            x = torch.relu(self.encoder(frames[:, t]))
            state = torch.sigmoid(self.alpha) * x + (1 - torch.sigmoid(self.alpha)) * state
        return self.decoder(state)


torch.manual_seed(0)
model = SalEMA().to(device)
optimizer = torch.optim.Adam([{"params": model.encoder.parameters()}, {"params": model.decoder.parameters()}, {"params": model.alpha, "lr": 0.1}], lr=0.01)
losses = []
for step in range(50):
    frames = torch.randn(16, 5, 8, device=device)
    target = frames[:, -1, :2].sum(dim=1, keepdim=True)
    loss = nn.functional.mse_loss(model(frames), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
