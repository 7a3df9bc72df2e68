"""GL404: an `eval()` of a model scored inside another model's training loop (AutoGAN's
`train_controller` scores the generator for the controller's reward; PRECISION40 P40-A1)."""

from __future__ import annotations

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


def get_score(gen_net, n):
    gen_net = gen_net.eval()
    total = 0.0
    for _ in range(n):
        total += gen_net(torch.randn(4, 8)).mean().item()
    return total


def train_controller(controller, ctrl_optimizer, gen_net, steps):
    controller.train()
    for step in range(steps):
        logits = controller(torch.randn(2, 8))
        reward = get_score(gen_net, 2)
        loss = -(logits.log_softmax(-1)[:, 0] * reward).mean()
        ctrl_optimizer.zero_grad()
        loss.backward()
        ctrl_optimizer.step()


gen_net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.Linear(8, 8))
controller = nn.Linear(8, 3)
ctrl_opt = torch.optim.SGD({params}, lr=0.01)
for it in range(2):
    train_controller(controller, ctrl_opt, gen_net, 2)
"""


def _gl404(params: str) -> list[int]:
    rule = Registry.load().by_code("GL404")()
    return [d.line for d in run_text("t.py", SRC.replace("{params}", params), [rule], Options()).diagnostics]


def test_a_loop_stepping_only_another_models_optimizer_does_not_train_the_evaluated_model():
    assert _gl404("controller.parameters()") == []


def test_a_loop_whose_optimizer_holds_the_evaluated_model_still_reports():
    assert _gl404("gen_net.parameters()") == [7]
    assert _gl404("list(controller.parameters()) + list(gen_net.parameters())") == [7]
