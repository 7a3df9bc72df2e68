"""Engine items, twenty-eighth session (each test checked to fail on a31be64 unless it says it is a
control that already passed there)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str, fix: bool = False):
    rules = [Registry.load().by_code(c)() for c in codes]
    opts = Options(fix=True, unsafe_fixes=True, write=False) if fix else Options()
    return run_text("train.py", textwrap.dedent(src), rules, opts)


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# P44-3 (so-vits-svc's p_sample): `b, *_, device = *x.shape, x.device` binds `device` to `x.device`,
# the last item of the display; the noise made there is where `x` is, here the host.
STARRED = """
import torch


def noise_like(shape, device):
    return torch.randn(shape, device=device)


def p_sample(x, t):
    {unpack}
    noise = noise_like(x.shape, device)
    return x + noise


x = torch.randn(2, 3).cpu()
print(p_sample(x, torch.tensor([0, 1])))
"""


def test_a_target_after_a_starred_target_takes_the_last_item():
    for unpack in ("b, *_, device = *x.shape, x.device", "*_, b, device = *x.shape, x.shape[0], x.device",
                   "b, *_, device = (x.shape[0], 1, x.device)"):
        assert _lines(STARRED.format(unpack=unpack), "GL116") == [], unpack


def test_a_target_after_a_starred_target_still_takes_an_accelerator():
    # the same unpacking of a CUDA device: the noise is on the accelerator, `x` on the host
    src = STARRED.format(unpack='b, *_, device = *x.shape, torch.device("cuda")')
    assert _lines(src, "GL116") == [(12, "GL116")]


# The device of a tensor the engine cannot place, kept in a name, is wherever that tensor is: a
# factory given it is not on "the configured accelerator" (P44-3, the second link).
OPERAND_DEVICE = """
import torch


def noise_like(shape, device):
    return torch.randn(shape, device=device)


def p_sample(x, scale):
    device = x.device
    noise = noise_like(x.shape, device)
    return x * 0.5 + noise * scale


def sample(model, n):
    x = model(torch.randn(n, 8))
    for i in range(3):
        x = p_sample(x, torch.linspace(0, 1, 8))
    return x
"""


def test_a_name_bound_to_the_device_of_an_unplaced_tensor_is_not_the_accelerator():
    assert _lines(OPERAND_DEVICE, "GL116") == []


def test_a_configured_device_attribute_is_still_the_accelerator():
    # control (passes on a31be64 too): `device = args.device` is the device the script configures
    src = """
    import argparse
    import torch
    args = argparse.ArgumentParser().parse_args()
    device = args.device
    x = torch.randn(3, device=device)
    print(x + torch.ones(3).cpu())
    """
    assert _lines(src, "GL116") == [(7, "GL116")]


# P44-2 (ppg-vc's masked MSE): the positional arguments of `expand`, `view`, `reshape`, `repeat`
# are sizes; a 0-dim device tensor there is read as a number, not met.
EXPAND = """
import torch


def get_mask(lengths):
    max_len = torch.max(lengths)
    seq_range = torch.arange(0, max_len).long()
    seq_range_expand = {expr}
    return seq_range_expand


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(get_mask(torch.tensor([5, 3], device=device)))
"""


def test_size_arguments_are_not_operands():
    for expr in ("seq_range.unsqueeze(0).expand(lengths.size(0), max_len).to(lengths.device)",
                 "seq_range.view(1, max_len).to(lengths.device)", "seq_range.repeat(max_len).to(lengths.device)"):
        assert _lines(EXPAND.format(expr=expr), "GL105", "GL116") == [], expr


def test_an_elementwise_operand_still_meets():
    src = EXPAND.format(expr="seq_range.unsqueeze(0) < lengths.unsqueeze(1)")
    assert [c for _, c in _lines(src, "GL105", "GL116")] == ["GL116"]


# P44-1 (StudioGAN's k-NN analysis): a conditional expression as the `with` item.
KNN = """
import contextlib

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)), batch_size=4)


def knn(requires_grad=False):
    with {item}:
        model.eval()
        feats = []
        for (x,) in loader:
            feats.append(model(x.to(device)))
        return torch.cat(feats)


print(knn().shape)
"""


def test_no_grad_on_one_branch_of_a_with_item_is_dynamic():
    for item in ("torch.no_grad() if not requires_grad else contextlib.nullcontext()",
                 "contextlib.nullcontext() if requires_grad else torch.no_grad()",
                 "torch.no_grad() if not requires_grad else torch.enable_grad()"):
        assert _lines(KNN.format(item=item), "GL403") == [], item


def test_no_context_on_either_branch_still_reports():
    # control (passes on a31be64 too): neither branch disables gradients
    src = KNN.format(item="contextlib.nullcontext() if requires_grad else contextlib.nullcontext()")
    assert _lines(src, "GL403") == [(17, "GL403")]


# E56-4 b (Mozilla TTS's TorchSTFT): `getattr(torch, window)(n)` with `window` a parameter whose
# default is "hann_window" calls `torch.hann_window`, a factory that makes its window on the host.
STFT = """
import torch


class TorchSTFT:
    def __init__(self, n_fft, window={window}):
        self.n_fft = n_fft
        self.window = getattr(torch, window)(n_fft{extra})

    def __call__(self, x):
        return torch.stft(x, self.n_fft, window=self.window, return_complex=True).abs()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
stft = TorchSTFT(64)
print(stft(torch.randn(2, 256, device=device)).shape)
"""


def test_getattr_of_torch_with_a_constant_name_is_that_function():
    src = STFT.format(window='"hann_window"', extra="")
    assert _lines(src, "GL116") == [(11, "GL116")]
    fixed = _run(src, "GL116", fix=True).text
    assert "window=self.window.to(x.device)" in fixed


def test_getattr_of_torch_with_a_device_or_an_unknown_name_is_silent():
    assert _lines(STFT.format(window='"hann_window"', extra=", device=device"), "GL116") == []
    assert _lines(STFT.format(window="None", extra="").replace("getattr(torch, window)",
                                                                 "getattr(torch, window or pick())"), "GL116") == []


# E58-1 (the pipeline schedule's microbatch loop): a file function whose `.backward()` runs in a
# loop of its own that makes no optimizer step accumulates gradients for its caller's step, so
# the loop calling it and `opt.step()` is a training loop (GL405 on its per-step `.item()`).
ACCUMULATE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def forward_backward(x, n_microbatches=4):
    total = 0.0
    for x_mb in x.chunk(n_microbatches):
        loss = model(x_mb).pow(2).mean()
        (loss / n_microbatches).backward()
        {inner_step}
        total = total + loss.detach()
    return total / n_microbatches


for step in range(10):
    x = torch.randn(32, 4, device=device)
    opt.zero_grad()
    loss = forward_backward(x)
    {outer_step}
    print(loss.item())
"""


def test_a_helper_accumulating_gradients_in_its_own_loop_runs_the_callers_backward():
    src = ACCUMULATE.format(inner_step="pass", outer_step="opt.step()")
    assert _lines(src, "GL405") == [(25, "GL405")]


def test_a_helper_that_steps_in_its_own_loop_is_a_training_loop_of_its_own():
    # the helper trains (backward and step per micro-batch): the calling loop runs once per chunk
    # of steps, and its `.item()` is not one per step
    src = ACCUMULATE.format(inner_step="opt.step()", outer_step="pass")
    assert _lines(src, "GL405") == []


# E60-3 (SpatialAttentionGAN#1): `.type_as(h)` converts to h's type, its device included; run on
# every path with a host `h` it is a host copy like `.cpu()`, not a CPU-only branch's choice, so
# the value meets device tensors as a host operand; a loader batch converted back so is GL116's
# (where it was converted), not GL101's "never moved".
TYPE_AS = """
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
D = nn.Linear(4, 2).to(device)
host = torch.rand(8, 4)
labels = torch.rand(8, 2).to(device).type_as(host)
out = D(host.to(device))
c = out + labels
d = out + (1 - labels)
e = out + torch.rand(8, 2).type_as(host)
"""


def test_type_as_a_host_tensor_is_a_host_copy():
    assert _lines(TYPE_AS, "GL116") == [(9, "GL116"), (10, "GL116"), (11, "GL116")]


def test_type_as_a_device_tensor_is_silent():
    # control (passes on a31be64 too)
    assert _lines(TYPE_AS.replace("type_as(host)", "type_as(out)").replace(
        "labels = torch.rand(8, 2).to(device).type_as(out)", "labels = torch.rand(8, 2).to(device)"), "GL116") == []


LOADER_TYPE_AS = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
D = nn.Linear(4, 2).to(device)
loader = DataLoader(TensorDataset(torch.rand(8, 4), torch.rand(8, 2)), batch_size=4)
opt = torch.optim.SGD(D.parameters(), lr=0.1)
for reals, labels in loader:
    reals, labels = reals.to(device), labels.to(device).type_as(reals)
    loss = F.binary_cross_entropy_with_logits(D(reals), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_batch_converted_back_to_the_host_is_gl116s():
    assert _lines(LOADER_TYPE_AS, "GL101", "GL116") == [(12, "GL116")]


# P47-4 (NVIDIA Tacotron2's ONNX export wrapper): a module class built around a value the engine
# cannot read, keeping a part of it that a method calls (`self.body = model.body`, `self.body(x)`),
# is not known to be on the host; one built from a configuration object whose fields are only
# read (`cfg.dim`) still is.
WRAPPER = """
import torch
import torch.nn as nn
from configs import load_config


class Wrap(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.head = nn.Linear(4, 4)
        {keep}

    def forward(self, x):
        return {call}


model = torch.load("whole.pt", map_location="cuda", weights_only=False)
w = Wrap(model)
print(w(torch.randn(2, 4).cuda()))
"""


def test_a_wrapper_calling_a_part_of_an_unknown_module_is_not_on_the_host():
    for keep in ("self.body = model.body", "dec = model.decoder\n        self.body = dec.proj"):
        assert _lines(WRAPPER.format(keep=keep, call="self.body(x)"), "GL112") == [], keep


def test_a_module_reading_fields_of_an_unknown_object_is_still_on_the_host():
    # control (passes on a31be64 too): the kept part is never called
    src = WRAPPER.format(keep="self.scale = model.scale", call="self.head(x) * self.scale")
    assert _lines(src, "GL112") == [(19, "GL112")]


# E59-2 (the pipeline schedule's `loss_fn=F.cross_entropy`): a torch function that gives a tensor,
# named as a value and called later (kept on `self`, bound to a local), gives that tensor.
LOSS_FN = """
import torch
import torch.nn.functional as F


class Schedule:
    def __init__(self, loss_fn):
        self.loss_fn = loss_fn

    def run(self, out, t):
        return self.loss_fn(out, t)


crit = F.cross_entropy
a = crit(torch.randn(2, 3), torch.tensor([0, 1]))
b = Schedule(loss_fn=F.cross_entropy).run(torch.randn(2, 3), torch.tensor([0, 1]))
"""


def test_a_torch_function_named_as_a_value_gives_its_tensor():
    import libcst as cst

    from gpulint.model import ScriptModel

    src = textwrap.dedent(LOSS_FN)
    m = ScriptModel(cst.parse_module(src), src)
    kinds = {}
    for node, v in m.flow.values.items():
        if isinstance(node, cst.Name) and node.value in ("a", "b"):
            kinds[node.value] = v.kind
    assert kinds == {"a": "tensor", "b": "tensor"}


# P48-3 (diffusers' tests): `model.to(device).eval()` as a statement moves the model in place
# under the method that returns it; P48-2 (insightface's arcface): a data-parallel wrapper given
# its module by keyword wraps that module where it is.
CHAINED_MOVE = """
import torch
import torch.nn as nn
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 4)
{move}
x = torch.randn(1, 4).to(device)
with torch.no_grad():
    print(model(x))
"""


def test_a_move_under_eval_or_train_as_a_statement_moves_the_model():
    for move in ("model.to(device).eval()", "model.cuda().train(False)", "model.to(device).train().requires_grad_(False)"):
        assert _lines(CHAINED_MOVE.format(move=move), "GL112") == [], move


def test_eval_alone_moves_nothing():
    # control (passes on a31be64 too)
    assert _lines(CHAINED_MOVE.format(move="model.eval()"), "GL112") == [(9, "GL112")]


DDP_KEYWORD = """
import torch
import torch.nn as nn
local_rank = 0
backbone = nn.Linear(4, 4).cuda()
backbone = torch.nn.parallel.DistributedDataParallel({arg}, device_ids=[local_rank])
head = nn.Linear(4, 2)
head.train().cuda()
x = torch.randn(2, 4).cuda()
loss = head(backbone(x)).sum()
"""


def test_a_wrapper_given_its_module_by_keyword_is_where_the_module_is():
    for arg in ("backbone", "module=backbone"):
        assert _lines(DDP_KEYWORD.format(arg=arg), "GL112", "GL116") == [], arg
