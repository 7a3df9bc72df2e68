"""GL403: `model.train(False)` puts a model in evaluation mode exactly like `model.eval()`
(HaoMood/bilinear-cnn#13: `_accuracy()` runs `self._net.train(False)`, scores every test batch
with autograd on, then `self._net.train(True)`). The rule's text prefilter only let files with
`.eval(` in (or a function named for evaluation), so such a file was never checked. A loop after
`train(True)` / `train()` stays silent."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn


def accuracy(net, loader):
    net.MODE
    correct = 0
    for x, y in loader:
        correct += (net(x).argmax(1) == y).sum().item()
    net.train(True)
    return correct


net = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))
loader = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))]
print(accuracy(net, loader))
'''


def _gl403(text):
    return [(d.line, d.code) for d in check(text, {"GL403"}) if d.code == "GL403"]


def test_train_false_is_eval_mode():
    assert _gl403(TEXT.replace("MODE", "train(False)")) == [(9, "GL403")]
    assert _gl403(TEXT.replace("MODE", "train(mode=False)")) == [(9, "GL403")]


def test_fix_wraps_loop_in_no_grad():
    out = fix(TEXT.replace("MODE", "train(False)"), {"GL403"}, unsafe=False).text
    assert "    with torch.no_grad():\n        for x, y in loader:" in out


def test_train_true_is_not_eval_mode():
    assert _gl403(TEXT.replace("MODE", "train(True)")) == []
    assert _gl403(TEXT.replace("MODE", "train()")) == []


def test_eval_unchanged():
    assert _gl403(TEXT.replace("MODE", "eval()")) == [(9, "GL403")]
