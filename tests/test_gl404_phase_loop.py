"""GL404 on a shared phase loop (tests/fixtures_pending/README.md G47-1, ZOO_Attack_PyTorch#7):
`for phase in ("train", "val"):` whose body backpropagates and steps only `if phase == "train":`
while the model is called in every phase. On the base the loop was a training loop and nothing
else: the 'val' phase running in training mode went unreported. Now reported (no fix) when no
mode switch depends on the phase; silent on `if phase == "train": model.train() else:
model.eval()`, `model.train(phase == "train")`, `model.train(is_train)`, an `eval()` before the
loop, a backward outside the phase test, and phases the rule does not know."""

from __future__ import annotations

import textwrap

import pytest
from fixture_support import check

HEAD = """
import contextlib
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loaders = {x: [torch.randn(8, 4)] for x in ["train", "val"]}
"""


def _src(body: str, head: str = HEAD) -> str:
    return textwrap.dedent(head) + "for epoch in range(3):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def _gl404(src: str):
    return [d for d in check(src, {"GL404"}) if d.code == "GL404"]


def _line(src: str, text: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


BUGGY = """
for phase in ("train", "val"):
    for x in loaders[phase]:
        loss = model(x).pow(2).mean()
        if phase == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_shared_phase_loop_without_mode_switch_is_reported_at_the_batch_loop():
    src = _src(BUGGY)
    found = _gl404(src)
    assert [d.line for d in found] == [_line(src, "for x in loaders[phase]")]
    assert "'val' phase" in found[0].message and 'model.train(phase == "train")' in found[0].message
    assert found[0].fix is None


@pytest.mark.parametrize(
    "iterable",
    ['["train", "valid"]', "loaders", "loaders.keys()", '["train", "val"] + (["test"] if epoch else [])'],
)
def test_phase_names_from_lists_dict_keys_and_concatenations(iterable):
    assert len(_gl404(_src(BUGGY.replace('("train", "val")', iterable)))) == 1


def test_items_loop_and_unconditional_train_call():
    body = """
    for phase, loader in loaders.items():
        model.train()
        for x in loader:
            loss = model(x).pow(2).mean()
            if phase == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
    assert len(_gl404(_src(body))) == 1  # `model.train()` in every phase: 'val' runs in training mode


@pytest.mark.parametrize(
    "switch",
    [
        'if phase == "train":\n    model.train()\nelse:\n    model.eval()',
        'model.train(phase == "train")',
        'model.train(mode=phase == "train")',
        'is_train = phase == "train"\nmodel.train(is_train)',
        'model.train() if phase == "train" else model.eval()',
        # (the next epoch's 'train' phase then runs in eval mode: the never-undone finding, not this one)
        'if phase != "train":\n    model.eval()',
        "model.eval()",  # an eval in every phase: not this rule's case
    ],
)
def test_mode_switch_that_depends_on_the_phase_is_silent(switch):
    body = BUGGY.replace("    for x in loaders[phase]:", textwrap.indent(switch, "    ") + "\n    for x in loaders[phase]:", 1)
    assert [d for d in _gl404(_src(body)) if "phase loop" in d.message] == []


def test_backward_outside_the_phase_test_is_not_a_shared_evaluation():
    body = """
    for phase in ("train", "val"):
        for x in loaders[phase]:
            loss = model(x).pow(2).mean()
            loss.backward()
            if phase == "train":
                optimizer.step()
                optimizer.zero_grad()
    """
    assert _gl404(_src(body)) == []


def test_unknown_phase_names_and_eval_before_the_loop_are_silent():
    assert _gl404(_src(BUGGY.replace('("train", "val")', '("train", "stopping")'))) == []
    assert _gl404(_src("model.eval()\n" + BUGGY)) == []


def test_mode_insensitive_model_is_silent():
    head = HEAD.replace("nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 1))", "nn.Linear(4, 1)")
    assert _gl404(_src(BUGGY, head)) == []


def test_tutorial_shape_is_silent():
    body = """
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
    """
    assert _gl404(_src(body)) == []


def test_detection_losses_read_in_the_val_phase_are_silent():
    # torchvision's detection models return their losses only in training mode: a phase loop that
    # wants the 'val' losses keeps training mode on purpose (its batch norms are frozen)
    head = HEAD.replace(
        "nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 1))",
        "torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, num_classes=3)",
    ).replace("import torch\n", "import torch\nimport torchvision\n", 1)
    body = """
    for phase in ["train", "val"]:
        for images, targets in loaders[phase]:
            loss_dict = model(images, targets)
            losses = sum(loss for loss in loss_dict.values())
            if phase == "train":
                optimizer.zero_grad()
                losses.backward()
                optimizer.step()
    """
    assert _gl404(_src(body, head)) == []
    # the same loop over a model of another file, its output read as a mapping of losses
    head = HEAD.replace("nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 1))", "Detector()")
    head = head.replace("import torch\n", "import torch\nfrom detector import Detector\n", 1) + "model.eval()\nmodel.train()\n"
    assert _gl404(_src(body, head)) == []
    assert len(_gl404(_src(body.replace("loss_dict.values()", "[loss_dict]"), head))) == 1


def test_mode_switch_handed_to_apply_is_silent():
    head = HEAD + "\n\ndef set_bn_eval(m):\n    if isinstance(m, nn.BatchNorm1d):\n        m.eval()\n\n\nmodel.train()\n"
    body = BUGGY.replace("    for x in loaders[phase]:", '    if phase != "train":\n        model.apply(set_bn_eval)\n    for x in loaders[phase]:', 1)
    assert _gl404(_src(body, head)) == []
    assert len(_gl404(_src(BUGGY, head))) == 1  # the same loop without the `apply`: reported
