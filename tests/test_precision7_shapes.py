"""Seventh precision pass (benchmarks/PRECISION7.md): the true shapes next to each hard negative
still report. Each test checks a positive and the negative it must be told apart from."""

from __future__ import annotations

import json

from fixture_support import check

from gpulint.notebook import check_text, parse
from gpulint.engine import Options
from fixture_support import rules_for


def codes(text, code, path="fixture.py"):
    return [(d.code, d.line) for d in check(text, {code}, path) if d.code == code]


# -- GL102: a CUDA path guarded by a configuration value read by key -------------------------------
GL102_CONF = '''import argparse
import torch
from models import Net

parser = argparse.ArgumentParser()
parser.add_argument("--use_gpu", type=int, default=0)


def main(conf):
    model = Net.from_pretrained(conf["model_path"])
    if TEST:
        model.cuda()
    device = next(model.parameters()).device
    print(model(torch.randn(2, 3, device=device)))


if __name__ == "__main__":
    main(dict(vars(parser.parse_args())))
'''


def test_gl102_guard_by_a_config_key_is_silent():
    assert codes(GL102_CONF.replace("TEST", 'conf["use_gpu"]'), "GL102") == []
    assert codes(GL102_CONF.replace("TEST", 'conf.get("cuda", False)'), "GL102") == []
    assert codes(GL102_CONF.replace("TEST", 'getattr(args, "use_cuda", False)'), "GL102") == []


def test_gl102_guard_by_another_key_or_a_string_still_reports():
    assert codes(GL102_CONF.replace("TEST", 'conf["model_path"]'), "GL102") == [("GL102", 12)]
    # a string that is not a key: a comparison with a device string chooses nothing
    assert codes(GL102_CONF.replace("TEST", 'conf["model_path"] != "gpu"'), "GL102") == [("GL102", 12)]
    assert codes(GL102_CONF.replace("TEST", 'conf.pop("use_gpu")'), "GL102") == [("GL102", 12)]


# -- GL106: a 0-dim reduction kept as a plain attribute --------------------------------------------
GL106_SCALAR = '''import torch
import torch.nn as nn


class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.width = nn.Parameter(torch.rand(8), requires_grad=False)
        self.total = VALUE

    def forward(self, est, ref):
        d = ((est - ref) * self.width).pow(2).sum(-1)
        return (d.sqrt() * self.total).mean()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loss_fn = Loss().to(device)
print(loss_fn(torch.randn(2, 8, device=device), torch.randn(2, 8, device=device)))
'''


def test_gl106_full_reduction_is_a_scalar_and_silent():
    for value in ("torch.sqrt(torch.sum(self.width))", "self.width.sum().sqrt() * 2", "torch.norm(self.width) + 1.0"):
        assert codes(GL106_SCALAR.replace("VALUE", value), "GL106") == [], value


def test_gl106_reduction_over_a_dim_or_elementwise_tensor_still_reports():
    for value in ("torch.sqrt(torch.sum(self.width, dim=0))", "torch.sqrt(self.width)",
                  "torch.max(self.width, self.width)", "self.width.sum() * torch.rand(8)"):
        assert codes(GL106_SCALAR.replace("VALUE", value), "GL106") == [("GL106", 9)], value


# -- GL105 / GL106 in a notebook that never asks for an accelerator ---------------------------------
def _notebook(*cells: str) -> bytes:
    return json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": c} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 4,
    }).encode()


NB_LAYER = '''class MyDense(nn.Module):
    def __init__(self, units, in_units):
        super().__init__()
        self.weight = torch.rand(in_units, units)
        self.bias = torch.zeros(units)

    def forward(self, x):
        return F.relu(torch.matmul(x, self.weight) + self.bias)
'''


def _nb_codes(*cells: str):
    raw = _notebook(*cells)
    outcome = check_text("layers.ipynb", raw, rules_for({"GL105", "GL106"}), Options(), parse(raw))[1]
    return sorted(d.code for d in outcome.diagnostics if d.code in ("GL105", "GL106"))


def test_cpu_only_notebook_module_attributes_are_silent():
    imports = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
    assert _nb_codes(imports, NB_LAYER, "dense = MyDense(3, 5)\ndense(torch.rand(2, 5))\n") == []


def test_notebook_that_moves_the_module_still_reports():
    imports = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
    use = ("device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
           "dense = MyDense(3, 5).to(device)\ndense(torch.rand(2, 5, device=device))\n")
    assert _nb_codes(imports, NB_LAYER, use) == ["GL106", "GL106"]


def test_cpu_only_library_file_still_reports():
    # a library file (no script body): its modules are moved by the scripts that import it
    text = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n" + NB_LAYER
    assert [c for c, _ in codes(text, "GL106", "layers.py")] == ["GL106", "GL106"]


def test_cpu_only_module_file_with_a_main_smoke_test_still_reports():
    # diffusers anytext RecSVTR.py: the classes are imported and moved elsewhere; the `__main__`
    # block only runs a CPU smoke test (PRECISION4.md, a true GL106)
    text = ("import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n" + NB_LAYER
            + '\n\nif __name__ == "__main__":\n    print(MyDense(3, 5)(torch.rand(2, 5)))\n')
    assert [c for c, _ in codes(text, "GL106", "layers.py")] == ["GL106", "GL106"]


# -- GL109: a tensor moved to the device of another tensor, through a name ---------------------------
GL109_DEV_NAME = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(3, 2).to(device)


def to_numpy(wav):
    ref = model(wav.to(device))
    dev = SOURCE.device
    out = wav.to(dev)
    return out.numpy()
'''


def test_gl109_moved_to_a_host_tensors_device_is_silent():
    # `input_device = wav.device ... out.to(input_device)`: back where the input was (asteroid's
    # separate.py shape, the part the rule's own analysis answers)
    assert codes(GL109_DEV_NAME.replace("SOURCE", "wav"), "GL109") == []


def test_gl109_moved_to_a_device_tensors_device_still_reports():
    assert codes(GL109_DEV_NAME.replace("SOURCE", "ref"), "GL109") == [("GL109", 11)]


# -- GL116: CTC loss lengths on the host (second batch) ---------------------------------------------
GL116_CTC = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 6).to(device)
criterion = LOSS
inputs = torch.randn(12, 3, 8, device=device)
targets = torch.tensor([[1, 2], [2, 3], [3, 4]], device=device)
input_lengths = torch.IntTensor([12, 11, 10])
target_lengths = torch.LongTensor([2, 2, 2])
loss = criterion(model(inputs).log_softmax(-1), ARGS)
'''


def test_gl116_ctc_lengths_on_the_host_are_silent():
    text = GL116_CTC.replace("LOSS", "nn.CTCLoss()")
    assert codes(text.replace("ARGS", "targets, input_lengths, target_lengths"), "GL116") == []
    assert codes(text.replace("ARGS", "targets, input_lengths=input_lengths, target_lengths=target_lengths"), "GL116") == []


def test_gl116_ctc_targets_on_the_host_are_silent_too_another_loss_still_reports():
    # PRECISION8.md: off the cuDNN path ATen moves the targets to the log-probs' device itself
    # (LossCTC.cpp `targets.to(log_probs.device(), kLong)`; cuDNN wants them on the CPU), so CPU
    # targets are right too (this test asserted a report before: flowtron's CTC targets)
    host_targets = GL116_CTC.replace("LOSS", "nn.CTCLoss()").replace(
        "targets = torch.tensor([[1, 2], [2, 3], [3, 4]], device=device)", "targets = torch.tensor([[1, 2], [2, 3], [3, 4]])")
    assert codes(host_targets.replace("ARGS", "targets, input_lengths, target_lengths"), "GL116") == []
    # a loss that takes no lengths: the third argument is a tensor like the others
    other = GL116_CTC.replace("LOSS", "nn.MarginRankingLoss()")
    assert codes(other.replace("ARGS", "targets, target_lengths"), "GL116") != []


# -- GL301 / GL304: a wrapper only saved, never run ---------------------------------------------------
GL304_ONLY_SAVED = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(5, 1).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    net(torch.randn(4, 5, device=device)).sum().backward()
    opt.step()
net = torch.nn.DataParallel(net)
USE
torch.save({"model_state": net.state_dict()}, "converted.pth")
'''


def test_gl301_gl304_wrapper_only_saved_is_silent():
    text = GL304_ONLY_SAVED.replace("USE", "pass")
    assert codes(text, "GL301") == [] and codes(text, "GL304") == []


def test_gl301_gl304_wrapper_that_runs_still_reports():
    text = GL304_ONLY_SAVED.replace("USE", "out = net(torch.randn(4, 5, device=device))")
    assert [c for c, _ in codes(text, "GL304")] == ["GL304"]
    assert [c for c, _ in codes(text, "GL301")] == ["GL301"]


# -- GL401: an optimizer whose modules the other optimizers clear ------------------------------------
GL401_INFO = '''import itertools
import torch
import torch.nn as nn

G = nn.Linear(4, 6)
D = nn.Linear(6, 3)
G_optimizer = torch.optim.Adam(G.parameters())
D_optimizer = torch.optim.Adam(D.parameters())
info_optimizer = torch.optim.Adam(itertools.chain(G.parameters(), D.parameters()))
for step in range(10):
    z = torch.randn(8, 4)
    D_optimizer.zero_grad()
    D(G(z).detach()).sum().backward()
    D_optimizer.step()
    CLEAR_G
    D(G(z)).sum().backward()
    G_optimizer.step()
    D(G(z)).pow(2).mean().backward()
    info_optimizer.step()
'''


def test_gl401_optimizer_cleared_through_the_others_is_silent():
    assert codes(GL401_INFO.replace("CLEAR_G", "G_optimizer.zero_grad()"), "GL401") == []


def test_gl401_optimizer_with_one_module_never_cleared_still_reports():
    # G's gradients are never cleared: both G_optimizer and info_optimizer accumulate
    found = codes(GL401_INFO.replace("CLEAR_G", "pass"), "GL401")
    assert ("GL401", 17) in found and ("GL401", 19) in found


# -- GL402: the loss name rebound to a Python number before the accumulation (third batch) ----------
GL402_REBOUND = '''import math
import torch
import torch.nn as nn


def metric(y_true, probs):
    total = 0
    for p, y in zip(probs, y_true):
        total += math.log(max(1e-15, p[y]))
    RETURN


model = nn.Linear(6, 2)
optimizer = torch.optim.Adam(model.parameters())
criterion = nn.CrossEntropyLoss()
x = torch.randn(8, 6)
y = torch.randint(0, 2, (8,))
total_loss = 0
for fold in range(5):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    REBIND
    total_loss += loss
'''


def test_gl402_loss_rebound_to_a_number_is_silent():
    text = GL402_REBOUND.replace("RETURN", "return (-1 / len(probs)) * total").replace(
        "REBIND", "loss = metric(y.tolist(), model(x).softmax(1).tolist())")
    assert codes(text, "GL402") == []


def test_gl402_loss_rebound_to_a_tensor_or_in_a_branch_still_reports():
    # the metric returns one of its (tensor) arguments
    text = GL402_REBOUND.replace("RETURN", "return probs.sum() * total").replace(
        "REBIND", "loss = metric(y.tolist(), model(x).softmax(1))")
    assert codes(text, "GL402") == [("GL402", 25)]
    # the rebinding only on one path: the loss tensor may reach the accumulation
    text = GL402_REBOUND.replace("RETURN", "return (-1 / len(probs)) * total").replace(
        "REBIND", "if fold % 2:\n        loss = metric(y.tolist(), model(x).softmax(1).tolist())")
    assert codes(text, "GL402") == [("GL402", 26)]
    # no rebinding at all
    assert codes(GL402_REBOUND.replace("RETURN", "return total").replace("REBIND", "pass"), "GL402") == [("GL402", 25)]
