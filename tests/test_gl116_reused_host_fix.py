"""GL116 offers no fix that moves one use of a host tensor at the call when the tensor is read
again afterwards (asahi417/lmppl#13: `label.reshape(-1)` moved at the loss, then
`(label != PAD).sum(-1)` divides a device tensor by a host one): the fixed code would fail on
the next line. A per-element subscript in a loop (`target[i]`) is moved at each use, as before."""

from __future__ import annotations

from fixture_support import check, fix

HEAD = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
loss_fct = nn.CrossEntropyLoss(reduction="none")
'''

REUSED = HEAD + '''label = torch.tensor([[0, 1], [2, -100]])
logit = model(torch.randn(2, 2, 4).to(device))
loss = loss_fct(logit.reshape(-1, 3), label.reshape(-1))
per_text = loss.view(2, -1).sum(-1) / (label != -100).sum(-1)
'''

ONCE = HEAD + '''label = torch.tensor([[0, 1], [2, 1]])
logit = model(torch.randn(2, 2, 4).to(device))
loss = loss_fct(logit.reshape(-1, 3), label.reshape(-1))
'''


def test_no_fix_when_the_host_tensor_is_read_again():
    found = [d for d in check(REUSED, {"GL116"}) if d.code == "GL116"]
    assert [d.line for d in found] == [9]
    assert found[0].fix is None


def test_the_argument_is_moved_when_it_is_its_only_use():
    found = [d for d in check(ONCE, {"GL116"}) if d.code == "GL116"]
    assert [d.line for d in found] == [9] and found[0].fix is not None
    out = fix(ONCE, {"GL116"}, unsafe=True).text
    assert "label.reshape(-1).to(logit.device)" in out
