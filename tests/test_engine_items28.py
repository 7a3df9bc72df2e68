"""Engine items, twenty-first session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# PRECISION27 A1 (Comprehensive-Transformer-TTS model/coordconv.py): `if torch.cuda.is_available:`
# names the function without calling it. A function object is always true: the branch runs on
# every machine, so the coordinate channels are moved before they meet the input. The engine read
# only the called form and followed the path that skips the branch: GL105 at the arange.
COORDS = """
import torch
import torch.nn as nn


class AddCoords(nn.Module):
    def forward(self, input_tensor):
        b, c, dim_x = input_tensor.shape
        xx = torch.arange(dim_x, dtype=torch.int32)[None, None, :].float()
        xx = xx.repeat(b, 1, 1)
        if {test}:
            input_tensor = input_tensor.cuda()
            xx = xx.cuda()
        return torch.cat([input_tensor, xx], dim=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = AddCoords()
        self.conv = nn.Conv1d(3, 4, 3)

    def forward(self, x):
        return self.conv(self.add(x))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
out = model(torch.randn(2, 2, 8, device=device))
"""


def test_an_uncalled_availability_test_always_runs_its_branch():
    assert _lines(COORDS.format(test="torch.cuda.is_available"), "GL105", "GL116") == []


def test_the_called_form_is_silent_too():
    assert _lines(COORDS.format(test="torch.cuda.is_available()"), "GL105", "GL116") == []


def test_a_branch_on_an_unknown_flag_is_still_reported():
    assert _lines(COORDS.format(test="input_tensor.shape[0] > 4"), "GL105", "GL116") == [(9, "GL105")]


# PRECISION26 A3 (dataflowr/notebooks, spectral GNN): the model's forward builds its dropout on the
# spot, `x = nn.Dropout(d)(x)`, from a rate the test loop passes as 0.0. A module made at the call
# is in training mode whatever its owner's mode: `net.eval()` would change nothing, so the test loop
# that never calls it is not "evaluation in training mode" (GL404). The mode-sensitivity test read
# the word `Dropout` anywhere in the class's text.
DROP = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2){held}

    def forward(self, x, d):
        x = F.relu(self.fc1(x))
        x = {drop}
        return self.fc2(x)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    net.train()
    for _ in range(4):
        x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
        loss = F.cross_entropy(net(x, 0.5), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        for _ in range(2):
            acc = (net(torch.randn(4, 8), 0.0).argmax(1) == 0).float().mean()
"""


def test_a_dropout_built_at_its_call_does_not_make_the_model_mode_sensitive():
    assert _lines(DROP.format(held="", drop="nn.Dropout(d)(x)"), "GL404") == []


def test_a_dropout_the_model_holds_does():
    src = DROP.format(held="\n        self.drop = nn.Dropout(0.5)", drop="self.drop(x)")
    assert [c for _, c in _lines(src, "GL404")] == ["GL404"]


# E36-4 (uchida-takumi/CustomizedLinear#1): the module hands its plain tensor attribute and its
# weight to the `apply` of an autograd Function of the file; the Function's static forward
# multiplies them. `apply` was an unknown call, so the tensors never met. It now runs the static
# `forward(ctx, ...)` on the call's arguments, and a mismatch between two of its parameters is
# reported at the `apply` call, between the arguments passed for them.
APPLY = """
import torch
import torch.nn as nn


class MaskedFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, mask):
        return input.mm((weight * mask).t())

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, None


class MaskedLinear(nn.Module):
    def __init__(self, mask):
        super().__init__()
        {store}
        self.weight = nn.Parameter(torch.randn(mask.shape[1], mask.shape[0]))

    def forward(self, x):
        return MaskedFn.apply(x, self.weight, self.mask)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = MaskedLinear(torch.ones(4, 2)).to(device)
print(model(torch.randn(3, 4).to(device)))
"""


def test_a_host_attribute_handed_to_an_autograd_function_is_reported_at_apply():
    assert _lines(APPLY.format(store="self.mask = mask.float().t()"), "GL106", "GL116") == [(23, "GL116")]


def test_a_registered_buffer_handed_to_it_is_not():
    src = APPLY.format(store='self.register_buffer("mask", mask.float().t())')
    assert _lines(src, "GL106", "GL116") == []


# E36-2 (ARISE-Initiative/robomimic#205): a factory in a method of a module class that has no
# `forward`, reached from another module's forward through `self.randomizer.forward_in(obs)` and
# then `self._forward_in(inputs)` (defined by a subclass). The method was not "reachable from
# forward", so GL116 reported the mismatch (no fix) instead of GL105 (with `device=inputs.device`).
RANDOMIZER = """
import torch
import torch.nn as nn


class Randomizer(nn.Module):
    def forward_in(self, inputs):
        return self._forward_in(inputs)


class NoiseRandomizer(Randomizer):
    def _forward_in(self, inputs):
        return torch.rand(size=inputs.shape) * 0.1 + inputs


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.randomizer = {part}
        self.net = nn.Linear(4, 2)

    def forward(self, obs):
        return self.net(self.randomizer.forward_in(obs))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Encoder().to(device)
model(torch.rand(8, 4).to(device)).sum().backward()
"""


def test_a_submodule_method_called_from_forward_is_reachable_from_forward():
    assert _lines(RANDOMIZER.format(part="NoiseRandomizer()"), "GL105", "GL116") == [(13, "GL105")]


def test_a_part_of_unknown_class_is_not():
    src = RANDOMIZER.format(part="make_randomizer()").replace("import torch\n", "import torch\nfrom x import make_randomizer\n", 1)
    assert _lines(src, "GL105", "GL116") == []


# E36-5 (Prosper's HCNN): forward fills device-less `torch.zeros(...)` buffers step by step and
# returns `torch.cat([...])` of them; the caller splits the output and meets it with device
# targets. GL116 reported the loss ("made by torch.cat(...)"); the cause is forward's factories,
# GL105's shape: reported at each factory with `device=Y.device`.
JOINED = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(2, 2)

    def forward(self, Y):
        past_error = torch.zeros(Y.shape[0], Y.shape[1], 2)
        forecast = {second}
        for t in range(Y.shape[0]):
            past_error[t] = self.cell(Y[t])
        return torch.cat([past_error, forecast], dim=0)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
Y = torch.randn(3, 4, 2).to(device)
targets = torch.zeros(3, 4, 2, device=device)
output = model(Y)
past, future = torch.split(output, 3)
loss = nn.functional.mse_loss(past, targets)
"""


def test_a_cat_of_forward_factories_is_reported_at_each_factory():
    src = JOINED.format(second="torch.zeros(1, Y.shape[1], 2)")
    assert _lines(src, "GL105", "GL116") == [(12, "GL105"), (13, "GL105")]


def test_a_cat_with_a_part_of_unknown_origin_is_left_to_gl116():
    src = JOINED.format(second="torch.from_numpy(Y.cpu().numpy()[:1])")
    assert [c for _, c in _lines(src, "GL105", "GL116")] == ["GL116"]


# E36-3 (ray-project/ray#40940, RLlib's ComplexInputNetwork): sub-networks built by a function
# (RLlib's `ModelCatalog.get_model_v2(...)`; the fixture keeps a file helper in its place) and kept
# in a plain dict on `self` are not registered. A call of a module-level function of the file
# every `return` of which builds a module constructs a module, as a file class's call does.
BUILDER = """
import torch.nn as nn


def fc_net(n):
    {body}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.one_hot = {{}}
        for i in range(2):
            self.one_hot[i] = fc_net(2)

    def forward(self, x):
        return self.one_hot[0](x)
"""


def test_a_function_that_builds_a_module_constructs_one():
    assert _lines(BUILDER.format(body="return nn.Sequential(nn.Linear(n, n), nn.Tanh())"), "GL107") == [(12, "GL107")]


def test_through_a_local_name_too():
    body = "net = nn.Linear(n, n)\n    return net"
    assert _lines(BUILDER.format(body=body), "GL107") == [(13, "GL107")]


def test_a_function_that_may_return_something_else_does_not():
    body = "if n > 1:\n        return nn.Linear(n, n)\n    return lambda x: x"
    assert _lines(BUILDER.format(body=body), "GL107") == []


# E38-4 (InfiniTensor/llaisys#11): `mask.logical_not()` of a host mask kept the host but lost
# "not a scalar" (element-wise methods were not listed as shape-keeping), so the mismatch with the
# device bias was not reported while `mask.clone()` and `~mask` were.
ELEMENTWISE = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
bias = torch.zeros(4, 4, device=device)
mask = {mask}
a = bias.masked_fill(mask.{meth}(), float("-inf"))
"""


def test_an_element_wise_method_keeps_the_receivers_shape():
    for meth in ("logical_not", "isnan", "floor"):
        src = ELEMENTWISE.format(mask="torch.ones(4, 4)", meth=meth)
        assert _lines(src, "GL116") == [(7, "GL116")], meth


def test_of_a_zero_dim_host_tensor_it_stays_silent():
    assert _lines(ELEMENTWISE.format(mask="torch.tensor(1.0)", meth="logical_not"), "GL116") == []


# E38-5 (pykeen/pykeen#936): `dense[keep] = scores` puts device values into a host tensor through a
# tensor index (`index_put_`, which needs them on the tensor's device); only the next operation on
# `dense` was reported, past the crash. A slice or an integer index copies across devices: silent.
INDEX_PUT = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
scores = torch.randn(6, device=device)
keep = torch.tensor([True, False, True, True, False, True, True, True])
dense = torch.zeros_like(keep, dtype=scores.dtype)
dense[{index}] = scores{value}
"""


def test_device_values_put_through_a_tensor_index_into_a_host_tensor():
    assert _lines(INDEX_PUT.format(index="keep", value=""), "GL116") == [(8, "GL116")]


def test_through_a_slice_or_an_integer_index_they_are_copied():
    assert _lines(INDEX_PUT.format(index="2:8", value=""), "GL116") == []
    assert _lines(INDEX_PUT.format(index="0", value="[0]"), "GL116") == []


# E38-2 (BatsResearch/csp#19): a wrapper module built around a module that is on the accelerator
# (`Interface(clip_model, table)`) has no known device of its own, so its forward was not run for
# the call `model(pairs)`, and the host table indexed with the device `pairs` went unreported. A
# module call whose inputs are all on the accelerator runs there: its forward is followed.
WRAPPER = """
import torch
import torch.nn as nn

device = "cuda:0" if torch.cuda.is_available() else "cpu"


class Interface(nn.Module):
    def __init__(self, clip_model, soft_embeddings):
        super().__init__()
        self.clip_model = clip_model
        self.soft_embeddings = soft_embeddings

    def forward(self, pair_idx):
        return self.soft_embeddings[pair_idx[:, 0]]


clip_model = nn.Linear(4, 4).to(device)
model = Interface(clip_model, {table})
pairs = torch.tensor([[0, 1], [2, 3]]).to(device)
print(model(pairs))
"""


def test_a_wrapper_around_a_device_module_runs_its_forward_with_device_inputs():
    assert _lines(WRAPPER.format(table="torch.zeros((5, 4))"), "GL116") == [(15, "GL116")]


def test_with_the_table_made_on_the_device_it_is_silent():
    assert _lines(WRAPPER.format(table="torch.zeros((5, 4), device=device)"), "GL116") == []


# E38-3 (idiap/fullgrad-saliency#5): `model.getFeatures(data)`, a method of the model's class
# other than forward that runs its registered layer, on a model never moved while `data` is. The
# engine found the layer on the host meeting the device input inside the method; GL112 took a part
# met inside its own class for GL107's shape (a part kept out of the registry) and stayed silent.
# It is reported at the method's call, naming the model.
FEATURES = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x)

    def getFeatures(self, x):
        feat = self.conv(x)
        return feat.mean(dim=(2, 3)), feat


model = Net(){move}
data = torch.randn(2, 3, 8, 8).to(device)
out, feat = model.getFeatures(data)
"""


def test_a_method_of_an_unmoved_model_run_on_moved_data_is_reported_at_its_call():
    assert _lines(FEATURES.format(move=""), "GL112", "GL116", "GL107") == [(23, "GL112")]


def test_with_the_model_moved_it_is_silent():
    assert _lines(FEATURES.format(move=".to(device)"), "GL112", "GL116", "GL107") == []


# E38-1 (Novartis/torchsurv#113): event times drawn with
# `torch.distributions.Exponential(rate).sample()` were of no known kind, so the estimator state
# kept from a moved batch of them and the host tensors `predict()` concatenates with it were never
# compared. A distribution's draws are tensors where its parameters are.
DRAWN = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class KM:
    def fit(self, time):
        self.time = time[torch.argsort(time)]

    def predict(self):
        return torch.cat((torch.ones(1{dev}), self.time))


times = torch.distributions.Exponential(torch.ones(64)).sample()
for step in range(3):
    tb = times[torch.randint(0, 64, (16,))].to(device)
    km = KM()
    km.fit(tb)
    print(km.predict())
"""


def test_a_distributions_draw_is_a_tensor_where_its_parameters_are():
    assert _lines(DRAWN.format(dev=""), "GL116") == [(12, "GL116")]


def test_made_on_the_estimators_device_it_is_silent():
    assert _lines(DRAWN.format(dev=", device=self.time.device"), "GL116") == []


# E40-3 (Emmi-AI/noether#156): a normalizer keeps `targets.std(0)` of a (64, 3) host table and
# scales the device predictions with it. A reduction over one dimension of a tensor of at least
# two dimensions leaves at least one ("not a scalar", so it cannot ride along as a 0-dim CPU
# tensor); arithmetic keeps the operands' rank (`50.0 + 10.0 * inputs[:, :3]` is still 2-D).
REDUCED = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
inputs = torch.randn(64, 5)
targets = 50.0 + 10.0 * inputs[:, :3]
std = targets.{reduce}
out = torch.randn(8, 3, device=device)
pred = out * std
"""


def test_a_reduction_over_one_dimension_of_a_table_is_not_a_scalar():
    assert _lines(REDUCED.format(reduce="std(0)"), "GL116") == [(9, "GL116")]
    assert _lines(REDUCED.format(reduce="mean(dim=-1)"), "GL116") == [(9, "GL116")]


def test_a_full_reduction_may_be_a_scalar():
    assert _lines(REDUCED.format(reduce="std()"), "GL116") == []


# E40-1 (toshas/torch_truncnorm#2): `self.a, self.b = broadcast_all(a, b)` of device bounds, then
# `value * self._Z` with a host `value` drawn by `torch.empty(...).uniform_()`. The results of
# `torch.distributions.utils.broadcast_all` were unknown; they are its arguments as tensors on the
# device of the tensor arguments.
BROADCAST = """
import torch
from torch.distributions.utils import broadcast_all

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
a, b = broadcast_all(torch.zeros(4, device=device), 1.0)
value = torch.empty(4){move}.uniform_()
z = value * (b - a)
"""


def test_broadcast_all_keeps_the_device_of_its_tensor_arguments():
    assert _lines(BROADCAST.format(move=""), "GL116") == [(8, "GL116")]


def test_with_the_draw_moved_it_is_silent():
    assert _lines(BROADCAST.format(move=".to(device)"), "GL116") == []


# E40-2 (bayesiains/nflows#8): `self._encoder = context_encoder if context_encoder is not None
# else (lambda x: x)`, built with a module: the conditional expression was a join of a module and a
# function (unknown), so the encoder's output had no device and the host noise added to it went
# unreported. A conditional expression whose test is `X is not None` of a value that is never None
# is its first branch.
IFEXP = """
import torch
import torch.nn as nn


class CondNormal(nn.Module):
    def __init__(self, context_encoder=None):
        super().__init__()
        self._encoder = context_encoder if context_encoder is not None else (lambda x: x)

    def forward(self, context):
        means = self._encoder(context)
        noise = torch.randn(means.shape{dev})
        return means + noise


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = CondNormal(context_encoder=nn.Linear(3, 2)).to(device)
print(model(torch.randn(4, 3, device=device)))
"""


def test_a_conditional_expression_on_a_value_never_none_is_its_first_branch():
    assert [c for _, c in _lines(IFEXP.format(dev=""), "GL105", "GL116")] == ["GL105"]


def test_with_the_noise_on_the_means_device_it_is_silent():
    assert _lines(IFEXP.format(dev=", device=means.device"), "GL105", "GL116") == []
