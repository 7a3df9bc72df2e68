"""GL404 stays silent on Monte-Carlo dropout whose `model.train()` stands before a loop that only
repeats the pass (PRECISION38: ej0cl6/deep-active-learning nets.py `predict_prob_dropout`,
JordanAsh/badge query_strategies/strategy.py: `self.clf.train()`, then `for i in range(n_drop):`
around `with torch.no_grad(): for x, y, idxs in loader: ... self.clf(x)`). `_deliberate_train`
went out through `with` blocks only; now also through a loop with no backward, step, mode switch
or call taking the model. A loop that steps the optimizer stays reported."""

from __future__ import annotations

from fixture_support import rules_for
from gpulint.engine import Options, run_text

HEAD = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Net:
    def __init__(self):
        self.clf = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 3))
        self.opt = torch.optim.SGD(self.clf.parameters(), lr=0.1)
        self.loader = [(torch.randn(8, 4), torch.randint(0, 3, (8,)), torch.arange(8)) for _ in range(2)]

'''

MC_DROPOUT = HEAD + '''    def predict_prob_dropout(self, n_drop=5):
        self.clf.train()
        probs = torch.zeros([8, 3])
        for i in range(n_drop):
            with torch.no_grad():
                for x, y, idxs in self.loader:
                    out = self.clf(x)
                    probs[idxs] += F.softmax(out, dim=1)
        return probs / n_drop


print(Net().predict_prob_dropout().sum())
'''

MC_DROPOUT_WITH_OUTSIDE = HEAD + '''    def predict_prob_dropout(self, n_drop=5):
        self.clf.train()
        probs = torch.zeros([8, 3])
        with torch.no_grad():
            for i in range(n_drop):
                print("n_drop", i)
                for x, y, idxs in self.loader:
                    out = self.clf(x)
                    probs[idxs] += out
        return probs / n_drop


print(Net().predict_prob_dropout().sum())
'''

STEPPING_LOOP = HEAD + '''    def evaluate(self, n_drop=5):
        self.clf.train()
        probs = torch.zeros([8, 3])
        for i in range(n_drop):
            self.opt.step()
            with torch.no_grad():
                for x, y, idxs in self.loader:
                    out = self.clf(x)
                    probs[idxs] += F.softmax(out, dim=1)
        return probs / n_drop


print(Net().evaluate().sum())
'''


def _gl404(text):
    return [d for d in run_text("t.py", text, rules_for({"GL404"}), Options()).diagnostics if d.code == "GL404"]


def test_mc_dropout_under_sampling_loop_is_silent():
    assert _gl404(MC_DROPOUT) == []


def test_mc_dropout_with_no_grad_outside_sampling_loop_is_silent():
    assert _gl404(MC_DROPOUT_WITH_OUTSIDE) == []


def test_loop_that_steps_stays_reported():
    found = _gl404(STEPPING_LOOP)
    assert [d.line for d in found] == [18]
