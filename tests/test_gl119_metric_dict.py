"""GL119: metrics kept in a dict display and updated in a loop over its values (or items)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn
import torchmetrics


def evaluate(model, loader, device):
    metrics = {{"acc": torchmetrics.Accuracy(task="multiclass", num_classes=3){move},
               "f1": torchmetrics.F1Score(task="multiclass", num_classes=3){move}}}
    {rebind}
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            preds = model(x).argmax(1){cpu}
            for {target} in metrics.{meth}():
                m.update(preds, y{cpu})
    return {{k: m.compute().item() for k, m in metrics.items()}}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
loader = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(3)]
print(evaluate(model, loader, device))
"""


def findings(move="", rebind="", cpu="", target="m", meth="values") -> list[tuple[str, int]]:
    reg = Registry.load()
    src = _SRC.format(move=move, rebind=rebind, cpu=cpu, target=target, meth=meth)
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL119")()], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_every_metric_of_the_dict_is_reported():
    assert findings() == [("GL119", 8), ("GL119", 9)]


def test_items_loop():
    assert findings(target="name, m", meth="items") == [("GL119", 8), ("GL119", 9)]


def test_hard_negative_each_metric_moved():
    assert findings(move=".to(device)") == []


def test_hard_negative_dict_rebuilt_moved():
    assert findings(rebind="metrics = {k: m.to(device) for k, m in metrics.items()}") == []


def test_hard_negative_updated_with_host_tensors():
    assert findings(cpu=".cpu()") == []
