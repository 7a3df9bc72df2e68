"""GL504 and an attribute receiver (G55-2, the shape of Nerogar/OneTrainer PR #1608: a wrapper
object's batch-norm statistics, a host tensor set once, copied to the train device on every step).
`w.stats.to(device)` / `self.stats.cuda()` in a loop is now a site when `w` is an instance of a plain
class of the file, the engine's value of `w.stats` is a host tensor, and nothing can change the
attribute while the loop runs: no write of `.stats` anywhere in the file except `self.stats = ...`
in `__init__` or an assignment before the loop in its own scope, no alias or argument of it, the
base not rebound in the loop and used there only to read attributes and call what the class
defines, and no optimizer built over it. Silent otherwise (a method that changes `.stats`, a class
with a base from outside the file, a module's tensor, a tensor on the accelerator, a property)."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch


class Wrapper:
    def __init__(self, stats):
        self.stats = stats

    def scale(self, x):
        return x * 2.0
METHODS

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = Wrapper(STATS)
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4).to(device)
    loss = model(w.scale(x) - MOVE).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    EXTRA
'''


def _src(move="w.stats.to(device)", stats="torch.randn(4)", methods="", extra="pass", text=TEXT):
    return text.replace("MOVE", move).replace("STATS", stats).replace("METHODS", methods).replace("EXTRA", extra)


def _lines(*a, **k):
    return [d.line for d in check(_src(*a, **k), {"GL504"}) if d.code == "GL504"]


def test_attribute_of_a_plain_instance_moved_every_step_is_reported():
    assert _lines() == [18]
    assert _lines("w.stats.cuda()") == [18]
    assert _lines("w.stats.float().to(device)") == [18]


def test_message_names_the_attribute():
    d = next(d for d in check(_src(), {"GL504"}))
    assert "`w.stats` does not change in this loop" in d.message
    assert "`w.stats.to(device)`" in d.message


def test_self_attribute_in_a_method_loop_is_reported():
    methods = '''
    def total(self, xs, device):
        out = 0
        for x in xs:
            out = out + (x.to(device) * self.stats.to(device)).sum()
        return out
'''
    src = _src(methods=methods) + "print(w.total([torch.randn(4)], device))\n"
    assert [d.line for d in check(src, {"GL504"})] == [14, 24]


def test_attribute_assigned_in_the_loop_is_not_reported():
    assert _lines(extra="w.stats = w.stats * 0.9") == []
    assert _lines(extra="w.stats.mul_(0.9)") == []
    assert _lines(extra="w.stats[0] = 1.0") == []


def test_attribute_changed_by_a_method_of_the_file_is_not_reported():
    methods = '''
    def update(self):
        self.stats.mul_(0.9)
'''
    assert _lines(methods=methods, extra="w.update()") == []
    methods = '''
    def reset(self, s):
        self.stats = s
'''
    assert _lines(methods=methods) == []  # not even called in the loop: silent (conservative)


def test_base_escaping_or_unknown_is_not_reported():
    assert _lines(extra="print(vars(w))") == []
    assert _lines(extra="w.__dict__.update(stats=torch.zeros(4))") == []
    assert _lines(extra="helper(w)") == []
    assert _lines(extra="w.refresh()") == []  # no method `refresh` in the file
    outside = TEXT.replace("class Wrapper:", "from lib import Base\n\n\nclass Wrapper(Base):")
    assert _lines(text=outside) == []


def test_alias_or_optimizer_over_the_attribute_is_not_reported():
    assert _lines(extra="s = w.stats") == []
    stepped = TEXT.replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)",
                           "opt = torch.optim.SGD([*model.parameters(), w.stats], lr=0.1)")
    assert _lines(stats="torch.randn(4, requires_grad=True)", text=stepped) == []


def test_tensor_on_the_accelerator_is_not_reported():
    assert _lines(stats="torch.randn(4, device=device)") == []


def test_module_tensor_and_property_are_not_reported():
    assert _lines("model.weight.to(device).sum()") == []
    prop = '''
    @property
    def mean(self):
        return self.stats * 2
'''
    assert _lines("w.mean.to(device)", methods=prop) == []


def test_hoist_fix_moves_the_attribute_transfer():
    src = _src().replace("    loss = model(w.scale(x) - w.stats.to(device)).pow(2).mean()\n",
                         "    s = w.stats.to(device)\n    loss = model(w.scale(x) - s).pow(2).mean()\n")
    out = fix(src, {"GL504"}, unsafe=True).text
    assert "s = w.stats.to(device)\nfor step in range(10):\n" in out
