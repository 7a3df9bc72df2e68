"""GL102 is silent on a CUDA device that is one branch of a conditional expression whose other
branch is the CPU (DSE-MSU/DeepRobust examples/graph/test_rl_s2v.py:30 and :80:
`device = torch.device('cuda') if args.ctx == 'gpu' else 'cpu'`, with `args` imported from the
project's config module, whose `--ctx` option picks the device): the device is chosen at run time,
not hard-coded. A CUDA literal with no CPU alternative is still reported, in the same file too."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn
from project.config import args

model = nn.Linear(4, 2)
for step in range(2):
    pass
'''


def _lines(text):
    return [f.line for f in check(text, {"GL102"})]


def test_cuda_or_cpu_chosen_by_an_imported_config_value():
    text = HEAD + '''device = torch.device('cuda') if args.ctx == 'gpu' else 'cpu'
model = model.to(device)
'''
    assert _lines(text) == []


def test_string_branches_and_cpu_first():
    text = HEAD + '''device = 'cpu' if args.ctx == 'cpu' else 'cuda'
model = model.to(device)
'''
    assert _lines(text) == []


def test_torch_device_on_both_branches():
    text = HEAD + '''model = model.to(torch.device("cuda:0") if args.ctx == "gpu" else torch.device("cpu"))
'''
    assert _lines(text) == []


def test_cuda_on_both_branches_is_reported():
    text = HEAD + '''device = torch.device('cuda') if args.ctx == 'gpu' else torch.device('cuda:1')
model = model.to(device)
'''
    assert _lines(text) == [8]


def test_another_hard_coded_site_is_still_reported():
    text = HEAD + '''device = torch.device('cuda') if args.ctx == 'gpu' else 'cpu'
model = model.to(device)
x = torch.randn(2, 4).cuda()
'''
    assert _lines(text) == [10]
