"""GL502 reads `num_workers=args.workers` as 0 when the file's only definition of the option is
`add_argument("--workers", default=0)` (G58-4, runa91/barc_release#9); the option keeps its place
(no edit of the call for it). A non-zero default, an assignment of the field after parsing,
`set_defaults`, a namespace updated from a config, or the field named in another string stay
silent for the workers."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("-j", "--FIELD", default=DEFAULT, type=int)
args = parser.parse_args()
EXTRA
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8,
                    num_workers=args.FIELD, pin_memory=True)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _src(default="0", extra="", field="workers"):
    return TEXT.replace("FIELD", field).replace("DEFAULT", default).replace("EXTRA", extra)


def _lines(**kw):
    return [f.line for f in check(_src(**kw), {"GL502"})]


def test_option_with_default_zero_is_reported():
    got = check(_src(), {"GL502"})
    assert [f.line for f in got] == [14]
    assert "0 by default, line 8" in got[0].message


def test_option_named_like_the_keyword_is_reported():
    assert _lines(field="num_workers") == [14]


def test_no_edit_of_the_option():
    out = fix(_src(), {"GL502"}, unsafe=True)
    assert out.text == _src()


def test_option_with_a_non_zero_default_is_silent():
    assert _lines(default="4") == []


def test_field_assigned_after_parsing_is_silent():
    assert _lines(extra="if args.workers == 0:\n    args.workers = 2") == []


def test_set_defaults_from_a_config_is_silent():
    assert _lines(extra="parser.set_defaults(**{})") == []


def test_namespace_updated_from_a_config_is_silent():
    assert _lines(extra="vars(args).update({})") == []


def test_field_named_in_another_string_is_silent():
    assert _lines(extra='cfg = {"workers": 4}') == []
