"""Engine items, twenty-third session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


def _messages(src: str, *codes: str) -> list[str]:
    rules = [Registry.load().by_code(c)() for c in codes]
    return [d.message for d in run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics]


# E42-8 (spectral-optimal-transport#3's shape): a host copy made on every path of its function
# (`out.to("cpu")`, `out.cpu()`) and combined with the device tensor it was copied from. The
# engine skipped every tensor moved to the CPU by a call as "on purpose, under a CPU-only guard".
HOST_COPY = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 8).to(device)
out = model(torch.randn(2, 4).to(device))
x = out.to("cpu")
y = x * out
z = out.cpu()
w = torch.add(z, out)
"""


def test_an_unconditional_host_copy_meets_the_device_tensor():
    assert _lines(HOST_COPY, "GL116") == [(9, "GL116"), (11, "GL116")]
    assert any("moved there by `out.cpu()` on line 10" in msg for msg in _messages(HOST_COPY, "GL116"))


def test_a_host_copy_under_a_branch_stays_silent():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 8).to(device)
    out = model(torch.randn(2, 4).to(device))
    x = out
    if args_cpu_only():
        x = out.to("cpu")
    y = x * out
    try:
        z = out.cuda()
    except RuntimeError:
        z = out.cpu()
    w = z + out
    """
    assert _lines(src, "GL116") == []


def test_a_host_copy_of_a_possibly_scalar_tensor_stays_silent():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 8).to(device)
    loss = nn.functional.mse_loss(model(torch.randn(2, 4).to(device)), torch.zeros(2, 8, device=device))
    total = loss.cpu()
    scaled = total * model(torch.randn(2, 4).to(device))
    """
    # a loss module's output is 0-dim: a 0-dim CPU tensor may meet a device tensor
    assert _lines(src, "GL116") == []


# E42-9 (MDI-LLM#21's shape): `if "cuda" in device:` of a device literal (or the availability
# choice) is a test that holds on a GPU run; its branch pairs the current device with another GPU.
GET_BATCH = """
import torch
import torch.nn as nn

device = "cuda:1"
model = nn.Embedding(32, 8)
model.to(device)
x = torch.randint(0, 32, (4, 6))
y = torch.randint(0, 32, (4, 6))
if "cuda" in device:
    x, y = x.to("cuda"), y.to(device)
else:
    x, y = x.to(device), y.to(device)
out = model(x)
"""


def test_a_device_type_test_of_a_device_literal_is_decided():
    assert _lines(GET_BATCH, "GL116") == [(14, "GL116")]


def test_a_device_type_test_decides_the_gpu_branch():
    from gpulint.flow import gpu_guard
    from gpulint.model import ScriptModel
    import libcst as cst

    src = textwrap.dedent("""
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = "cpu"
    other = input()
    a = "cuda" in str(device)
    b = device.type == "cuda"
    c = device.type != "cpu"
    d = str(device).startswith("cuda")
    e = "cuda" in name
    f = device == "cuda"
    g = "cuda" in other
    h = name == "cpu"
    """)
    mod = cst.parse_module(src)
    m = ScriptModel(mod, src)
    got = {}
    for st in mod.body:
        node = st.body[0]
        if type(node) is cst.Assign and node.targets[0].target.value in "abcdefgh":
            got[node.targets[0].target.value] = gpu_guard(m, node.value)
    # f: `torch.device("cuda") == "cuda"` is not decided by the type alone (an index may follow)
    assert got == {"a": True, "b": True, "c": True, "d": True, "e": False, "f": None, "g": None, "h": True}


# E42-3 (MMGeneration#476's `get_module_device`): a file helper that returns the device index of a
# module's parameters when `.is_cuda`, else `torch.device("cpu")`. The engine now decides
# `x.is_cuda` where it knows where `x` is, and reads `x.get_device()` of an accelerator tensor as
# that device, so the helper's summary is the module's device and the timesteps moved there index
# a host table.
MODULE_DEVICE = """
import numpy as np
import torch
import torch.nn as nn


def get_module_device(module):
    if next(module.parameters()).is_cuda:
        return next(module.parameters()).get_device()
    return torch.device("cpu")


def var_to_tensor(var, index):
    return torch.from_numpy(var)[index].float()


class Diffusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.sqrt_alphas_bar = np.sqrt(np.cumprod(1.0 - np.linspace(1e-4, 0.05, 50)))

    def q_sample(self, x_0, t):
        return x_0 * var_to_tensor(self.sqrt_alphas_bar, t)[:, None]

    def reconstruction_step(self, x, timesteps):
        timesteps = timesteps.to(get_module_device(self))
        return self.q_sample(x, timesteps)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Diffusion().to(device)
x = torch.randn(4, 8).to(device)
out = model.reconstruction_step(x, torch.randint(0, 50, (4,)))
"""


def test_a_helper_returning_the_module_device_index():
    assert _lines(MODULE_DEVICE, "GL116") == [(14, "GL116")]


def test_a_helper_given_a_host_module_returns_the_host():
    # the same helper on a module never moved: `is_cuda` is False, the CPU device is returned and
    # the table and its indices are both on the host
    src = MODULE_DEVICE.replace("model = Diffusion().to(device)", "model = Diffusion()").replace(
        "x = torch.randn(4, 8).to(device)", "x = torch.randn(4, 8)")
    assert _lines(src, "GL116") == []


def test_get_device_of_a_host_tensor_is_not_a_device():
    src = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t = torch.zeros(3)
    rank = t.get_device()
    y = torch.randn(4, 3).to(rank) + torch.randn(4, 3).to(device)
    """
    assert _lines(src, "GL116") == []


# spectral-optimal-transport#3's wasserstein_1d: `torch.sort` returns (values, indices) on its
# input's device (the knowledge base had it as "mixed"), and `torch.gather(w, 1, order)` meets `w`
# with `order` (the knowledge base lists tensor parameters only, so the positional `1` was taken
# for the index and `order` was no operand).
SORT_GATHER = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = torch.rand(4, 8)
pos = torch.rand(4, 8).to(device)
vals, order = torch.sort(pos, 1)
picked = torch.gather(w, 1, order)
chosen = torch.index_select(w, 0, order[:, 0])
kept = torch.gather(w.to(device), 1, order)
"""


def test_sorted_indices_gather_a_host_table():
    assert _lines(SORT_GATHER, "GL116") == [(8, "GL116"), (9, "GL116")]


# spectral-optimal-transport#3 (E42-8's fixture): `Sub(transform="stft")` of a subclass without
# an `__init__` runs its base's, whose `device="cpu"` default is stored on `self`; forward moves
# its input there while the registered buffer follows `.to(device)`. The base's constructor and
# forward took no values from a subclass's constructions and calls.
INHERITED_INIT = """
import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self, transform="stft", device="cpu"):
        super().__init__()
        self.device = device
        self.register_buffer("pos", torch.linspace(0, 1, 8))

    def forward(self, x):
        x = x.to(self.device)
        return x * self.pos


class Sub(Base):
    def extra(self):
        return 1


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loss_fn = Sub(transform="stft").to(device)
out = loss_fn(torch.randn(4, 8).to(device))
"""


def test_a_subclass_construction_runs_the_inherited_init():
    assert _lines(INHERITED_INIT, "GL116") == [(14, "GL116")]


def test_a_subclass_given_the_device_is_silent():
    src = INHERITED_INIT.replace('Sub(transform="stft")', 'Sub(transform="stft", device=device)')
    assert _lines(src, "GL116") == []


def test_a_base_also_built_with_another_device_is_not_joined_blindly():
    # a second construction (of the base itself) passes the accelerator: the stored device is
    # "cpu" or the accelerator, not known, so nothing is reported
    src = INHERITED_INIT + "other = Base(device=device)\nother(torch.randn(4, 8).to(device))\n"
    assert _lines(src, "GL116") == []


# E45-1 (ParlAI#2042's TorchAgent): `update_params()` steps `self.scheduler` before
# `self.optimizer`, called once per loop iteration through `train_step()`. Only a loop directly
# around the call was taken as the per-step loop.
AGENT = """
import torch
import torch.nn as nn


class Agent:
    def __init__(self):
        self.model = nn.Linear(4, 2)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 1)

    def update_params(self):
        self.scheduler.step()
        self.optimizer.step()

    def train_step(self, x):
        self.optimizer.zero_grad()
        self.model(x).sum().backward()
        self.update_params()


agent = Agent()
for _ in range(3):
    agent.train_step(torch.randn(8, 4))
"""


def test_a_scheduler_stepped_first_in_a_method_a_loop_reaches_through_another():
    assert _lines(AGENT, "GL406") == [(13, "GL406")]


def test_an_optimizer_step_in_the_caller_first_is_silent():
    src = AGENT.replace("        self.update_params()", "        self.optimizer.step()\n        self.update_params()")
    assert _lines(src, "GL406") == []


# E45-2 (pytorch-lightning#224's trainer): the loader a helper builds around a DistributedSampler is
# kept on `self` and iterated in the method's epoch loop; only names were read as holding it.
SELF_LOADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_loader():
    ds = TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(ds, num_replicas=1, rank=0)
    return DataLoader(ds, batch_size=8, sampler=sampler)


class Trainer:
    def fit(self):
        self.loader = make_loader()
        for epoch in range(3):
            for (x,) in self.loader:
                pass


Trainer().fit()
"""


def test_a_loader_kept_on_self_is_the_epoch_loops_loader():
    assert _lines(SELF_LOADER, "GL302") == [(9, "GL302")]
    src = SELF_LOADER.replace("        for epoch in range(3):\n", "        for epoch in range(3):\n"
                              "            self.loader.sampler.set_epoch(epoch)\n")
    assert _lines(src, "GL302") == []


# MMGeneration#476 (E42-3's fixture): `reconstruction_step(data, timesteps=self.sampler)` with
# `if callable(timesteps): timesteps = timesteps(num_batches)`: the test of a file class instance
# with a `__call__` is decided, so the timesteps are the sampler's tensor, not unknown.
CALLABLE = """
import torch


class Sampler:
    def __init__(self, n):
        self.n = n

    def __call__(self, b):
        return torch.randint(0, self.n, (b,))


def step(timesteps, b, table):
    if callable(timesteps):
        timesteps = timesteps(b)
    return table[timesteps.to(device)]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
out = step(Sampler(10), 4, torch.rand(10))
"""


def test_callable_of_a_file_class_instance_is_decided():
    assert _lines(CALLABLE, "GL116") == [(16, "GL116")]


def test_callable_of_an_unknown_value_is_not_decided():
    src = CALLABLE.replace("out = step(Sampler(10), 4, torch.rand(10))", "out = step(make_sampler(), 4, torch.rand(10))")
    assert _lines(src, "GL116") == []


def test_an_existence_guard_around_the_scheduler_step_passes():
    # ParlAI's TorchAgent: `if self.scheduler is not None: self.scheduler.step()` runs whenever
    # there is a scheduler to step
    src = AGENT.replace("        self.scheduler.step()\n", "        if self.scheduler is not None:\n"
                        "            self.scheduler.step()\n")
    assert _lines(src, "GL406") == [(14, "GL406")]
    other = AGENT.replace("        self.scheduler.step()\n", "        if self.warmup:\n"
                          "            self.scheduler.step()\n")
    assert _lines(other, "GL406") == []


# PRECISION35 P35-A1 (kinetics_i3d_pytorch): parameter-less padding layers kept in a plain list
# (`nn.ConstantPad3d`, one per input-depth remainder) lose nothing: not GL107.
PADS = """
import torch
import torch.nn as nn


class Unit3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.pads = [nn.ConstantPad3d((0, 0, 0, 0, 0, k), 0) for k in (1, 2)]
        self.conv = nn.Conv3d(2, 4, 3)

    def forward(self, x):
        return self.conv(self.pads[x.shape[2] % 2](x))


model = Unit3d()
out = model(torch.randn(1, 2, 5, 6, 6))
"""


def test_padding_layers_in_a_plain_list_are_not_unregistered_state():
    assert _lines(PADS, "GL107") == []
    assert _lines(PADS.replace("nn.ConstantPad3d((0, 0, 0, 0, 0, k), 0)", "nn.Conv3d(2, 2, 1)"), "GL107") == [(9, "GL107")]


# PRECISION34 P34-A1 (vnn's VNMaxPool): `torch.meshgrid([torch.arange(j) ...]) + (idx,)` is a
# tuple concatenation used as an index; the host aranges never meet the device `idx`.
MESHGRID = """
import torch
import torch.nn as nn


class MaxPool(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.lin = nn.Linear(c, c)

    def forward(self, x):
        idx = self.lin(x.transpose(1, -1)).transpose(1, -1).argmax(dim=-1)
        grid = torch.meshgrid([torch.arange(j) for j in x.size()[:-1]], indexing="ij") + (idx,)
        return x[grid]


device = "cuda" if torch.cuda.is_available() else "cpu"
model = MaxPool(4).to(device)
out = model(torch.randn(2, 4, 5).to(device))
"""


def test_a_tuple_concatenation_of_host_aranges_and_device_indices_is_no_meeting():
    assert _lines(MESHGRID, "GL105", "GL116") == []
    # an arange added to the device indices does meet them
    met = MESHGRID.replace("        return x[grid]\n", "        return x[grid] + (torch.arange(x.size(1)) + idx)[..., None]\n")
    assert _lines(met, "GL105") == [(14, "GL105")]


# E44-3 (SimplePIM#2): a Parameter no module holds (`w = nn.Parameter(x.to(device))` in a
# function or a script) is where the tensor it wraps is; one assigned in a module class follows
# the module, as before.
PARAMETER = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def fit(x):
    w = torch.nn.Parameter(torch.zeros(3).to(device))
    return (x @ w).sum(), w.detach().numpy()


class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        w = nn.Parameter(torch.zeros(3))
        self.w = w

    def forward(self, x):
        return x @ self.w


model = Lin().to(device)
out = model(torch.randn(2, 3).to(device))
print(fit(torch.randn(2, 3).to(device)))
"""


def test_a_parameter_no_module_holds_is_where_its_tensor_is():
    assert _lines(PARAMETER, "GL109", "GL116", "GL106") == [(10, "GL109")]


# E44-5 (nanofold#4's Frame): a plain class's construction keeps what its `__init__` stored from
# the arguments (`Frame(None, self.lin(x))`: `translations` on the device), read back in a static
# method that combines it with another construction's host `rotations`.
FRAMES = """
import torch
import torch.nn as nn


class Frame:
    def __init__(self, rotations, translations):
        self.rotations = rotations
        self.translations = translations

    @staticmethod
    def compose(a, b):
        return a.rotations @ b.translations.unsqueeze(-1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        frames = Frame(torch.eye(3), torch.zeros(3))
        update = Frame(None, self.lin(x))
        return Frame.compose(frames, update)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Model().to(device)
out = model(torch.randn(2, 3, device=device))
"""


def test_a_plain_construction_keeps_what_its_init_stored():
    assert _lines(FRAMES, "GL105", "GL116") == [(22, "GL105")]
    fixed = FRAMES.replace("Frame(torch.eye(3), torch.zeros(3))", "Frame(torch.eye(3, device=x.device), torch.zeros(3))")
    assert _lines(fixed, "GL105", "GL116") == []


# Found by the corpus comparison (Landmark2019's cirtorch TuplesDataset, once `torch.sort` returned
# tensors): `idxs2images[ranks[r, q]]`, a host tensor indexed with one element of device ranks.
# PyTorch reads a 0-dim integer index as its value, so it runs; one integer into a batch of rows
# (`top_index[topk_index[i]]`, EMNet#1) still is a device index of a host table.
RANK_ELEMENT = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
scores = torch.randn(5, 3).to(device)
scores, ranks = torch.sort(scores, dim=0, descending=True)
pool = torch.randperm(10)[:5]
r, q = 0, 1
a = pool[ranks[r, q]]
b = pool[ranks[r][q]]
c = pool[ranks[:, q]]
d = pool[ranks[r]]
"""


def test_an_element_picked_by_integers_indexes_a_host_table():
    assert _lines(RANK_ELEMENT, "GL116") == [(11, "GL116"), (12, "GL116")]


def test_a_construction_of_a_class_on_an_imported_base_keeps_no_attributes():
    # found on transformers (`OwlViTModel(config)` on `PreTrainedModel`): a class on an imported
    # base may be a module, its parts moved with it later; its construction is not read per call
    src = "from somewhere import Base\n" + FRAMES.replace("class Frame:", "class Frame(Base):")
    assert _lines(src, "GL105", "GL116") == []


# G43-3b (rules43, PAAC#1's entropy): `-negated_sum / 8` of a sum started at 0 (a number on one
# path, a tensor with a graph on the others) keeps the operand's graph through the unary minus.
NEGATED = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
entropy_sum = 0
for n in range(20):
    negated_sum = 0
    for t in range(3):
        negated_sum += model(torch.randn(8, 4)).mean()
    entropy = -negated_sum / 8
    entropy_sum += entropy
    loss = model(torch.randn(8, 4)).pow(2).mean() - 0.01 * entropy
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_negated_number_or_tensor_keeps_its_graph():
    assert _lines(NEGATED, "GL402") == [(13, "GL402")]
    assert _lines(NEGATED.replace("entropy_sum += entropy", "entropy_sum += float(entropy)"), "GL402") == []


# E45-3 (ignite#750's checkpoint handler, the one-line shape): a class of the file named like a
# checkpoint loader, given the wrapper, is no "resume helper of another file" that may load the
# checkpoint back into the wrapper: its own code is here.
HANDLER = """
import torch
import torch.nn as nn


class Checkpoint:
    def __init__(self, model):
        self.model = model

    def __call__(self):
        torch.save(self.model.state_dict(), "ckpt.pt")


Checkpoint(nn.DataParallel(nn.Linear(4, 2)))()
"""


def test_a_file_class_named_like_a_loader_is_no_resume_helper():
    assert _lines(HANDLER, "GL304") == [(11, "GL304")]
    loads = HANDLER.replace('        torch.save(self.model.state_dict(), "ckpt.pt")\n',
                            '        torch.save(self.model.state_dict(), "ckpt.pt")\n'
                            '        self.model.load_state_dict(torch.load("ckpt.pt"))\n')
    assert _lines(loads, "GL304") == []


def test_per_construction_attributes_are_tensors_no_other_method_sets():
    # an attribute another method re-binds (`Frame.to()`, here never called) is not the
    # constructor's on every path: the construction's value is not kept (test_flow's `Moved`); a
    # module stored there may be moved in place later (`net.to(device)` after `Runner(net)`,
    # test_flow_values19)
    rebinds = FRAMES.replace(
        "    @staticmethod\n",
        "    def to(self, device):\n        self.translations = self.translations.to(device)\n        return self\n\n"
        "    @staticmethod\n")
    assert _lines(rebinds, "GL105") == []
