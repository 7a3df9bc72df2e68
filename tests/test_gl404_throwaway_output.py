"""GL404 stays silent on a `no_grad` pass in training mode whose model output is thrown away: a
forward run for its side effects (batch-norm or quantisation statistics), as an expression
statement `model(x)` (already silent) or assigned to the throwaway name `_ = model(x)` (PRECISION37:
jakc4103/DFQ main_seg.py `estimate_stats`, `model.train()` then `with torch.no_grad():` an epoch
loop over the data with `_ = model(image)`). The same pass that keeps the output stays reported."""

from __future__ import annotations

from fixture_support import rules_for
from gpulint.engine import Options, run_text

STATS = '''import torch
import torch.nn as nn


def estimate_stats(model, loader, num_epoch=2):
    model.eval()
    model = model.cuda() if torch.cuda.is_available() else model
    model.train()
    with torch.no_grad():
        for epoch in range(num_epoch):
            for sample in loader:
                image = sample["image"]
                _ = model(image)
    return model


model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
loader = [{"image": torch.randn(8, 4)} for _ in range(3)]
estimate_stats(model, loader)
'''


def _gl404(text):
    return [d for d in run_text("t.py", text, rules_for({"GL404"}), Options()).diagnostics if d.code == "GL404"]


def test_throwaway_output_pass_is_silent():
    assert _gl404(STATS) == []


def test_expression_statement_pass_is_silent():
    assert _gl404(STATS.replace("_ = model(image)", "model(image)")) == []


def test_kept_output_is_reported():
    kept = STATS.replace("_ = model(image)", "out = model(image)\n                print(out.sum())")
    assert len(_gl404(kept)) == 1


def test_throwaway_tuple_is_not_a_throwaway():
    kept = STATS.replace("_ = model(image)", "out, _ = model(image), 0\n                print(out.sum())")
    assert len(_gl404(kept)) == 1
