# source: https://github.com/unit8co/darts/issues/3052
# darts' TFT module keeps `self.attention_mask` (and `self.relative_index`) as plain attributes,
# None in __init__ and built in forward() on the first call, on the device of that call's input.
# They are not buffers, so moving the model afterwards does not move them: the report trains on a
# GPU and predicts after the model went back to the CPU. Here the same cache is built by a
# dry-run forward on the CPU (a shape check) before the model is moved to the device, so every
# training step on the GPU masks device scores with the host mask.
# fails-on-cuda: expected self and mask to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class TFTModule(nn.Module):
    def __init__(self, n_features=3, hidden=16, output_chunk_length=2):
        super().__init__()
        self.output_chunk_length = output_chunk_length
        self.input_proj = nn.Linear(n_features, hidden)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 1)
        self.attention_mask = None

    @staticmethod
    def get_attention_mask_future(time_steps, device):
        return torch.triu(torch.ones(time_steps, time_steps, dtype=torch.bool, device=device), diagonal=1)

    def forward(self, x):
        h = torch.relu(self.input_proj(x))
        if self.attention_mask is None:
            self.attention_mask = self.get_attention_mask_future(x.shape[1], x.device)
        scores = self.query(h) @ self.key(h).transpose(1, 2) / h.shape[-1] ** 0.5
        scores = scores.masked_fill(self.attention_mask, float("-inf"))  # expect: GL116
        attended = torch.softmax(scores, dim=-1) @ self.value(h)
        return self.head(attended[:, -self.output_chunk_length:]).squeeze(-1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = torch.linspace(0, 12, 200)
series = torch.stack([torch.sin(t), torch.cos(t), torch.sin(0.5 * t)], dim=1)
windows = series.unfold(0, 8, 1).permute(0, 2, 1)
x, y = windows[:-2, :6], windows[2:, 4:6, 0]

model = TFTModule()
with torch.no_grad():
    print("output shape", tuple(model(x[:2]).shape))
model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for epoch in range(4):
    for i in range(0, len(x), 32):
        xb, yb = x[i:i + 32].to(device), y[i:i + 32].to(device)
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
