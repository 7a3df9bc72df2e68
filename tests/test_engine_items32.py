"""Engine items, twenty-fifth session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# One answer for "a default tensor type that may be CUDA is set" (ScriptModel.cuda_default_set):
# a written-out CPU type leaves factories on the host, as GL112 already read it.
DEFAULT_TYPE = """
import torch
import torch.nn as nn

torch.set_default_tensor_type({arg})


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        noise = torch.randn(x.shape[0], 4)
        return self.fc(x + noise)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 4, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_written_out_cpu_default_type_leaves_factories_on_the_host():
    assert _lines(DEFAULT_TYPE.format(arg="torch.DoubleTensor"), "GL105") == [(14, "GL105")]
    assert _lines(DEFAULT_TYPE.format(arg="'torch.FloatTensor'"), "GL105") == [(14, "GL105")]


def test_a_cuda_default_type_may_place_factories():
    assert _lines(DEFAULT_TYPE.format(arg="torch.cuda.FloatTensor"), "GL105") == []
    assert _lines(DEFAULT_TYPE.format(arg="dtype_name"), "GL105") == []


# M46-1 (ResidualMaskingNetwork's FER2013 trainer): a driver at module level that builds an
# instance of a class of the file and calls one of its methods runs the file's code: the file is a
# script, and GL102 reads its hard-coded `.cuda()` against the configured device.
TRAINER_DRIVER = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, configs):
        self._device = torch.device(configs["device"])
        self._model = nn.Linear(4, 2).to(self._device)
        self._opt = torch.optim.SGD(self._model.parameters(), lr=0.1)

    def train(self):
        for _ in range(3):
            images = torch.randn(8, 4).cuda()
            loss = self._model(images).pow(2).mean()
            self._opt.zero_grad()
            loss.backward()
            self._opt.step()
        return loss.item()


configs = {"device": "cuda:0" if torch.cuda.is_available() else "cpu"}
{driver}
"""


def test_a_method_of_a_file_class_run_at_import_makes_a_script():
    from gpulint.model import ScriptModel
    import libcst as cst

    for driver in ("trainer = Trainer(configs)\nacc = trainer.train()",
                   "trainer = Trainer(configs)\ntrainer.train()",
                   "acc = Trainer(configs).train()"):
        src = textwrap.dedent(TRAINER_DRIVER.replace("{driver}", driver))
        assert ScriptModel(cst.parse_module(src), src).is_script, driver
        assert _lines(TRAINER_DRIVER.replace("{driver}", driver), "GL102") == [(14, "GL102")], driver


def test_an_instance_alone_or_a_method_the_file_does_not_define_is_no_script():
    from gpulint.model import ScriptModel
    import libcst as cst

    for driver in ("trainer = Trainer(configs)",  # a module-level instance of a library
                   "trainer = Trainer(configs)\ntrainer.to_json()",  # not a method of the file
                   "state = load(configs).train()"):  # not a class of the file
        src = textwrap.dedent(TRAINER_DRIVER.replace("{driver}", driver))
        assert not ScriptModel(cst.parse_module(src), src).is_script, driver
        assert _lines(TRAINER_DRIVER.replace("{driver}", driver), "GL102") == [], driver
