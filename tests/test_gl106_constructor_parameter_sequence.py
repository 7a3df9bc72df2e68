"""GL106 and `torch.tensor(<__init__ parameter>)` (neural-lam#241, G61-1): the tensor has a dimension
when the parameter's default and every argument the file's constructions pass for it are sequences
(a tuple/list display, `list(...)`/`tuple(...)`), so it cannot be the 0-dim tensor PyTorch lets meet
device tensors; a construction passing a number or something unknown keeps the rule silent."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class M(nn.Module):
    def __init__(self, w=DEFAULT):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.w = DATA

    def forward(self, x):
        return self.lin(x)

    def loss(self, x, y):
        return ((self(x) - y) ** 2 * self.w).mean()


m = BUILD.to(device)
x, y = torch.randn(4, 2), torch.randn(4, 2)
m.loss(x.to(device), y.to(device)).backward()
EXTRA
"""


def lines(default="(1.0, 2.0)", data="torch.tensor(w)", build="M()", extra="") -> list[int]:
    src = SRC.replace("DEFAULT", default).replace("DATA", data).replace("BUILD", build).replace("EXTRA", extra)
    return [d.line for d in check(src, {"GL106"}) if d.code == "GL106"]


def test_parameter_with_a_tuple_default_and_default_construction_is_reported():
    assert lines() == [12]


def test_parameter_given_lists_at_every_construction_is_reported():
    assert lines(default="None", build="M([1.0, 2.0])") == [12]
    assert lines(default="None", build="M(w=(1.0, 2.0))", extra="m2 = M([0.5, 0.5])\n") == [12]


def test_list_of_the_parameter_is_a_sequence():
    assert lines(data="torch.tensor(list(w), dtype=torch.float32)") == [12]
    assert lines(data="torch.tensor(list(w))", build="M(w=unknown())") == [12]


def test_a_construction_passing_a_number_stays_silent():
    # `M(w=0.5)`: a 0-dim tensor, which PyTorch lets meet device tensors
    assert lines(extra="m2 = M(w=0.5)\n") == []
    assert lines(default="0.5") == []


def test_a_construction_passing_something_unknown_stays_silent():
    assert lines(build="M(unknown())") == []
    assert lines(build="M(**cfg)") == []


def test_a_class_used_other_than_by_its_constructions_stays_silent():
    # a factory that hands the class on: its arguments are not the file's to read
    assert lines(extra="registry = {'m': M}\n") == []
