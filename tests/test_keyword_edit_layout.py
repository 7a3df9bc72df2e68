"""`set_keyword_edit` (the keyword-argument edit of GL502, GL503, GL601): in a call laid out one
argument per line without a trailing comma, the new argument goes on a line of its own
(pytorch/examples ddp-tutorial-series multigpu_torchrun.py, fixes11 corpus audit: GL502 wrote
`sampler=DistributedSampler(dataset), num_workers=2` on the last argument's line); a call whose
arguments continue on aligned lines, closing on the last one, keeps the inline form."""

from __future__ import annotations

from fixture_support import fix

TEXT = '''import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda")
data = TensorDataset(torch.randn(16, 4), torch.randn(16, 2))
loader = DataLoader(
    data,
    batch_size=4,
    shuffle=True
)
model = torch.nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = (model(x.to(device)) - y.to(device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
'''

ALIGNED = TEXT.replace("loader = DataLoader(\n    data,\n    batch_size=4,\n    shuffle=True\n)", "loader = DataLoader(data,\n                    batch_size=4,\n                    shuffle=True)")


def test_keyword_goes_on_its_own_line_in_a_one_argument_per_line_call():
    out = fix(TEXT, {"GL502"}, unsafe=True).text
    assert out != TEXT
    compile(out, "fixed.py", "exec")
    assert "    batch_size=4,\n    shuffle=True,\n    num_workers=" in out, out
    assert fix(out, {"GL502"}, unsafe=True).text == out


def test_aligned_continuation_keeps_the_inline_form():
    assert ALIGNED != TEXT
    out = fix(ALIGNED, {"GL502"}, unsafe=True).text
    assert "                    shuffle=True, num_workers=" in out, out
