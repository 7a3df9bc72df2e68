"""Engine items of the twenty-fourth batch (Q&A-page reports):

- E24-1 (fastbook LMModel6): a module call given a list of host tensors built by a comprehension
  (`self.h = [torch.zeros(...) for _ in range(2)]`) compares each element with the module, as a
  tuple literal's items already were;
- E24-2 (a notebook resume): the optimizer whose state is loaded is the one whose assignment reaches
  the load when a notebook rebuilds `model`/`optimizer` under the same names (plain statements of
  the scope's own body, the last one before the load), so GL111 sees the rebuilt, unmoved model.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

LSTM = """
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, 1, batch_first=True)
        self.h = {state}

    def forward(self, x):
        res, h = self.rnn(x, self.h)
        return res


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = LM().to(device)
out = model(torch.randn(2, 3, 4).to(device))
"""

RESUME = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.Adam(model.parameters())
torch.save({{"opt": optimizer.state_dict()}}, "ckpt.pth")
{rebuild}
optimizer.load_state_dict(torch.load("ckpt.pth", map_location="cpu")["opt"])
model.to(device)
"""


def lines(code: str, src: str) -> list[int]:
    rule = Registry.load().by_code(code)()
    return [d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_a_list_of_host_states_meets_the_module():
    assert lines("GL116", LSTM.format(state="[torch.zeros(1, 2, 8) for _ in range(2)]")) == [13]
    # the tuple literal was already caught
    assert lines("GL116", LSTM.format(state="(torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))")) == [13]


def test_a_list_of_states_made_on_the_device_is_silent():
    state = "[torch.zeros(1, 2, 8, device=device) for _ in range(2)]"
    assert lines("GL116", LSTM.format(state=state).replace("class LM", "device = torch.device('cuda')\n\n\nclass LM")) == []


def test_the_rebuilt_optimizer_is_the_one_loaded():
    rebuild = "model = nn.Linear(4, 2)\noptimizer = torch.optim.Adam(model.parameters())"
    assert lines("GL111", RESUME.format(rebuild=rebuild)) == [11]


def test_reaching_assignment_hard_negatives():
    # no rebuild: the one optimizer, built over the moved model
    assert lines("GL111", RESUME.format(rebuild="")) == []
    # the model moved before the state is loaded
    rebuild = "model = nn.Linear(4, 2).to(device)\noptimizer = torch.optim.Adam(model.parameters())"
    assert lines("GL111", RESUME.format(rebuild=rebuild)) == []
    # a rebuild under an `if`: which optimizer reaches the load is not known
    rebuild = "if resume:\n    model = nn.Linear(4, 2)\n    optimizer = torch.optim.Adam(model.parameters())"
    assert lines("GL111", RESUME.format(rebuild=rebuild)) == []
