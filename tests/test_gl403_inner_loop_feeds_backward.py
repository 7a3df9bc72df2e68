"""GL403 (precision30): two correct shapes the rule reported.

1. A loop nested in a training loop whose model outputs reach the tensor the enclosing loop
   differentiates (yaoyao-liu/class-incremental-learning, mnemonics-training trainer/mnemonics.py:
   the features of each learnable exemplar are computed in an inner `for` with the frozen feature
   extractor in eval mode, stacked into class means, and the outer loop's `loss.backward()` trains
   the exemplars through them). `no_grad` there would cut that backward. An inner held-out loop
   whose results only feed a printout stays reported.
2. An evaluation loop calling a model whose class the analysis cannot tell (`model_best`, a
   parameter, or `torch.load`ed) in a file whose own module class differentiates in a method
   (jmtomczak/intro_dgm ebms/ebm_example.ipynb: EBM.forward -> Langevin sampling ->
   `torch.autograd.grad`). The same loop in a file with no such class stays reported.
"""

from __future__ import annotations

import textwrap

from fixture_support import check

INNER = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU()).to(device)
model.eval()
exemplars = nn.Parameter(torch.randn(3, 5, 4, device=device))
opt = torch.optim.SGD([exemplars], lr=0.1)
loader = [(torch.randn(6, 4), torch.randint(0, 3, (6,))) for _ in range(2)]
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        feats = model(x)
        opt.zero_grad()
        means = model(exemplars[0]).mean(0, keepdim=True)
        for k in range(1, 3):
            out = model(exemplars[k])
            means = torch.cat((means, out.mean(0, keepdim=True)), 0)
        {use}
        logits = F.linear(F.normalize(feats, dim=1), F.normalize(all_means, dim=1))
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
"""

INNER_LINE = 19  # `out = model(exemplars[k])`


def _inner(use):
    return [d.line for d in check(textwrap.dedent(INNER).format(use=use), ["GL403"]) if d.code == "GL403"]


def test_inner_loop_feeding_the_enclosing_backward_is_not_reported():
    assert _inner("all_means = means") == []


def test_inner_loop_whose_outputs_do_not_reach_the_loss_is_reported():
    assert _inner("all_means = torch.randn(3, 8, device=device); print(means.sum())") == [INNER_LINE]


EVAL = """
import torch
import torch.nn as nn


class EBM(nn.Module):
    def __init__(self):
        super().__init__()
        self.energy_net = nn.Linear(4, 3)

    def energy_gradient(self, x):
        x_i = x.detach().clone().requires_grad_(True)
        return torch.autograd.grad(torch.logsumexp(self.energy_net(x_i), 1).sum(), [x_i])[0]

    def forward(self, x):
        x_s = x - 0.1 * self.energy_gradient(torch.randn_like(x))
        return (torch.logsumexp(self.energy_net(x), 1) - torch.logsumexp(self.energy_net(x_s), 1)).sum()


def evaluation(test_loader, name=None, model_best=None):
    if model_best is None:
        model_best = torch.load(name + ".model")
    model_best.eval()
    loss = 0.0
    for batch in test_loader:
        loss_t = model_best.forward(batch)
        loss = loss + loss_t.item()
    return loss


test_loader = [torch.randn(2, 4)]
print(evaluation(test_loader, name="ebm"))
"""

EVAL_LINE = 26  # `loss_t = model_best.forward(batch)`


def test_unknown_model_in_a_file_whose_module_class_differentiates_is_not_reported():
    assert [d for d in check(EVAL, ["GL403"]) if d.code == "GL403"] == []


def test_unknown_model_in_a_file_without_such_a_class_is_reported():
    src = EVAL.replace("return torch.autograd.grad(torch.logsumexp(self.energy_net(x_i), 1).sum(), [x_i])[0]",
                       "return torch.zeros_like(x_i)")
    assert [d.line for d in check(src, ["GL403"]) if d.code == "GL403"] == [EVAL_LINE]
