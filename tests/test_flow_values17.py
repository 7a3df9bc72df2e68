"""Flow engine shapes from the thirteenth precision pass and the seventeenth real-bug batch."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL105", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_self_device_set_to_cpu_literal_is_the_host():
    # wvangansbeke/Unsupervised-Classification utils/memory.py: a memory bank keeps its tensors and
    # `self.device = 'cpu'` together and moves both in its own `to()`; `.to(self.device)` in a
    # method recorded before `to()` is the host, like the bank's tensors (precision12 #2)
    src = """
    import torch


    class MemoryBank(object):
        def __init__(self, n, dim, k):
            self.features = torch.FloatTensor(n, dim)
            self.targets = torch.LongTensor(n)
            self.device = 'cpu'
            self.K = k

        def weighted_knn(self, predictions):
            one_hot = torch.zeros(self.K, 10).to(self.device)
            corr = torch.matmul(predictions, self.features.t())
            yd, yi = corr.topk(self.K, dim=1)
            cand = self.targets.view(1, -1).expand(predictions.shape[0], -1)
            got = torch.gather(cand, 1, yi)
            one_hot.scatter_(1, got.view(-1, 1), 1)
            return one_hot

        def to(self, device):
            self.features = self.features.to(device)
            self.targets = self.targets.to(device)
            self.device = device

        def cuda(self):
            self.to('cuda:0')
    """
    assert findings(src) == []


def test_self_device_set_to_cuda_literal_is_still_the_accelerator():
    src = """
    import torch


    class Bank:
        def __init__(self):
            self.device = 'cuda'
            self.table = torch.ones(8)

        def lookup(self, idx):
            buf = torch.zeros(8).to(self.device)
            return buf + self.table
    """
    assert findings(src) == [("GL116", 12)]
