"""rules66 (thirty-second session): G65-6 (GL116's message and GL101's move name a device
expression that exists where the model is called, Skeleton-Aware Networks), and the other
rule-side items of fixtures65 / precision50-51 worked in this branch (see the README section
"rules66 (thirty-second session)")."""

from __future__ import annotations

import inspect
import textwrap

from fixture_support import check, fix, registry


def _diags(src: str, code: str):
    return [d for d in check(textwrap.dedent(src), {code}) if d.code == code]


def _fixed(src: str, codes: set[str]) -> str:
    return fix(textwrap.dedent(src), codes, True).text


# ------------------------------------------------------------------------------------- G65-6

SELF_MOVING = """
import torch
import torch.nn as nn


class StaticEncoder(nn.Module):
    def __init__(self, dev):
        super().__init__()
        self.enc_layer = nn.Conv2d(3, 8, 1)
        self.to(dev)

    def forward(self, x):
        return self.enc_layer(x)


device = "cuda:0" if torch.cuda.is_available() else "cpu"
static_enc_a = StaticEncoder(device)
s = static_enc_a(torch.randn(1, 3, 6, 8))
"""


def test_gl116_names_the_construction_argument_not_the_constructor_parameter():
    d = _diags(SELF_MOVING, "GL116")
    assert [x.line for x in d] == [18]
    assert "(`.to(device)`)" in d[0].message  # 77361210: `.to(dev)`, a name of `__init__` only
    assert "dev)" not in d[0].message.replace("device)", "")


def test_gl116_keyword_construction_argument():
    src = SELF_MOVING.replace("StaticEncoder(device)", "StaticEncoder(dev=device)")
    d = _diags(src, "GL116")
    assert "(`.to(device)`)" in d[0].message


def test_gl116_constructor_parameter_rebound_in_init_falls_back_to_the_models_parameters():
    # `dev = torch.device(dev)` in `__init__`: the device is no longer the argument as written
    src = SELF_MOVING.replace("        self.to(dev)", "        dev = torch.device(dev)\n        self.to(dev)")
    d = _diags(src, "GL116")
    assert [x.line for x in d] == [19]
    assert "(`.to(next(static_enc_a.parameters()).device)`)" in d[0].message


def test_gl116_argument_not_a_name_falls_back_to_the_models_parameters():
    src = SELF_MOVING.replace("StaticEncoder(device)", 'StaticEncoder("cuda:0" if torch.cuda.is_available() else "cpu")')
    d = _diags(src, "GL116")
    assert "(`.to(next(static_enc_a.parameters()).device)`)" in d[0].message


SELF_ATTRIBUTE = """
import torch
import torch.nn as nn


class Enc(nn.Module):
    def __init__(self, gpu):
        super().__init__()
        self.device = torch.device("cuda:0" if gpu else "cpu")
        self.lin = nn.Linear(3, 8)
        self.to(self.device)

    def forward(self, x):
        return self.lin(x)


def run(flag):
    enc = Enc(flag)
    return enc(torch.randn(1, 3))


run(torch.cuda.is_available())
"""


def test_gl116_self_attribute_read_outside_the_class_names_the_instances_attribute():
    d = _diags(SELF_ATTRIBUTE, "GL116")
    assert [x.line for x in d] == [19]
    assert "(`.to(enc.device)`)" in d[0].message  # 77361210: `.to(self.device)` in a plain function


def test_gl116_module_level_device_message_unchanged():
    # control: the model moved with a module-level name (both on base and branch)
    src = """
    import torch
    import torch.nn as nn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Linear(3, 2).to(device)
    out = net(torch.randn(4, 3))
    """
    d = _diags(src, "GL116")
    assert [x.line for x in d] == [6]
    assert "(`.to(device)`)" in d[0].message


SAN = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class StaticEncoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.enc = nn.Linear(3, 4)
        self.to(args.cuda_device)

    def forward(self, x):
        return self.enc(x)


class Decoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.dec = nn.Linear(4 + 3, 2)
        self.to(args.cuda_device)

    def forward(self, s_latent, sx):
        return self.dec(torch.cat([s_latent, sx], dim=1))


def inference(opts, loader, offsets):
    static_enc, dec = StaticEncoder(opts), Decoder(opts)
    loss_fn = nn.MSELoss()
    total = 0.0
    for dyn, target in loader:
        static = offsets.repeat(dyn.size(0), 1)
        s_latent = static_enc(static)
        pred = dec(s_latent, static)
        total += loss_fn(pred, target).item()
    return total


class Opts:
    cuda_device = "cuda:0" if torch.cuda.is_available() else "cpu"


loader = DataLoader(TensorDataset(torch.randn(8, 5), torch.randn(8, 2)), batch_size=4)
inference(Opts(), loader, torch.randn(1, 3))
"""


def test_gl101_loss_call_names_the_construction_argument_and_fixes():
    d = _diags(SAN, "GL101")
    assert [x.line for x in d] == [35]
    # 77361210: "... on the model's device unmoved; move it first: `target = target.to(device)`",
    # no fix, in a file without a `device` name
    assert "`target = target.to(opts.cuda_device)`" in d[0].message
    assert d[0].fix is not None


def test_gl116_inputs_read_by_two_reported_model_calls_are_each_moved():
    # `static` feeds `static_enc` and `dec`, both reported: each finding moves its own use
    # (77361210 offered no fix: `static` is read again after the first call)
    out = _fixed(SAN, {"GL116", "GL101"})
    assert "s_latent = static_enc(static.to(next(static_enc.parameters()).device))" in out
    assert "pred = dec(s_latent, static.to(next(dec.parameters()).device))" in out
    assert "target = target.to(opts.cuda_device)" in out


def test_gl116_input_read_later_beside_a_host_tensor_still_gets_no_fix():
    # control: `x` is read again after the model call in a plain host operation the move would
    # not cover; no fix, as before
    src = """
    import torch
    import torch.nn as nn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Linear(3, 3).to(device)
    x = torch.randn(4, 3)
    out = net(x)
    y = x * 2
    """
    d = _diags(src, "GL116")
    assert [x.line for x in d] == [7]
    assert d[0].fix is None


def test_device_text_at_is_the_same_in_gl101_and_gl116():
    import sys

    srcs = []
    for code in ("GL101", "GL116"):
        mod = sys.modules[type(registry().by_code(code)()).__module__]
        srcs.append(inspect.getsource(mod.device_text_at))
    assert srcs[0] == srcs[1]


# ------------------------------------------------------------------------------------- E65-1

DP = """
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2)
net = nn.DataParallel(net, device_ids=[0, 1])
opt = torch.optim.SGD(net.parameters(), 0.1)
for X, y in [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]:
    opt.zero_grad()
    X, y = X.to(device), y.to(device)
    l = nn.functional.cross_entropy(net(X), y)
    l.backward()
    opt.step()
"""


def test_gl112_dataparallel_with_several_device_ids_over_a_never_moved_model():
    d = _diags(DP, "GL112")
    assert [x.line for x in d] == [11]  # 77361210: silent (the wrapper counted as placing the model)
    assert "`device_ids=[0, 1]`" in d[0].message and "never moved" in d[0].message
    out = _fixed(DP, {"GL112"})
    assert "net = nn.DataParallel(net, device_ids=[0, 1])\nnet = net.to(device)\n" in out


def test_gl112_dataparallel_without_device_ids_over_a_never_moved_model():
    d = _diags(DP.replace(", device_ids=[0, 1]", ""), "GL112")
    assert [x.line for x in d] == [11]
    assert "no `device_ids`" in d[0].message


def test_gl112_dataparallel_inputs_moved_with_cuda():
    d = _diags(DP.replace("X.to(device)", "X.cuda()").replace("y.to(device)", "y.cuda()"), "GL112")
    assert [x.line for x in d] == [11]
    assert "`net = net.cuda()`" in d[0].message


def test_gl112_dataparallel_negatives():
    for src in (
        DP.replace("device_ids=[0, 1]", "device_ids=[0]"),  # one device: DataParallel moves the model
        DP.replace("nn.DataParallel(net, ", "nn.DataParallel(net.to(device), "),
        DP.replace("device_ids=[0, 1])", "device_ids=[0, 1]).to(device)"),
        DP.replace("opt = ", "net.to(device)\nopt = "),
        DP.replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("cpu")'),
        DP.replace("nn.DataParallel(net, device_ids=[0, 1])", "nn.parallel.DistributedDataParallel(net)"),
        DP.replace("net = nn.Linear(4, 2)", "net = nn.ReLU()"),  # nothing to move
        DP.replace("X, y = X.to(device), y.to(device)", "X, y = X, y"),  # host inputs: it scatters them
    ):
        assert _diags(src, "GL112") == [], src


def test_gl112_dataparallel_input_moved_to_the_models_own_device_is_not_the_site():
    # d2l's evaluate_accuracy_gpu: `device = next(iter(net.parameters())).device` follows the model
    src = DP.replace("X, y = X.to(device), y.to(device)",
                     "dev = next(iter(net.parameters())).device\n    X, y = X.to(dev), y.to(dev)")
    assert _diags(src, "GL112") == []


# ------------------------------------------------------------------------------------- G65-1

STORE = """
import numpy as np
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
g_loss = np.zeros((5, 1))
h = np.zeros(5)
loss = model(torch.randn(2, 4).to(device)).mean()
{line}
"""


def _store(line: str):
    return _diags(STORE.replace("{line}", line), "GL109")


def test_gl109_device_tensor_stored_into_a_row_of_a_numpy_array():
    # Learning-to-See-in-the-Dark#10: 77361210 is silent
    d = _store("g_loss[0] = loss.data")
    assert [(x.line, x.col) for x in d] == [(10, 13)]
    assert "`loss.data.cpu()`" in d[0].message
    assert "g_loss[0] = loss.data.cpu()" in _fixed(STORE.replace("{line}", "g_loss[0] = loss.data"), {"GL109"})


def test_gl109_graph_tensor_stored_into_a_slice_is_detached_by_the_fix():
    d = _store("h[0:2] = loss")
    assert [x.line for x in d] == [10]
    assert "h[0:2] = loss.detach().cpu()" in _fixed(STORE.replace("{line}", "h[0:2] = loss"), {"GL109"})


def test_gl109_store_negatives():
    for line in (
        "h[0] = loss.data",           # one element: `float(t)`, works on any device
        "g_loss[0, 0] = loss.data",   # one element of a 2-D array
        "g_loss[0] = loss.data.cpu()",
        "g_loss[0] = loss.item()",
        "g_loss[[0, 1]] = loss.data",  # an index list: not decided
        "other = {}\nother[0] = loss.data",  # not a NumPy array
    ):
        assert _store(line) == [], line


def test_gl109_store_into_an_array_rebound_elsewhere_is_not_decided():
    src = STORE.replace("{line}", "g_loss = g_loss.squeeze()\ng_loss[0] = loss.data")
    assert _diags(src, "GL109") == []


# ------------------------------------------------------------------------------ G65-2, G65-3

GEN = """
import torch
torch_device = "cuda" if torch.cuda.is_available() else "cpu"
{gen}
latents = torch.randn((1, 4, 8, 8), generator=generator{device})
"""


def _gen(gen: str, device: str = ", device=torch_device"):
    return _diags(GEN.replace("{gen}", gen).replace("{device}", device), "GL116")


def test_gl116_cuda_draw_with_the_default_cpu_generator():
    # diffusers#6501: 77361210 is silent
    d = _gen("generator = torch.manual_seed(0)")
    assert [x.line for x in d] == [5]
    assert "`torch.manual_seed(...)` returns" in d[0].message
    assert "`torch.Generator(device=torch_device).manual_seed(...)`" in d[0].message
    assert d[0].fix is None


def test_gl116_cuda_draw_with_a_cpu_generator_object():
    for gen in ("generator = torch.Generator().manual_seed(0)", 'generator = torch.Generator("cpu")',
                'generator = torch.Generator(device="cpu")'):
        assert [x.line for x in _gen(gen)] == [5], gen


def test_gl116_generator_negatives():
    for gen, device in (
        ("generator = torch.Generator(device=torch_device).manual_seed(0)", ", device=torch_device"),
        ("generator = torch.manual_seed(0)", ""),                    # drawn on the CPU
        ("generator = torch.manual_seed(0)", ', device="cpu"'),
        ("generator = make_generator()", ", device=torch_device"),   # not known
        ("generator = torch.manual_seed(0)\ngenerator = torch.Generator(device=torch_device)", ", device=torch_device"),
    ):
        assert _gen(gen, device) == [], (gen, device)


SWM = """
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gen = {gen}
params = nn.Linear(3, 3).to(device).weight
with torch.no_grad():
    params.data += torch.randn(params.shape, generator=gen) * 0.1
"""


def test_gl116_noise_drawn_with_an_accelerator_generator_suggests_device_only():
    # stable-worldmodel PR#162 (G65-3): `.to()` after the draw still fails in `randn`
    d = _diags(SWM.replace("{gen}", "torch.Generator(device=device)"), "GL116")
    assert [x.line for x in d] == [8]
    assert "(`device=params.data.device`)" in d[0].message
    assert "`.to(...)` after the draw does not help" in d[0].message
    assert "or `.to(params.data.device)`" not in d[0].message  # 77361210 offered both


def test_gl116_noise_drawn_with_a_cpu_generator_suggests_the_copy_only():
    d = _diags(SWM.replace("{gen}", "torch.Generator()"), "GL116")
    assert [x.line for x in d] == [8]
    assert "copy it there: `.to(params.data.device)`" in d[0].message
    assert "`device=` would not do" in d[0].message


# ------------------------------------------------------------------- GL102 memoized flag scan

GFM = """
import argparse

import torch
import torch.nn as nn


def infer(args, model, x):
    x = x.cuda()
    return model(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true")
    args = parser.parse_args([])
    model = nn.Linear(3, 2)
    if args.cuda:
        model = model.cuda()
    print(infer(args, model, torch.randn(1, 3)))


if __name__ == "__main__":
    main()
"""


def test_gl102_off_by_default_flags_scanned_once_per_file(monkeypatch):
    import sys

    mod = sys.modules[type(registry().by_code("GL102")()).__module__]
    calls = []
    real = mod._compute_off_by_default_flags
    monkeypatch.setattr(mod, "_compute_off_by_default_flags", lambda m: calls.append(1) or real(m))
    d = _diags(GFM, "GL102")
    assert [x.line for x in d] == [9]
    assert "without `--cuda`" in d[0].message
    assert len(calls) == 1  # 77361210 scanned the file's options for the filter and again for the message


# ------------------------------------------------------------------------------------- G65-5

BIT = """
import torch
import torch.nn as nn
device = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")
model = nn.DataParallel(nn.Linear(4, 2){ids})
model = model.to(device)
out = model(torch.randn(8, 4).to(device))
"""


def test_gl113_dataparallel_without_device_ids_over_a_model_moved_to_cuda1():
    # BiT#73: 77361210 is silent (also under --select ALL)
    d = _diags(BIT.replace("{ids}", ""), "GL113")
    assert [(x.line, x.col) for x in d] == [(4, 23)]  # the "cuda:1" literal
    assert "no `device_ids`" in d[0].message and "cuda:0 (device_ids[0])" in d[0].message


def test_gl113_dataparallel_first_device_id_differs():
    d = _diags(BIT.replace("{ids}", ", device_ids=[0, 1]"), "GL113")
    assert [x.line for x in d] == [4]
    assert "starting with 0" in d[0].message


def test_gl113_dataparallel_negatives():
    for ids in (", device_ids=[1]", ", device_ids=[1, 0]", ", device_ids=[device.index]", ", device_ids=gpus"):
        assert _diags(BIT.replace("{ids}", ids), "GL113") == [], ids
    assert _diags(BIT.replace("{ids}", "").replace("cuda:1", "cuda:0"), "GL113") == []


# ------------------------------------------------------------------------------------- G65-4

DEC = """
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.coords = {made}

    def forward(self, x):
        return self.lin(x) - self.coords


device = torch.device({dev})
model = Dec(){move}
out = model(torch.randn(2, 8, device=device))
"""


def _dec(made='torch.arange(0, 8, device="cuda", dtype=torch.float32) / 8', dev='"cpu"', move=".to(device)"):
    return DEC.replace("{made}", made).replace("{dev}", dev).replace("{move}", move)


def test_gl106_attribute_made_on_a_literal_gpu_in_a_model_moved_elsewhere():
    # SAM 3 (G65-4): 77361210 is silent
    d = _diags(_dec(), "GL106")
    assert [x.line for x in d] == [10]
    assert 'made on `"cuda"`' in d[0].message and "`Dec().to(device)` on line 17" in d[0].message
    out = _fixed(_dec(), {"GL106"})
    assert 'self.register_buffer("coords", torch.arange(0, 8, dtype=torch.float32) / 8, persistent=False)' in out


def test_gl106_literal_gpu_attribute_moved_by_a_flag_device_and_cuda_call():
    src = _dec(made="torch.linspace(0, 1, 8).cuda()", dev='"cuda" if torch.cuda.is_available() else "cpu"')
    d = _diags(src, "GL106")
    assert [x.line for x in d] == [10]
    assert 'self.register_buffer("coords", torch.linspace(0, 1, 8), persistent=False)' in _fixed(src, {"GL106"})


def test_gl106_literal_gpu_random_attribute_has_no_fix():
    d = _diags(_dec(made='torch.randn(8, device="cuda")'), "GL106")
    assert [x.line for x in d] == [10]
    assert d[0].fix is None  # the numbers drawn would change


def test_gl106_literal_gpu_attribute_negatives():
    for src in (
        _dec(move='.to("cuda")'),    # moved to the same literal GPU
        _dec(move=".cuda()"),
        _dec(move=""),               # never moved: where its inputs are decides
        _dec(made="torch.arange(0, 8, device=device, dtype=torch.float32) / 8"),  # not a literal
    ):
        assert _diags(src, "GL106") == [], src



FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


def _fixture_diags(rel: str, code: str):
    return [d for d in check((FIXTURES / rel).read_text(), {code}) if d.code == code]


def test_gl101_names_the_device_the_loop_moves_the_other_tensors_with():
    # the model was moved with `main`'s local `device`; `Trainer.train`'s own parameter `device`
    # moves `src` beside `src_lengths` (on 77361210 the same text came from a fallback word)
    d = _fixture_diags("GL403/asr_trainer_valid_loader_list_no_grad.py", "GL101")
    assert [x.line for x in d] == [34, 45]
    assert all("reaches `model` on `device` unmoved; move it first: `src_lengths = src_lengths.to(device)`"
               in x.message for x in d)


def test_gl101_no_device_name_in_scope_says_the_models_own_device():
    d = _fixture_diags("GL101/tabular_vae_runner_learner_model_batches_not_moved.py", "GL101")
    assert [x.line for x in d] == [85]
    assert "on the model's device unmoved" in d[0].message
    # 77361210: `self.xb.to(device)` in a file whose device is `DEVICE`
    assert "`self.xb.to(next(self.model.parameters()).device)`" in d[0].message


def test_gl106_literal_gpu_attribute_through_a_local_name_has_no_fix():
    src = _dec(made="ch").replace("        self.coords = ch",
                                   '        ch = torch.arange(0, 8, device="cuda", dtype=torch.float32)\n        self.coords = ch')
    d = _diags(src, "GL106")
    assert [x.line for x in d] == [11]
    assert d[0].fix is None  # the literal sits in the local's assignment: not edited
