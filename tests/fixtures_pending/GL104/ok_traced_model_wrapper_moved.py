# source: the `TracedModel` wrapper of WongKinYiu/yolov7 utils/torch_utils.py, third precision
# pass (benchmarks/PRECISION3.md, benchmarks/ENGINE_FP.md third pass #1)
# Hard negative: a wrapper module traces the model it is given with `torch.jit.trace`, keeps the
# ScriptModule in `self.model` and moves it with `self.model.to(device)` as a statement. A
# ScriptModule is an nn.Module: `.to()` moves it in place. The engine reads the trace of an
# argument of unknown kind as a tensor, so GL104 asks to assign the result.
import json

import torch
import torch.nn as nn


class TracedModel(nn.Module):
    def __init__(self, model, device, size=6):
        super().__init__()
        self.model = model
        self.model.to("cpu")
        self.model.eval()
        example = torch.rand(1, size)
        traced = torch.jit.trace(self.model, example, strict=False)
        self.model = traced
        self.model.to(device)

    def forward(self, x):
        return self.model(x)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
wrapped = TracedModel(net, device)
optimizer = torch.optim.SGD(wrapped.parameters(), lr=0.05)
X = torch.randn(128, 6, device=device)
Y = X.sum(dim=1, keepdim=True)
losses = []
for step in range(40):
    loss = nn.functional.mse_loss(wrapped(X), Y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
