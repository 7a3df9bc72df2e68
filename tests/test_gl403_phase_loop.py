"""GL403 on a shared phase loop (tests/fixtures_pending/README.md G47-1, ZOO_Attack_PyTorch#7,
reproduce-chexnet and Sentence-VAE): `for phase in ("train", "val"):` whose body backpropagates and
steps only `if phase == "train":` calls the model outside that test with gradients on, so the 'val'
batches record a graph for nothing. On the base the loop was a training loop (its forward feeds
`backward()` in the other phase) and nothing was reported. Now reported at the shared forward,
never with a `no_grad` wrap (it would stop the 'train' phase learning): the fix puts the one
statement that holds the shared forward under `torch.set_grad_enabled(phase == "train")`, and is
left out where the loop names more than one training phase or the forwards are in several
statements. Silent on the torchvision-tutorial shape, a `no_grad` under a phase test, a context
picked per phase, `inference_mode(phase != "train")`, a `set_grad_enabled(...)` statement, a
backward or a `.grad` read in the 'val' phase, and an unknown helper handed the model there."""

from __future__ import annotations

import textwrap

import pytest
from fixture_support import check, fix

HEAD = """
import contextlib
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loaders = {x: [torch.randn(8, 4)] for x in ["train", "val"]}
"""


def _src(body: str) -> str:
    return textwrap.dedent(HEAD) + "for epoch in range(3):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def _gl403(src: str):
    return [d for d in check(src, {"GL403"}) if d.code == "GL403"]


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


BUGGY = """
for phase in ("train", "val"):
    model.train(phase == "train")
    for x in loaders[phase]:
        loss = model(x).pow(2).mean()
        if phase == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_shared_forward_is_reported_and_fixed_with_set_grad_enabled():
    src = _src(BUGGY)
    found = _gl403(src)
    assert [d.line for d in found] == [_line(src, "loss = model(x)")]
    assert "'val' phase" in found[0].message and 'set_grad_enabled(phase == "train")' in found[0].message
    assert found[0].fix is not None and found[0].fix.applicability == "safe"  # a torch model: its class is known
    out = fix(src, {"GL403"}, False).text
    assert '            with torch.set_grad_enabled(phase == "train"):\n                loss = model(x).pow(2).mean()\n' in out
    assert "no_grad" not in out
    assert _gl403(out) == []


def test_message_without_fix_when_the_train_phase_is_ambiguous():
    src = _src(BUGGY.replace('("train", "val")', '("train", "training", "val")'))
    found = _gl403(src)
    assert len(found) == 1 and found[0].fix is None and "no_grad" in found[0].message


def test_forwards_in_two_statements_get_no_fix():
    body = BUGGY.replace(
        "        loss = model(x).pow(2).mean()\n",
        "        out = model(x)\n        aux = model(x + 1)\n        loss = (out - aux).pow(2).mean()\n",
    )
    found = _gl403(_src(body))
    assert len(found) == 2 and all(d.fix is None for d in found)


@pytest.mark.parametrize(
    "iterable",
    ['["train", "valid"]', "loaders", "loaders.keys()", '["train", "val"] + (["test"] if epoch else [])'],
)
def test_phase_names_from_lists_dict_keys_and_concatenations(iterable):
    assert len(_gl403(_src(BUGGY.replace('("train", "val")', iterable)))) == 1


def test_alias_test_and_items_loop():
    body = """
    for phase, loader in loaders.items():
        is_train = phase == "train"
        model.train(is_train)
        for x in loader:
            loss = model(x).pow(2).mean()
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
    assert len(_gl403(_src(body))) == 1


@pytest.mark.parametrize(
    "body",
    [
        # the torchvision transfer-learning tutorial
        """
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            for x in loaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    loss = model(x).pow(2).mean()
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
        """,
        # the forward written per phase, the 'val' one under no_grad
        """
        for phase in ("train", "val"):
            for x in loaders[phase]:
                if phase == "train":
                    out = model(x)
                else:
                    with torch.no_grad():
                        out = model(x)
                loss = out.pow(2).mean()
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
        # a context picked per phase
        """
        for phase in ("train", "val"):
            for x in loaders[phase]:
                with torch.no_grad() if phase != "train" else contextlib.nullcontext():
                    loss = model(x).pow(2).mean()
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
        """
        for phase in ("train", "val"):
            for x in loaders[phase]:
                with torch.inference_mode(phase != "train"):
                    loss = model(x).pow(2).mean()
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
        """
        for phase in ("train", "val"):
            torch.set_grad_enabled(phase == "train")
            for x in loaders[phase]:
                loss = model(x).pow(2).mean()
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
        # gradients accumulated in every phase, stepped in 'train' only (pytorch-i3d's shape)
        """
        for phase in ("train", "val"):
            for x in loaders[phase]:
                loss = model(x).pow(2).mean()
                loss.backward()
                if phase == "train":
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        # a gradient read in every phase
        """
        for phase in ("train", "val"):
            for x in loaders[phase]:
                loss = model(x).pow(2).mean()
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                print(model[0].weight.grad)
        """,
        # code the file does not define gets the model in the 'val' phase
        """
        for phase in ("train", "val"):
            for x in loaders[phase]:
                loss = model(x).pow(2).mean()
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                else:
                    contextlib.attack(model, x)
        """,
        # phases the rule does not know
        BUGGY.replace('("train", "val")', '("train", "stopping")'),
    ],
)
def test_grad_mode_per_phase_or_gradient_use_is_silent(body):
    assert _gl403(_src(body)) == []
