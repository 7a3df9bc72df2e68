"""GL403 through an inference method of the model's own class (fixtures39).

tianrun-chen/SAM-Adapter-PyTorch#89 (tests/fixtures/GL403/sam_adapter_train_eval_infer_without_no_grad.py):
`Train.eval()` puts `self.model` in eval mode and calls `self.model.infer(inp)` for every validation
batch, outside `torch.no_grad()`. `SAM.infer` is a method of a module class of the file, other
than `forward`, that runs the model's submodules and returns their output: it records a graph
exactly as `self.model(inp)` would. Only `model(x)`, `model.forward(x)` and `model.__call__(x)`
were model calls, so the loop was silent.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.decoder = nn.Linear(8, 1)

    def forward(self, x):
        return self.decoder(self.encoder(x))

    {decorator}def infer(self, x):
        {body}


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train(self, batches):
        self.model.train()
        for x, y in batches:
            self.optimizer.zero_grad()
            nn.functional.mse_loss(self.model(x), y).backward()
            self.optimizer.step()

    def eval(self, batches):
        self.model.eval()
        preds = []
        for x, y in batches:
            {outer}preds.append(torch.sigmoid(self.model.infer(x)))
        return preds


model = Net()
trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
trainer.train(batches)
trainer.eval(batches)
"""

RUNS_SUBMODULES = "return self.decoder(torch.relu(self.encoder(x)))"


def _lines(decorator: str = "", body: str = RUNS_SUBMODULES, outer: str = "") -> list[int]:
    rule = Registry.load().by_code("GL403")()
    src = textwrap.dedent(SRC.format(decorator=decorator, body=body, outer=outer))
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_an_inference_method_called_with_gradients_on_is_reported():
    assert _lines() == [35]


def test_the_call_under_no_grad_is_not():
    assert _lines(outer="with torch.no_grad():\n                ") == []


def test_a_method_that_turns_gradients_off_itself_is_not():
    body = "with torch.no_grad():\n            return self.decoder(self.encoder(x))"
    assert _lines(body=body) == []


def test_a_decorated_method_is_not():
    assert _lines(decorator="@torch.no_grad()\n    ") == []


def test_a_method_that_detaches_its_output_is_not():
    assert _lines(body="return self.decoder(self.encoder(x)).detach()") == []


def test_a_method_that_runs_no_submodule_is_not():
    assert _lines(body="return x.sum(dim=1, keepdim=True)") == []
