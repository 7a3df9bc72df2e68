"""Flow engine shapes from the fifteenth session."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL105", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


# a trainer whose loader is a property: the batches come from the DataLoader it returns
_TRAINER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = nn.Linear(4, 2).to(self.device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    {decorator}
    def loader(self):
        ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
        return DataLoader(ds, batch_size=8)

    def train_epoch(self):
        for x, y in self.loader{call}:
            {move}
            loss = nn.functional.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


Trainer().train_epoch()
"""


def test_property_getter_gives_the_loader():
    src = _TRAINER.format(decorator="@property", call="", move="pass")
    assert findings(src) == [("GL101", 21), ("GL101", 21)]  # x and y


def test_property_getter_hard_negative_batches_moved():
    src = _TRAINER.format(decorator="@property", call="", move="x, y = x.to(self.device), y.to(self.device)")
    assert findings(src) == []


def test_cached_property_getter():
    src = _TRAINER.format(decorator="@functools.cached_property", call="", move="pass")
    assert findings("import functools\n" + textwrap.dedent(src)) == [("GL101", 22), ("GL101", 22)]


def test_plain_method_still_needs_the_call():
    # without a decorator `self.loader` is the bound method, not its result: silent
    src = _TRAINER.format(decorator="", call="", move="pass")
    assert findings(src) == []


_NET_PROPERTY = """
import torch
import torch.nn as nn


class Wrapper:
    def __init__(self, device):
        self._net = nn.Linear(4, 2).to(device)

    @property
    def net(self):
        return self._net

    def predict(self, x):
        {move}
        return self.net(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(Wrapper(device).predict(torch.randn(3, 4)))
"""


def test_module_returned_by_a_property_is_called():
    assert findings(_NET_PROPERTY.format(move="pass")) == [("GL116", 16)]


def test_module_returned_by_a_property_hard_negative():
    assert findings(_NET_PROPERTY.format(move="x = x.to(device)")) == []


_DTYPE_PROPERTY = """
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    @property
    def dtype(self):
        return self.conv.weight.dtype

    def forward(self, x):
        mask = torch.ones(x.shape[0])
        return self.conv(x.type(self.dtype)), mask


model = Encoder().cuda()
print(model(torch.randn(2, 3, 8, 8).cuda()))
"""


def test_property_read_is_no_call_site_for_the_rules():
    # CLIP's `@property def dtype`: reading it must not record the attribute as a call site
    # (GL105/GL106 read call sites' arguments; they crashed on it)
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in ("GL105", "GL106", "GL116")]
    res = run_text("t.py", textwrap.dedent(_DTYPE_PROPERTY), rules, Options())
    assert [d.code for d in res.diagnostics if d.code == "GL000"] == []


_HUB = """
import torch
import torch.nn as nn

model = torch.hub.load("pytorch/vision", "{entry}", weights=None)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{move}
x, y = torch.randn(4, 3, 64, 64), torch.tensor([0, 1, 0, 1])
out = model(x.to(device))
loss = nn.functional.cross_entropy(out, y{ymove})
loss.backward()
"""


def test_hub_model_is_a_module():
    assert findings(_HUB.format(entry="resnet18", move="model.to(device)", ymove="")) == [("GL116", 10)]


def test_hub_model_hard_negatives():
    assert findings(_HUB.format(entry="resnet18", move="model.to(device)", ymove=".to(device)")) == []
    # never moved: the entry point may have placed it (YOLOv5's picks the GPU): no GL112 (the
    # model's output is where its input is, so the CPU target still meets it)
    assert findings(_HUB.format(entry="resnet18", move="", ymove=".to(device)")) == []
    assert findings(_HUB.format(entry="resnet18", move="", ymove="")) == [("GL116", 10)]
    # an entry point that names a tokenizer is not taken for a model
    assert findings(_HUB.format(entry="tokenizer", move="model.to(device)", ymove="")) == []


_CALL_OVERRIDE = """
import torch
import torch.nn as nn


class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.MSELoss()

    def get_target_tensor(self, prediction, target_is_real):
        return torch.ones(prediction.shape[0], 1{kw}) if target_is_real else torch.zeros(prediction.shape[0], 1{kw})

    def {entry}(self, prediction, target_is_real):
        target_tensor = self.get_target_tensor(prediction, target_is_real)
        return self.loss(prediction, target_tensor)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
D = nn.Linear(4, 1).to(device)
crit = GANLoss().to(device)
loss = crit(D(torch.randn(8, 4, device=device)), True)
loss.backward()
"""


def test_call_override_is_followed_and_the_loss_inputs_meet():
    # SwapNet's GANLoss overrides `__call__`: calling the instance runs it, not forward; the
    # stateless MSELoss then meets device predictions with a CPU target
    assert findings(_CALL_OVERRIDE.format(entry="__call__", kw="")) == [("GL116", 16)]


def test_call_override_hard_negative_target_on_the_prediction_device():
    assert findings(_CALL_OVERRIDE.format(entry="__call__", kw=", device=prediction.device")) == []


_FACTORY_ALIAS = """
import torch
import torch.nn as nn


def noise_like(x, normal=False):
    rand_func = torch.randn if normal else torch.rand
    return x + rand_func(x.shape[0], 4{kw})


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4, device=device)
print(model(noise_like(x)))
"""


def test_torch_factory_named_through_a_conditional_alias():
    assert findings(_FACTORY_ALIAS.format(kw="")) == [("GL116", 8)]


def test_torch_factory_alias_hard_negative_with_device():
    assert findings(_FACTORY_ALIAS.format(kw=", device=x.device")) == []


_MAX = """
import torch
import torch.nn as nn


def contrast(x, nk=4):
    vmin, vmax = x.min(), x.max()
    mu = torch.rand(nk{kw}) * (vmax - vmin) + vmin
    return mu.sort().values


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
out = model(torch.randn(8, 4, device=device))
print(contrast(out))
_, pred = torch.max(out, 1)
print(pred == torch.tensor([0, 1, 2, 3, 0, 1, 2, {last}]){move})
"""


def test_full_reduction_max_is_a_tensor_and_max_with_dim_a_pair():
    # `x.max()` is the 0-dim maximum (a tensor, not a (values, indices) pair): cornucopia#21's
    # `torch.rand(nk) * (vmax - vmin)`; `torch.max(out, 1)` is a pair on out's device
    assert findings(_MAX.format(kw="", last="3", move="")) == [("GL116", 8), ("GL116", 17)]


def test_max_hard_negatives():
    assert findings(_MAX.format(kw=", device=x.device", last="3", move=".to(device)")) == []


_TYPE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
image = torch.randint(0, 256, (3, 4)).type({t}) / 255.0
print(model(image))
"""


def test_legacy_cpu_type_gives_a_host_tensor():
    # SER-FIQ: `image.type(torch.FloatTensor) / 255.0` fed to the model on the GPU
    assert findings(_TYPE.format(t="torch.FloatTensor")) == [("GL116", 8)]
    assert findings(_TYPE.format(t="'torch.FloatTensor'")) == [("GL116", 8)]


def test_legacy_cuda_type_is_a_move():
    assert findings(_TYPE.format(t="torch.cuda.FloatTensor")) == []


_STRICT = """
import math
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
out = model(torch.randn(3, 4, device=device))
scale = out.mean()
print(torch.clamp(scale, max={bound}))
print(torch.stack([scale, {other}]))
"""


def test_zero_dim_cpu_tensor_in_clamp_bound_and_stack():
    # Swin V2's `torch.clamp(logit_scale, max=torch.log(torch.tensor(100.0)))`, UniPC's stacked
    # 0-dim ratios: no CPU-scalar exemption for clamp bounds and concatenations
    src = _STRICT.format(bound="torch.log(torch.tensor(100.0))", other="torch.tensor(1.0)")
    assert findings(src) == [("GL116", 10), ("GL116", 11)]


def test_strict_operations_hard_negatives():
    src = _STRICT.format(bound="math.log(100.0)", other="torch.tensor(1.0, device=device)")
    assert findings(src) == []
    # the arithmetic exemption stays: a 0-dim CPU tensor times a device tensor is allowed
    assert findings(_STRICT.format(bound="4.6", other="scale") + "print(scale * torch.tensor(2.0))\n") == []


_JOINED_CLOSURE = """
import numpy as np


def assign(val_split):
    def _assign(value):
        return "val" if value in val_split else "train"

    return _assign


def process(dataset, files):
    get_split = None
    if dataset == "daps":
        get_split = assign(["f2"])
    if get_split is None:
        get_split = assign(files[:1])
    for x in files:
        print(x, get_split(x))


process("daps", np.array(["f2", "m1"]))
"""


def test_function_joined_on_two_paths_is_still_callable():
    # descript-audio-codec organize_daps.py (PRECISION16 E1): the join of two values of one
    # function lost it, and calling it crashed the engine (GL000 internal error in GL109)
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(_JOINED_CLOSURE), [reg.by_code(c)() for c in ("GL109", "GL116")], Options())
    assert res.diagnostics == []


_STORED = """
import torch
import torch.nn as nn


class Infer:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def run(self, x):
        {body}
        return self.model(x)


class Sub(Infer):
    def predict(self, x):
        return self.run(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2){move}
runner = Sub(net, device)
{after}
print(runner.predict(torch.randn(3, 4){xmove}))
"""


def test_module_stored_by_an_inherited_constructor_keeps_its_placement():
    # BadAgent (fixtures20 J20-2): `Sub(model, ...)` runs the base's `__init__`, which only stores
    # the model: it stays where the caller moved it, and the CPU input meets it
    src = _STORED.format(body="pass", move=".to(device)", after="", xmove="")
    assert findings(src) == [("GL116", 13)]


def test_stored_module_hard_negatives():
    # the input moved
    assert findings(_STORED.format(body="pass", move=".to(device)", after="", xmove=".to(device)")) == []
    # the class moves the model itself, or an alias of it
    assert findings(_STORED.format(body="self.model.to(x.device)", move=".to(device)", after="", xmove="")) == []
    assert findings(_STORED.format(body="m = self.model; m.cpu()", move=".to(device)", after="", xmove="")) == []
    # moved after the wrapper was built, by the caller's own name
    assert findings(_STORED.format(body="pass", move="", after="net.to(device)", xmove=".to(device)")) == []


_SENTINEL = """
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTMCell(4, 4)

    def forward(self, x, state={state}):
        if len(state):
            h, c = self.rnn(x, (state[0], state[1]))
        else:
            h, c = self.rnn(x)
        return h, torch.stack([h, c])


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dec = Dec().to(device)
x = torch.randn(2, 4, device=device)
h, state = dec(x, {arg})
"""


def test_empty_sentinel_state_is_no_operand():
    # silero-vad's decoder (fixtures21 F21-1): `torch.zeros(0)` means "no state yet"
    assert findings(_SENTINEL.format(state="torch.zeros(0)", arg="torch.zeros(0)")) == []


def test_non_empty_host_state_still_reports():
    assert findings(_SENTINEL.format(state="None", arg="torch.zeros(2, 2, 4)")) == [("GL116", 22)]


_PLAIN_LISTS = """
import torch
import torch.nn as nn


def masks_of(dones):
    return 1 - torch.tensor(dones, dtype=torch.float).unsqueeze(1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
h = model(torch.randn(3, 4, device=device))
print(h * masks_of({dones}))
"""


def test_list_times_int_and_tuple_of_comparisons_are_plain_lists():
    # rl-starter-files (fixtures20 J20-5): `[False] * n` and `tuple(a | b for ...)` of plain values
    # give a host tensor through `torch.tensor`
    assert findings(_PLAIN_LISTS.format(dones="[False] * 3")) == [("GL116", 13)]
    assert findings(_PLAIN_LISTS.format(dones="tuple(x > 1 for x in range(3))")) == [("GL116", 13)]


def test_unknown_sequence_stays_silent():
    assert findings(_PLAIN_LISTS.format(dones="some_env.dones")) == []


_CUDA_DEVICE_INDEX = """
import torch
import torch.nn as nn


def load(cuda_device):
    model = nn.Linear(4, 2)
    if cuda_device {cmp}:
        model.cuda(cuda_device)
    return model


cuda_device = 0 if torch.cuda.is_available() else -1
model = load(cuda_device)
print(model(torch.randn(3, 4)))
"""


def test_device_index_test_is_a_gpu_guard():
    # AllenNLP's `cuda_device = 0 if available else -1`, `if cuda_device >= 0: model.cuda(...)`
    # (OpenBookQA, fixtures20 J20-3): on a GPU machine the model is moved, its CPU input fails
    assert findings(_CUDA_DEVICE_INDEX.format(cmp=">= 0")) == [("GL116", 15)]
    assert findings(_CUDA_DEVICE_INDEX.format(cmp="!= -1")) == [("GL116", 15)]


def test_device_index_test_hard_negative():
    assert findings(_CUDA_DEVICE_INDEX.format(cmp="< 0")) == []


_SELF_MOVING = """
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        {body}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Classifier(device).to(device)
print(model(torch.randn(2, 4)))
"""


def test_module_moving_its_own_input_is_no_mismatch():
    # fixtures22 F22-3: forward puts its input where it needs it before any other use
    assert findings(_SELF_MOVING.format(body="x = x.to(self.device)\n        return self.fc(x)")) == []
    assert findings(_SELF_MOVING.format(body="return self.fc(x.to(self.device))")) == []


def test_module_using_its_input_unmoved_still_reports():
    assert findings(_SELF_MOVING.format(body="return self.fc(x)")) == [("GL116", 18)]
    # a use before the move counts
    assert findings(_SELF_MOVING.format(body="y = x * 2\n        x = x.to(self.device)\n        return self.fc(x + y)")) == [("GL116", 20)]
