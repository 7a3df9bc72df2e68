"""Engine items, nineteenth session.

PRECISION20 A4 (dvgodoy/PyTorchStepByStep, Chapter 10's `EncoderDecoderTransf`): `__init__` stores a
host mask built by a helper method, `forward` re-binds it first (`self.trg_masks =
self.trg_masks.type_as(X).bool()`, on the input's device) and then calls `self.predict(...)`, a method
written above `forward` that reads `self.trg_masks`. Methods were recorded in source order and read
`self` attributes joined over the methods recorded so far, and a method summarised for a call read
the class's attributes rather than the calling method's bindings: `predict` saw only the host mask
and a mismatch was reported on correct code (GL116 in the notebook, GL106 here). Now a method called
as `self.meth(...)` reads the attributes its caller re-bound as the caller left them, and a class
one of whose methods read an attribute that another method, recorded later, sets otherwise is
recorded again with the joined value (what the partial pass found is dropped). A method's own later
re-binding does not count: `forward` reading the `__init__` state before replacing it (xLSTM's
`self.ht_1`, tests/fixtures/GL106/xlstm_init_states_helper_not_buffers.py) is still reported.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

A4 = """
import torch
import torch.nn as nn

device = 'cuda' if torch.cuda.is_available() else 'cpu'


class DecoderLayer(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.attn = nn.Linear(d_model, d_model)

    def forward(self, query, target_mask=None):
        scores = query @ self.attn(query).transpose(-2, -1)
        return scores.masked_fill(target_mask == 0, -1e9)


class Model(nn.Module):
    def __init__(self, target_len):
        super().__init__()
        self.decoder = DecoderLayer(8)
        self.trg_masks = self.subsequent_mask(target_len)
        self.proj = nn.Linear(2, 8)

    @staticmethod
    def subsequent_mask(size):
        return 1 - torch.triu(torch.ones(1, size, size), diagonal=1)

    def predict(self, x):
        return self.decoder(self.proj(x), target_mask=self.trg_masks)

    def forward(self, x):
        self.trg_masks = self.trg_masks.type_as(x).bool()
        if self.training:
            return self.decoder(self.proj(x), target_mask=self.trg_masks)
        return self.predict(x)


model = Model(2).to(device)
model.eval()
out = model(torch.randn(4, 2, 2).to(device))
"""


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("seq2seq.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


def test_a_method_called_by_forward_reads_the_mask_forward_re_bound():
    assert _lines(A4, "GL106", "GL116") == []


def test_a_mask_forward_does_not_re_bind_is_still_on_the_host():
    src = A4.replace("        self.trg_masks = self.trg_masks.type_as(x).bool()",
                     "        mask = self.trg_masks.type_as(x).bool()")
    assert src != A4
    assert _lines(src, "GL106", "GL116") == [(22, "GL106")]


def test_forward_reading_its_state_before_replacing_it_is_still_reported():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.gate = nn.Linear(d, d)
            self.init_states(d)

        def init_states(self, d):
            self.h = torch.zeros(1, d)

        def forward(self, x):
            out = self.gate(x) + self.h
            self.h = out.mean(0, keepdim=True).detach()
            return out


    model = Block(4).to(device)
    y = model(torch.randn(2, 4).to(device))
    """
    assert (15, "GL106") in _lines(src, "GL106", "GL116")


# VocGAN#24 (tests/fixtures/GL402/vocgan_train_adv_loss_list_before_and_after_disc_start.py): the
# adversarial loss is the float 0.0 until the discriminator starts and a tensor with its graph
# after; appended to a list every step, it keeps each step's graph alive. The join of a Python
# number and a tensor that holds a graph was "unknown"; it is now "a number, or a tensor that holds
# a graph", which GL402 reports with `float(...)` (`.item()` would fail on the number's paths).
GAN = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gen = nn.Linear(4, 4).to(device)
disc = nn.Linear(4, 1).to(device)
opt = torch.optim.Adam(gen.parameters())
criterion = nn.MSELoss()
adv_history = []
for step in range(20):
    x = torch.randn(8, 4, device=device)
    fake = gen(x)
    loss = criterion(fake, x)
    adv_loss = 0.0
    if step > 5:
        score = disc(fake)
        adv_loss = criterion(score, torch.ones_like(score))
        loss = loss + 0.1 * adv_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    adv_history.append(adv_loss)
"""


def test_a_number_or_a_graph_appended_each_step_is_reported_with_float():
    assert _lines(GAN, "GL402") == [(23, "GL402")]
    rule = Registry.load().by_code("GL402")()
    res = run_text("gan.py", textwrap.dedent(GAN), [rule], Options(fix=True))
    assert "    adv_history.append(float(adv_loss))\n" in res.text


def test_a_number_or_a_detached_value_is_not_reported():
    for repl in ("criterion(score, torch.ones_like(score)).item()",
                 "criterion(score, torch.ones_like(score)).detach()"):
        src = GAN.replace("criterion(score, torch.ones_like(score))\n", repl + "\n")
        assert src != GAN
        assert _lines(src, "GL402") == []


# PyPOTS#10 (tests/fixtures/GL109/pypots_best_loss_np_equal_device_tensor.py): `self.best_loss =
# float("inf")` in `__init__`, `if mean_val_loss < self.best_loss: self.best_loss = mean_val_loss` (a
# device tensor) in the epoch loop, then `np.equal(self.best_loss, float("inf"))`. Two gaps: a `self`
# attribute set on one branch (or in a loop's body) joined with "unknown" on the other path instead
# of what the method read before; and a number joined with a tensor was unknown. Now the other path
# holds the value read before, and the join is "a number or a tensor on the accelerator".
BEST = """
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Trainer:
    def __init__(self):
        self.best_loss = float("inf")

    def fit(self, losses):
        for value in losses:
            val_loss = torch.tensor(value).to(device)
            if val_loss < self.best_loss:
                self.best_loss = val_loss
        if np.equal(self.best_loss, float("inf")):
            raise ValueError("no finite loss")


def fit(losses):
    best = float("inf")
    for value in losses:
        val_loss = torch.tensor(value).to(device)
        if val_loss < best:
            best = val_loss
    return np.isinf(best)
"""


def test_a_number_or_a_device_tensor_given_to_numpy():
    assert _lines(BEST, "GL109") == [(17, "GL109"), (27, "GL109")]


def test_a_number_or_a_host_number_is_silent():
    src = BEST.replace("= val_loss\n", "= val_loss.item()\n")
    assert src.count(".item()") == 2
    assert _lines(src, "GL109") == []
    src = BEST.replace(".to(device)", "")
    assert _lines(src, "GL109") == []


# PRECISION21 A2 (black0017/MedicalZooPytorch, 12 GL116 false positives in lib/medzoo/*.py): each
# model, whose base `BaseModel` is imported, has a `test(self, device='cpu')` self-check that runs
# `self.forward(torch.rand(...))` on a host sample and only then moves itself. The instance is
# wherever the caller left it (the file never calls `test()`), but its submodules were "wherever
# the module is", which meets the host sample as a mismatch. A `self.forward(...)` from another
# method of the class, on an instance not known to be on an accelerator, is no call site and
# reports nothing; an instance of such a class moved with the base's `.to()` is where it was moved.
MEDZOO = """
import torch
import torch.nn as nn
from lib.medzoo.BaseModelClass import BaseModel


class DenseNet3D(BaseModel):
    def __init__(self, in_channels=1, classes=3):
        super().__init__()
        self.input_channels = in_channels
        self.num_classes = classes
        self.features = nn.Conv3d(in_channels, 4, kernel_size=3, padding=1)
        self.classifier = nn.Conv3d(4, classes, kernel_size=1)

    def forward(self, x):
        return self.classifier(self.features(x))

    def test(self, dev='cpu'):
        input_tensor = torch.rand(1, self.input_channels, 12, 12, 12)
        out = self.forward(input_tensor)
        assert out.shape[1] == self.num_classes
        print(self.to(torch.device(dev)))
"""


def test_a_self_check_forward_on_a_host_sample_is_silent():
    assert _lines(MEDZOO, "GL116", "GL101", "GL112") == []


def test_a_self_check_of_an_instance_moved_first_is_reported():
    src = MEDZOO + 'model = DenseNet3D()\nmodel.to("cuda")\nmodel.test()\n'
    assert _lines(src, "GL116")


# PRECISION21 A1 (Holmeyoung/crnn-pytorch train.py: `import ... as net` at the top, `def val(net,
# criterion):` with `net.eval()` inside): the ScriptModel resolved the parameter `net` through the
# import alias, so `net.eval()` was no mode switch and GL404 reported the validation loop. A name a
# function binds itself (a parameter, an assignment) is that local in the function, not the import.
CRNN = """
import torch
import torch.nn as nn
import json as net

crnn = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
optimizer = torch.optim.SGD(crnn.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(3)]


def val(net, criterion):
    net.eval()
    n_correct = 0
    with torch.no_grad():
        for x, y in loader:
            n_correct += (crnn(x).argmax(1) == y).sum().item()
    return n_correct


for epoch in range(2):
    crnn.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(crnn(x), y).backward()
        optimizer.step()
    print(val(crnn, criterion))
"""


def test_a_parameter_named_like_an_import_alias_is_the_parameter():
    assert _lines(CRNN, "GL404") == []
    from gpulint.model import ScriptModel
    import libcst as cst

    src = textwrap.dedent(CRNN)
    m = ScriptModel(cst.parse_module(src), src)
    names = [n for n in m.nodes if isinstance(n, cst.Name) and n.value == "net"]
    quals = [m.qualname(n) for n in names]
    assert quals[0] == "json" and quals[1:] == [None, None]  # the import itself, then the parameter and its use


def test_the_mask_re_bound_by_forward_from_an_input_of_unknown_place():
    # the notebook's shape: the model is trained by an imported trainer, so `forward`'s input (and
    # the mask it re-binds from it) is of unknown place; `predict`, which only `forward` calls
    # after re-binding it, does not read the `__init__` mask either
    src = A4.split("model = Model(2)")[0] + "from stepbystep import StepByStep\nsbs = StepByStep(Model(2).to(device))\n"
    assert _lines(src, "GL106", "GL116") == []


# fixtures28 F28-2 (pytorch/vision#9414, tests/fixtures/GL116/ssd_default_box_generator_wh_pairs_on_host.py):
# `_generate_wh_pairs(self, num_outputs, dtype=torch.float32, device=torch.device("cpu"))` is
# called without `device`, so its pairs are on the host, and `torch.cat((shifts, wh_pairs))` meets
# the feature maps' device. A parameter's `torch.device("cpu")` default was not a constant (the
# name `device` then read as the configured accelerator), a factory given that default counted as
# "placed on the CPU on purpose", `.to(dtype)` of a parameter so named as a move to an unknown
# device, and `(shift_x, shift_y) * k` as unknown.
PAIRS = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_pairs(n, dtype=torch.float32, device=torch.device("cpu")):
    return torch.ones(n, 2, dtype=dtype, device=device)


def boxes(shifts, dtype):
    pairs = make_pairs(shifts.shape[0])
    grid = torch.stack((shifts[:, 0].to(dtype), shifts[:, 1].to(dtype)) * 1, dim=-1)
    return torch.cat((grid, pairs), dim=1)


print(boxes(torch.zeros(4, 2, device=device), torch.float32).shape)
"""


def test_a_factory_left_to_its_cpu_default_meets_device_tensors():
    assert _lines(PAIRS, "GL116") == [(14, "GL116")]


def test_the_device_passed_or_a_cpu_chosen_at_the_call_is_silent():
    src = PAIRS.replace("make_pairs(shifts.shape[0])", "make_pairs(shifts.shape[0], device=shifts.device)")
    assert src != PAIRS
    assert _lines(src, "GL116") == []
    src = PAIRS.replace("make_pairs(shifts.shape[0])", 'make_pairs(shifts.shape[0], device="cpu")')
    assert _lines(src, "GL116") == []  # a CPU named at the call: on purpose (as before)


# fixtures29 E29-3 (GL206 false positive; TripoSF/TRELLIS-style `if use_fp16: self.blocks.half()` in
# `__init__`): the half conversion in the constructor counted for every construction, also
# `Encoder(use_fp16=False)` and `Encoder()`, where that branch never runs.
FP16 = """
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, use_fp16=False):
        super().__init__()
        self.dtype = torch.float16 if use_fp16 else torch.float32
        self.blocks = nn.Linear(4, 4)
        if use_fp16:
            self.blocks.half()

    def forward(self, x):
        return self.blocks(x.type(self.dtype)).float()


model = Encoder({arg})
opt = torch.optim.AdamW(model.parameters())
for step in range(3):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_half_conversion_under_a_constructor_flag_left_false_is_no_conversion():
    assert _lines(FP16.replace("{arg}", "use_fp16=False"), "GL206") == []
    assert _lines(FP16.replace("{arg}", ""), "GL206") == []
    assert _lines(FP16.replace("{arg}", "use_fp16=True"), "GL206") == [(12, "GL206")]


# precision21 N1 (GL112 false positive; TensoRF-style fields built as `Field(8, device)`): a module
# class of the file whose constructor takes `device` was placed by `device=device` only, not by the
# same argument given by position.
FIELD = """
import torch
import torch.nn as nn


class Field(nn.Module):
    def __init__(self, n, device):
        super().__init__()
        self.grid = nn.Parameter(torch.randn(n, 3, device=device))
        self.head = nn.Linear(3, 1).to(device)

    def forward(self, x):
        return self.head(x * self.grid.mean(0))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
field = Field(8, device)
print(field(torch.randn(4, 3).to(device)).shape)
"""


def test_a_constructor_given_its_device_by_position_places_the_module():
    assert _lines(FIELD, "GL112") == []
    assert _lines(FIELD.replace("Field(8, device)", "Field(8, device=device)"), "GL112") == []


# fixtures29 E29-1 (FedAgg#2, tests/fixtures/GL403/fedagg_test_on_cloud_without_eval_or_no_grad.py):
# a model held by an instance of a plain class of the file (`class Node: def __init__(self, model):
# self.model = model`) and read back as `root.model` was of unknown kind unless it was known to be
# on an accelerator, so `test_on_cloud(root.model, loader)` was no evaluation of a model (GL403 and
# GL404 missed). It is that module (its class, its layers), wherever it is.
NODE = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    def forward(self, x):
        return self.fc(x)

class Node:
    def __init__(self, model):
        self.model = model

def test_on_cloud(cloud_model, loader):
    for x, y in loader:                      # GL404 expected (no eval)
        out = cloud_model(x)                 # GL403 expected (no no_grad)
        print((out.argmax(1) == y).float().mean().item())

loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=8)
root = Node(Net())
opt = torch.optim.SGD(root.model.parameters(), lr=0.1)
for r in range(2):
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(root.model(x), y).backward()
        opt.step()
    test_on_cloud(root.model, loader)
"""


def test_a_module_held_by_a_plain_holder_is_still_a_module():
    assert _lines(NODE, "GL403", "GL404") == [(18, "GL404"), (19, "GL403")]


# fixtures28 F28-3 (morl-baselines#178, tests/fixtures/GL116/morl_nlmoppo_test_scalarization_weights_on_host.py):
# a closure handed to a method that calls it back (`u_func=scalarization_th`) read its enclosing
# function's locals as unknown. It now reads the enclosing function's frame as it is when called
# (a host `weights_th` meets the device returns).
MORL = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class Agent:
    def train(self, u_func):
        returns = torch.randn(4, 2, device=device)
        return u_func(returns)

def run():
    weights_th = torch.tensor([1.0, 0.0])
    def scalarization_th(reward):
        return torch.sum(reward * weights_th, dim=-1)
    return Agent().train(u_func=scalarization_th)

print(run())
"""


def test_a_closure_called_back_reads_its_enclosing_locals():
    assert _lines(MORL, "GL116") == [(14, "GL116")]
    src = MORL.replace("torch.tensor([1.0, 0.0])", "torch.tensor([1.0, 0.0], device=device)")
    assert src != MORL
    assert _lines(src, "GL116") == []


# precision22 B1-B3 (sgrvinod-style Image-Caption train.py/caption.py/eval.py, FourCastNet train.py):
# B1: the outputs of a module the file cannot see into, unpacked (`scores, caps_sorted,
# decode_lengths, sort_ind = decoder(...)`), were all tensors on its device, so GL116 reported
# `pack_padded_sequence(scores, decode_lengths)` (the real decoder returns a list of lengths) with a
# `.cpu()` fix that would fail. B2: every tensor handed to such a module had to be on its device;
# lengths (`cap_len`) are kept on the host on purpose. B3: `scaler.update()` under a second `if` with
# the same test as the step's (`if enable_amp:` twice) runs after every step (GL204).
B1 = """
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence
from models import DecoderWithAttention

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
decoder = DecoderWithAttention(vocab_size=10).to(device)
optimizer = torch.optim.Adam(decoder.parameters())
criterion = nn.CrossEntropyLoss()
loader = [(torch.randn(2, 5, 8), torch.randint(0, 10, (2, 6)), torch.tensor([[6], [4]]))]
for imgs, caps, caplens in loader:
    imgs, caps, caplens = imgs.to(device), caps.to(device), caplens.to(device)
    scores, caps_sorted, decode_lengths, sort_ind = decoder(imgs, caps, caplens)
    targets = caps_sorted[:, 1:]
    scores = pack_padded_sequence(scores, decode_lengths, batch_first=True).data
    targets = pack_padded_sequence(targets, decode_lengths, batch_first=True).data
    loss = criterion(scores, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
B2 = """
import torch
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
checkpoint = torch.load("BEST_checkpoint.pth.tar", map_location=str(device), weights_only=False)
decoder = checkpoint["decoder"]
decoder = decoder.to(device)
decoder.eval()
encoder_out = torch.randn(3, 196, 512).to(device)
k_prev_words = torch.LongTensor([[1] * 52] * 3).to(device)
cap_len = torch.LongTensor([52]).repeat(3, 1)  # kept on the CPU on purpose
scores, _, _, _, _ = decoder(encoder_out, k_prev_words, cap_len)
print(F.log_softmax(scores[:, 0, :], dim=1).shape)
"""
B3 = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
enable_amp = device.type == "cuda"
model = nn.Linear(8, 8).to(device)
optimizer = torch.optim.Adam(model.parameters())
gscaler = torch.amp.GradScaler("cuda", enabled=enable_amp)
for step in range(3):
    inp = torch.randn(4, 8, device=device)
    model.zero_grad()
    with torch.autocast(device.type, enabled=enable_amp):
        loss = model(inp).pow(2).mean()
    if enable_amp:
        gscaler.scale(loss).backward()
        gscaler.step(optimizer)
    else:
        loss.backward()
        optimizer.step()
    if enable_amp:
        gscaler.update()
"""


def test_lengths_from_an_opaque_module_or_handed_to_it_are_not_judged():
    assert _lines(B1, "GL116", "GL101") == []
    assert _lines(B2, "GL116", "GL101") == []
    # a data input of such a module still has to be on its device
    src = B2.replace("encoder_out = torch.randn(3, 196, 512).to(device)", "encoder_out = torch.randn(3, 196, 512)")
    assert src != B2
    assert _lines(src, "GL116", "GL101")


def test_an_update_under_the_same_test_as_the_step_runs_after_it():
    assert _lines(B3, "GL204") == []
    src = B3.replace("    if enable_amp:\n        gscaler.update()", "    if step % 10 == 0:\n        gscaler.update()")
    assert src != B3
    assert _lines(src, "GL204")


# fixtures30 E30-2 (Depth-Anything-V2#45, tests/fixtures/GL112/depth_anything_v2_readme_model_never_moved_infer_image.py):
# `model = Net(**model_configs[encoder])` of dict displays without a device key was "placed
# somewhere unknown" (a `**` mapping may carry `device=`), so the model's `infer_image`, which
# moves its input and calls `self.forward(image)`, met no host model. Also the A2 self-check above
# is only for a host sample: a sample the method moved still meets the instance (GL112).
DEPTH = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, features=1):
        super().__init__()
        self.conv = nn.Conv2d(3, features, 3)

    def forward(self, x):
        return self.conv(x)

    @torch.no_grad()
    def infer_image(self, raw):
        image = torch.from_numpy(raw).unsqueeze(0)
        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        image = image.to(DEVICE)
        return self.forward(image)  # GL112 expected


cfg = {"features": 1}
model = Net(**cfg)
model.eval()
print(model.infer_image(torch.rand(3, 8, 8).numpy()).shape)
"""


def test_a_construction_from_a_mapping_without_a_device_is_on_the_host():
    assert _lines(DEPTH, "GL112") == [(19, "GL112")]
    src = DEPTH.replace('cfg = {"features": 1}', 'cfg = {"features": 1, "device": "cuda"}')
    assert src != DEPTH
    assert _lines(src, "GL112") == []


# fixtures pending since the fifteenth batch, DashAISoftware/dashAI#679 (engine item F,
# tests/fixtures/GL112/dashai_loaded_classifier_model_left_on_host.py): a `load` classmethod builds
# `instance = cls(...)` and sets `instance.model = CNN(...)` on the host; `loaded.predict(x)` moves
# its input and calls `self.model`. `cls(...)` was unknown, an attribute set from outside the class
# was read as the class's own (`train()` moved it), and a classmethod called through its class was
# not followed. Now `cls(...)` is an instance of the class, `inst.attr = v` is that instance's
# attribute (read first by its methods), and `Cls.method(...)` of a classmethod is followed.
LOADED = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Clf:
    def __init__(self):
        self.model = None

    def train(self, x):
        self.model = nn.Linear(4, 2).to(device)
        return self.model(x.to(device))

    def predict(self, x):
        return self.model(x.to(device))

    @classmethod
    def load(cls, state):
        inst = cls()
        inst.model = nn.Linear(4, 2)
        inst.model.load_state_dict(state)
        return inst


c = Clf()
c.train(torch.randn(3, 4))
loaded = Clf.load(c.model.state_dict())
print(loaded.predict(torch.randn(3, 4)))
"""


def test_an_attribute_set_on_an_instance_from_outside_its_class():
    assert _lines(LOADED, "GL112") == [(17, "GL112")]
    src = LOADED.replace("        inst.model = nn.Linear(4, 2)\n", "        inst.model = nn.Linear(4, 2).to(device)\n")
    assert src != LOADED
    assert _lines(src, "GL112", "GL116") == []


# pointMLP's models/pointmlp.py (corpus21, found while measuring the change above): the smoke test
# `model = pointMLP(); out = model(torch.rand(2, 3, 1024))` runs everything on the host; followed
# into the submodules built in loops (of unknown placement themselves), "wherever the module is"
# counted as the accelerator of GL105's premise and a host input "met" it. In what an instance
# known to be on the host runs, that premise does not hold.
HOSTRUN = """
import torch
import torch.nn as nn


def index_points(points, idx):
    batch = torch.arange(points.shape[0], dtype=torch.long, device=points.device).view(-1, 1)
    return points[batch, idx, :]


def get_activation(name):
    if name == "gelu":
        return nn.GELU()
    return nn.ReLU(inplace=True)


class Block(nn.Module):
    def __init__(self, c, activation="relu"):
        super().__init__()
        self.act = get_activation(activation)
        self.net = nn.Sequential(nn.Conv1d(c, c, 1), nn.BatchNorm1d(c), self.act)

    def forward(self, x):
        return self.net(x)


class Model(nn.Module):
    def __init__(self, c=3, activation="relu", **kwargs):
        super().__init__()
        self.embedding = Block(c, activation=activation)
        self.blocks = nn.ModuleList([Block(c) for _ in range(2)])

    def forward(self, x):
        x = self.embedding(x)
        for blk in self.blocks:
            x = blk(x)
        return x


def make(**kwargs):
    return Model(c=3, **kwargs)


if __name__ == "__main__":
    model = make()
    print(model(torch.rand(2, 3, 16)).shape)
"""


def test_what_a_host_instance_runs_meets_no_accelerator():
    assert _lines(HOSTRUN, "GL116", "GL101", "GL105") == []
