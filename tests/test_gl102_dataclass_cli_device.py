"""GL102: `device: str = "cuda"` as a field of a `@dataclass` that the command line fills
(corl-team/CORL algorithms/offline/cql.py: `@pyrallis.wrap()` on `train(config: TrainConfig)`)
is the default of a device flag (`--device cpu`), not a hard-coded device."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
from dataclasses import dataclass

import torch
import torch.nn as nn
{parser_import}


@dataclass
class TrainConfig:
    device: str = "cuda"
    lr: float = 3e-4


{decorator}
def train(config: TrainConfig):
    actor = nn.Linear(4, 2).to(config.device)
    opt = torch.optim.Adam(actor.parameters(), lr=config.lr)
    x = torch.randn(8, 4, device=config.device)
    loss = actor(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


if __name__ == "__main__":
    {call}
"""


def _codes(parser_import: str, decorator: str, call: str):
    src = textwrap.dedent(SRC).format(parser_import=parser_import, decorator=decorator, call=call)
    return [(d.code, d.line) for d in check(src, ["GL102"])]


def test_pyrallis_wrapped_config_field_is_a_flag():
    assert _codes("import pyrallis", "@pyrallis.wrap()", "train()") == []


def test_tyro_cli_config_field_is_a_flag():
    assert _codes("import tyro", "", "train(tyro.cli(TrainConfig))") == []


def test_hf_argument_parser_config_field_is_a_flag():
    assert _codes(
        "from transformers import HfArgumentParser", "",
        "train(HfArgumentParser(TrainConfig).parse_args_into_dataclasses()[0])",
    ) == []


def test_dataclass_nothing_parses_stays_reported():
    # the dataclass is only built with its defaults: nothing can choose another device
    assert _codes("", "", "train(TrainConfig())") == [("GL102", 11)]


def test_plain_class_attribute_stays_reported():
    src = textwrap.dedent(SRC).format(parser_import="import pyrallis", decorator="@pyrallis.wrap()", call="train()")
    src = src.replace("@dataclass\n", "")
    assert [(d.code, d.line) for d in check(src, ["GL102"])] == [("GL102", 10)]


FUNC_SRC = """
import torch
import torch.nn as nn
{imp}


{decorator}
def encode(input: str, device: str = "cuda", n_quantizers: int = 8):
    model = nn.Linear(4, 2).to(device)
    x = torch.randn(8, 4, device=device)
    return model(x)


if __name__ == "__main__":
    {call}
"""


def _func_codes(imp: str, decorator: str, call: str):
    src = textwrap.dedent(FUNC_SRC).format(imp=imp, decorator=decorator, call=call)
    return [(d.code, d.line) for d in check(src, ["GL102"])]


def test_argbind_bound_function_parameter_is_a_flag():
    # descriptinc/descript-audio-codec dac/utils/encode.py: `@argbind.bind(group="encode", ...)`
    assert _func_codes(
        "import argbind", '@argbind.bind(group="encode", positional=True, without_prefix=True)',
        "args = argbind.parse_args()\n    with argbind.scope(args):\n        encode()",
    ) == []


def test_fire_bound_function_parameter_is_a_flag():
    assert _func_codes("import fire", "", "fire.Fire(encode)") == []


def test_plain_function_parameter_stays_reported():
    assert _func_codes("", "", 'encode("x.wav")') == [("GL102", 8)]
