"""GL102 (G48-4, phamquiluan/ResidualMaskingNetwork#31): a trainer keeps
`self._device = torch.device(self._configs["device"])`, where the config is a dict literal whose
"device" is the run-time CUDA/CPU choice, handed to the constructor; its model is moved there and its
epoch methods send batches with bare `.cuda()`. The rule follows the subscript to the dict entry
(through `self.<attr>`, the `__init__` parameter and the class's constructions) and the call of
`_train` from `train` (a method that also calls `self._model.train()`, which is no way in). Hard
negatives: a config changed in place (`configs.update(...)`, `configs["device"] = ...`), a class
handed on rather than constructed by name, a device entry that is no choice, and batches moved to
`self._device` stay silent."""

from __future__ import annotations

import textwrap

from fixture_support import check

TRAINER = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, configs):
        self._configs = configs
        self._device = torch.device(self._configs["device"])
        self._model = nn.Linear(4, 2).to(self._device)
        self._optimizer = torch.optim.SGD(self._model.parameters(), lr=0.1)

    def _train(self):
        self._model.train()
        for images in [torch.randn(8, 4) for _ in range(3)]:
            images = images.cuda(non_blocking=True)
            loss = self._model(images).sum()
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()

    def train(self):
        for epoch in range(2):
            self._train()


if __name__ == "__main__":
    configs = {"lr": 0.1, "device": "cuda:0" if torch.cuda.is_available() else "cpu"}
    EXTRA
    trainer = Trainer(configs)
    trainer.train()
"""


def src(extra: str = "", body: str = TRAINER) -> str:
    return textwrap.dedent(body).replace("EXTRA", extra)


def gl102(extra: str = "", body: str = TRAINER) -> list[int]:
    return [d.line for d in check(src(extra, body), ["GL102"])]


def test_config_dict_device_through_the_constructor_fires():
    assert gl102() == [next(i for i, ln in enumerate(src().splitlines(), 1) if ".cuda(" in ln)]


def test_config_param_read_directly_fires():
    body = TRAINER.replace('torch.device(self._configs["device"])', 'torch.device(configs["device"])')
    assert len(gl102(body=body)) == 1


# hard negatives ----------------------------------------------------------------------------------

def test_batches_moved_to_the_trainer_device_are_silent():
    assert gl102(body=TRAINER.replace("images.cuda(non_blocking=True)", "images.to(self._device, non_blocking=True)")) == []


def test_config_updated_in_place_is_not_followed():
    assert gl102('configs.update({"device": "cuda:1"})') == []


def test_config_entry_overwritten_is_not_followed():
    assert gl102('configs["device"] = "cuda:1"') == []


def test_device_entry_that_is_no_choice_is_silent():
    body = TRAINER.replace('"cuda:0" if torch.cuda.is_available() else "cpu"',
                           'os.environ["DEVICE"], "n_gpu": torch.cuda.device_count()').replace(
        "import torch\n", "import os\nimport torch\n", 1)
    assert gl102(body=body) == []


def test_class_handed_on_is_not_followed():
    body = TRAINER.replace("trainer = Trainer(configs)", "make = Trainer\n    trainer = make(configs)")
    assert gl102(body=body) == []


def test_guarded_call_of_the_epoch_method_is_silent():
    body = TRAINER.replace("            self._train()", "            if torch.cuda.is_available():\n                self._train()")
    assert gl102(body=body) == []


def test_a_second_epoch_method_is_reached_past_the_train_name_cycle():
    # `_val` is called from `train`; the name search for `train` also finds `self._model.train()` in
    # `_train`, which leads back to `train`: a cycle, no guard (the base read it as one, depth-capped)
    body = TRAINER.replace("images = images.cuda(non_blocking=True)", "images = images.to(self._device)").replace(
        "    def train(self):",
        "    def _val(self):\n"
        "        self._model.eval()\n"
        "        for images in [torch.randn(8, 4) for _ in range(2)]:\n"
        "            images = images.cuda(non_blocking=True)\n"
        "            print(self._model(images).sum().item())\n\n"
        "    def train(self):").replace("            self._train()", "            self._train()\n            self._val()")
    text = src(body=body)
    assert gl102(body=body) == [next(i for i, ln in enumerate(text.splitlines(), 1) if ".cuda(" in ln)]
