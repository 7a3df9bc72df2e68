"""GL302 with samplers and loaders kept as values of dicts (kan-bayashi/ParallelWaveGAN#177:
`sampler["train"] = DistributedSampler(...)`, `{"train": DataLoader(..., sampler=sampler["train"])}`)
and a pass over the loader in a method that a loop calls (`while True: self._train_epoch()`)."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
data = {"train": TensorDataset(torch.randn(32, 4)), "dev": TensorDataset(torch.randn(8, 4))}
"""


def _lines(body: str) -> list[int]:
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return [d.line for d in check(src, {"GL302"}) if d.code == "GL302"]


def test_dict_display_of_samplers_and_loaders_in_epoch_loop():
    assert _lines("""
        samplers = {"train": DistributedSampler(data["train"]), "dev": DistributedSampler(data["dev"], shuffle=False)}
        loaders = {k: None for k in data}
        loaders = {"train": DataLoader(data["train"], sampler=samplers["train"]),
                   "dev": DataLoader(data["dev"], sampler=samplers["dev"])}
        for epoch in range(3):
            for (x,) in loaders["train"]:
                pass
        """) == [10]


def test_sampler_filled_by_key():
    assert _lines("""
        sampler = {"train": None}
        sampler["train"] = DistributedSampler(data["train"])
        loader = DataLoader(data["train"], sampler=sampler["train"])
        for epoch in range(3):
            for (x,) in loader:
                pass
        """) == [11]


def test_keys_are_kept_apart():
    # the shuffling sampler is the dev one, whose loader is read once after training
    assert _lines("""
        samplers = {"train": DistributedSampler(data["train"], shuffle=False), "dev": DistributedSampler(data["dev"])}
        loaders = {"train": DataLoader(data["train"], sampler=samplers["train"]),
                   "dev": DataLoader(data["dev"], sampler=samplers["dev"])}
        for epoch in range(3):
            for (x,) in loaders["train"]:
                pass
        for (x,) in loaders["dev"]:
            pass
        """) == []


def test_same_key_of_another_dict_is_not_the_sampler():
    assert _lines("""
        samplers = {"train": DistributedSampler(data["train"])}
        other = {"train": None}
        loader = DataLoader(data["train"], sampler=other["train"], shuffle=True)
        for epoch in range(3):
            for (x,) in loader:
                pass
        """) == []


TRAINER = """
class Trainer:
    def __init__(self, loaders):
        self.loaders = loaders

    def _train_epoch(self):
        for (x,) in self.loaders["train"]:
            pass

    def run(self, epochs):
{run}

samplers = {{"train": DistributedSampler(data["train"])}}
loaders = {{"train": DataLoader(data["train"], sampler=samplers["train"])}}
Trainer(loaders).run(3)
"""


def _sampler_line(body: str) -> int:
    src = textwrap.dedent(HEAD) + body
    return 1 + next(i for i, line in enumerate(src.splitlines()) if line.startswith("samplers = "))


def test_method_called_in_a_loop_of_another_method():
    run = "        while True:\n            self._train_epoch()\n            if epochs:\n                break"
    body = TRAINER.format(run=run)
    assert _lines(body) == [_sampler_line(body)]
    run = "        for _ in range(epochs):\n            self._train_epoch()"
    body = TRAINER.format(run=run)
    assert _lines(body) == [_sampler_line(body)]


def test_method_called_once_is_one_pass():
    assert _lines(TRAINER.format(run="        self._train_epoch()")) == []
    # a loop whose iterable is the call runs it once
    assert _lines(TRAINER.format(run="        for _ in [self._train_epoch()]:\n            pass")) == []


def test_loader_rebuilt_in_the_called_function_is_left_alone():
    assert _lines("""
        sampler = DistributedSampler(data["train"])
        def one_epoch():
            loader = DataLoader(data["train"], sampler=sampler)
            for (x,) in loader:
                pass
        for epoch in range(3):
            one_epoch()
        """) == []


def _fixed(body: str) -> str:
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return fix(src, {"GL302"}, unsafe=False).text[len(textwrap.dedent(HEAD)):]


def test_fix_for_a_sampler_in_a_dict_display():
    out = _fixed("""
        samplers = {"train": DistributedSampler(data["train"])}
        loaders = {"train": DataLoader(data["train"], sampler=samplers["train"])}
        for epoch in range(3):
            for (x,) in loaders["train"]:
                pass
        """)
    assert 'for epoch in range(3):\n    samplers["train"].set_epoch(epoch)\n    for (x,) in loaders' in out


def test_fix_for_a_sampler_filled_by_key_is_guarded():
    out = _fixed("""
        sampler = {"train": None}
        if dist.is_initialized():
            sampler["train"] = DistributedSampler(data["train"])
        loader = DataLoader(data["train"], sampler=sampler["train"], shuffle=sampler["train"] is None)
        for epoch in range(3):
            for (x,) in loader:
                pass
        """)
    assert ('for epoch in range(3):\n    if isinstance(sampler.get("train"), DistributedSampler):\n'
            '        sampler["train"].set_epoch(epoch)\n    for (x,) in loader:') in out
