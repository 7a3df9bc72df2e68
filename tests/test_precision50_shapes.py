"""Shapes of the fiftieth precision pass (benchmarks/PRECISION50.md): each false positive fixed in
a rule (P50-2 .. P50-5, ...), next to the look-alikes that must stay reported. The snippets are our
own minimal code in the shape of the real one; their findings are known by reading them."""

from __future__ import annotations

import re
import textwrap

from cli_support import gl, write


def lines(tmp_path, code: str, source: str) -> list[int]:
    write(tmp_path, {"t.py": textwrap.dedent(source)})
    r = gl(["check", "--no-cache", "--select", code, "t.py"], tmp_path)
    return [int(m.group(1)) for m in re.finditer(rf"^t\.py:(\d+):\d+: {code}", r.stdout, re.MULTILINE)]


# P50-2 (GL101): `self.forward(input)` in the model's own loop, forward copies its input to the device
SELF_FORWARD = """\
    import torch as T
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.device = T.device("cuda" if T.cuda.is_available() else "cpu")
            self.fc = nn.Linear(4, 3)
            self.to(self.device)

        def forward(self, x):
            {first}
            return self.fc(x)

        def fit(self, loader):
            for xb, yb in loader:
                out = self.forward(xb)
                print(out.sum().item(), yb.shape)

    Net().fit(DataLoader(TensorDataset(T.randn(8, 4), T.zeros(8)), batch_size=4))
"""


def test_gl101_forward_copying_its_input_to_device_is_silent(tmp_path):
    src = SELF_FORWARD.format(first="x = T.tensor(x).to(self.device)")
    assert lines(tmp_path, "GL101", src) == []


def test_gl101_forward_moving_a_dtype_copy_of_its_input_is_silent(tmp_path):
    src = SELF_FORWARD.format(first="x = x.float().to(self.device)")
    assert lines(tmp_path, "GL101", src) == []


def test_gl101_forward_moving_something_else_is_reported(tmp_path):
    src = SELF_FORWARD.format(first="other = T.tensor(0).to(self.device)")
    assert lines(tmp_path, "GL101", src) == [18]


def test_gl101_forward_not_moving_is_reported(tmp_path):
    src = SELF_FORWARD.format(first="x = x.float()")
    assert lines(tmp_path, "GL101", src) == [18]


# P50-3 (GL403): the methods of a model whose base is an nn.Module of another module of the project
IMPORTED_BASE = """\
    import torch
    import torch.nn as nn
    from proj.models.base import {base}

    class Captioner({base}):
        def __init__(self):
            super().__init__()
            self.visual_encoder = nn.Linear(8, 8)
            for p in self.visual_encoder.parameters():
                p.requires_grad = False
            self.visual_encoder = self.visual_encoder.eval()
            self.proj = nn.Linear(8, 4)

{forward}
        def predict_class(self, images):
            results = []
            for i in range(images.size(0)):
                results.append(self.proj(self.visual_encoder(images[i:i + 1])).argmax(-1))
            return torch.cat(results)
"""
FORWARD = """\
        def forward(self, samples):
            return self.proj(self.visual_encoder(samples["image"])).sum()
"""


def test_gl403_method_of_model_with_imported_base_is_silent(tmp_path):
    assert lines(tmp_path, "GL403", IMPORTED_BASE.format(base="Blip2Base", forward=FORWARD)) == []


def test_gl403_class_of_imported_base_without_forward_is_reported(tmp_path):
    # no `forward` of its own: nothing says it is a model rather than, say, an evaluator
    assert lines(tmp_path, "GL403", IMPORTED_BASE.format(base="Evaluator", forward="")) == [18, 18]


def test_gl403_script_eval_loop_over_such_a_model_is_reported(tmp_path):
    src = IMPORTED_BASE.format(base="Blip2Base", forward=FORWARD).replace(
        "            for p in self.visual_encoder.parameters():\n"
        "                p.requires_grad = False\n"
        "            self.visual_encoder = self.visual_encoder.eval()\n", "") + """
    model = Captioner()
    model.eval()
    preds = []
    for i in range(4):
        preds.append(model({"image": torch.randn(2, 8)}))
"""
    assert lines(tmp_path, "GL403", src) == [24]


# P50-4 (GL403): a helper whose gradient branch the call's string argument rules out
FEED_DATA = """\
    import torch

    class TrainerSR:
        def feed_data(self, data, phase="train"):
            if phase == "train":
                pred = self.model(data)
            elif phase == "val":
                {val}
            return pred

        def validation(self, loader):
            self.model.eval()
            out = []
            for data in loader:
                pred = self.feed_data(data, phase={arg})
                pred.clamp_(0.0, 1.0)
                out.append(pred)
            self.model.train()
            return out
"""
VAL_NO_GRAD = """with torch.no_grad():
                    pred = self.model(data)"""


def test_gl403_val_phase_of_helper_under_no_grad_is_silent(tmp_path):
    assert lines(tmp_path, "GL403", FEED_DATA.format(val=VAL_NO_GRAD, arg="'val'")) == []


def test_gl403_train_phase_of_helper_in_eval_loop_is_reported(tmp_path):
    assert lines(tmp_path, "GL403", FEED_DATA.format(val=VAL_NO_GRAD, arg="'train'")) == [16]


def test_gl403_val_phase_without_no_grad_is_reported(tmp_path):
    assert lines(tmp_path, "GL403", FEED_DATA.format(val="pred = self.model(data)", arg="'val'")) == [15]


def test_gl403_unknown_phase_argument_is_reported(tmp_path):
    assert lines(tmp_path, "GL403", FEED_DATA.format(val=VAL_NO_GRAD, arg="self.phase")) == [16]


# P50-5 (GL403): a model whose forward unrolls one of higher's differentiable optimizers
HIGHER = """\
    import higher
    import torch
    import torch.nn as nn

    class Unroll(nn.Module):
        def __init__(self):
            super().__init__()
            self.energy = nn.Linear(7, 1)

        def forward(self, x):
            y = torch.zeros(x.size(0), 3, device=x.device, requires_grad=True)
            {inner}
            return y

    def test(model, loader):
        model.eval()
        correct = 0
        for data, target in loader:
            output = model(data)
            correct += (output.argmax(1) == target).sum().item()
        return correct
"""
INNER_HIGHER = """inner = higher.get_diff_optim(torch.optim.SGD([y], lr=0.1), [y], device=x.device)
            for _ in range(3):
                y, = inner.step(self.energy(torch.cat([x, y], 1)).sum(), params=[y])"""


def test_gl403_model_unrolling_higher_optimizer_is_silent(tmp_path):
    assert lines(tmp_path, "GL403", HIGHER.format(inner=INNER_HIGHER)) == []


def test_gl403_model_without_inner_optimizer_is_reported(tmp_path):
    src = HIGHER.format(inner="y = y + self.energy(torch.cat([x, y], 1))")
    assert lines(tmp_path, "GL403", src) == [19]


# P50-6 (GL402): another item of the tuple the loss is unpacked from
LOSS_TUPLE = """\
    from typing import Tuple

    def train(model, optimizer, batches):
        total, average_over = 0.0, 0
        for batch in batches:
            optimizer.zero_grad()
            loss = model.forward_loss(batch)
            if isinstance(loss, Tuple):
                average_over += loss[{acc}]
                {unpack}
            loss.backward()
            total += loss.item()
            optimizer.step()
        return total / max(average_over, 1)
"""


def test_gl402_count_item_of_loss_tuple_is_silent(tmp_path):
    assert lines(tmp_path, "GL402", LOSS_TUPLE.format(acc=1, unpack="loss = loss[0]")) == []


def test_gl402_loss_item_of_loss_tuple_is_reported(tmp_path):
    assert lines(tmp_path, "GL402", LOSS_TUPLE.format(acc=0, unpack="loss = loss[0]")) == [9]


def test_gl402_item_of_backpropagated_tuple_without_unpacking_is_reported(tmp_path):
    src = LOSS_TUPLE.format(acc=1, unpack="pass").replace("loss.backward()", "loss[1].backward()")
    assert lines(tmp_path, "GL402", src) == [9]
