"""What a module's constructor leaves on the instance (gpulint/flow.py and GL106).

Shapes from real code: auraloss#34 (a filterbank set under `if scale == "mel":` in `__init__`, a
move under `if device is not None:` that the subclass's constructions never reach through
`**kwargs`), xLSTM-pytorch#2 (tensor attributes set in a helper `__init__` calls)."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.model import ScriptModel
from fixture_support import check, fix

TAIL = """

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(4, 4).to(device)
"""


def model_of(src: str) -> ScriptModel:
    src = textwrap.dedent(src)
    return ScriptModel(cst.parse_module(src), src)


def forward_read(m: ScriptModel, attr: str):
    for n in m.nodes:
        if isinstance(n, cst.Attribute) and n.attr.value == attr and isinstance(n.value, cst.Name) \
                and n.value.value == "self":
            fn = m.enclosing(n, cst.FunctionDef)
            if fn is not None and fn.name.value == "forward":
                return m.value_of(n)
    raise AssertionError("no read in forward")


BRANCH = """
import torch
import torch.nn as nn


class Loss(nn.Module):
{default}    def __init__(self, n, scale=None):
        super().__init__()
        self.scale = scale
        if scale == "mel":
            self.fb = torch.ones(n, n).unsqueeze(0)

    def forward(self, y):
        if self.scale is not None:
            y = torch.matmul(self.fb, y)
        return y.sum()


crit = Loss(4, scale="mel").to(device)
"""


def branch_src(default: str = "") -> str:
    src = BRANCH.replace("{default}", default)
    return src.replace("crit = ", TAIL.strip() + "\ncrit = ", 1) + "print(crit(x))\n"


def test_an_attribute_set_on_one_branch_of_init_is_that_value_when_read():
    v = forward_read(model_of(branch_src()), "fb")
    assert v.kind == "tensor" and v.dev is not None and v.dev.is_host


def test_a_class_level_default_keeps_the_other_path():
    # the scale comes from the command line: either branch of `if scale == "mel":` may run
    src = branch_src("    fb = None\n\n").replace('Loss(4, scale="mel")', "Loss(4, scale=sys.argv[1])")
    v = forward_read(model_of("import sys\n" + src), "fb")
    assert not (v.kind == "tensor" and v.dev is not None and v.dev.is_host)


def test_a_constant_argument_decides_the_branch_despite_the_default():
    # every construction passes `scale="mel"`: `if scale == "mel":` runs, the default is never read
    # (the engine's string constants, sixteenth session)
    v = forward_read(model_of(branch_src("    fb = None\n\n")), "fb")
    assert v.kind == "tensor" and v.dev is not None and v.dev.is_host


SUBCLASS = """
import torch
import torch.nn as nn


class Base(nn.Module):
    def __init__(self, n, device=None):
        super().__init__()
        self.device = device
        self.fb = torch.ones(n, n).unsqueeze(0)
        if self.scale_given() and device is not None:
            self.fb = self.fb.to(self.device)

    def scale_given(self):
        return True

    def forward(self, y):
        return torch.matmul(self.fb, y).sum()


class Mel(Base):
    def __init__(self, n, **kwargs):
        super().__init__(n, **kwargs)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(4, 4).to(device)
crit = Mel({args}).to(device)
print(crit(x))
"""


def test_a_move_under_a_parameter_no_subclass_construction_gives_is_not_a_placement():
    src = SUBCLASS.replace("{args}", "4")
    assert [d.code for d in check(src, ["GL106"])] == ["GL106"]
    assert "register_buffer" in fix(src, ["GL106"], unsafe=False).text


def test_a_subclass_construction_passing_the_device_through_kwargs_places_it():
    src = SUBCLASS.replace("{args}", "4, device=device")
    assert check(src, ["GL106"]) == []


HELPER = """
import torch
import torch.nn as nn


class Attn(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)
        self._build_mask(n)

    def _build_mask(self, n):
        self.mask = torch.tril(torch.ones(n, n))

    def forward(self, x):
{body}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Attn(4).to(device)
print(model(torch.randn(2, 4, 4, device=device)))
"""


def test_a_tensor_attribute_set_by_a_helper_init_calls_is_gl106_with_its_fix():
    src = HELPER.replace("{body}", "        return self.proj(x).masked_fill(self.mask == 0, -1e9)")
    assert [d.code for d in check(src, ["GL106", "GL116", "GL105"])] == ["GL106"]
    new = fix(src, ["GL106"], unsafe=False).text
    assert 'self.register_buffer("mask", torch.tril(torch.ones(n, n)), persistent=False)' in new
    assert "self._build_mask(n)" in new


def test_a_helper_forward_calls_too_is_not_construction_state():
    src = HELPER.replace("{body}", "        self._build_mask(x.size(-1))\n"
                                    "        return self.proj(x).masked_fill(self.mask == 0, -1e9)")
    assert [d.code for d in check(src, ["GL106"])] == []


STATES = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, x_example):
        super().__init__()
        n = x_example.shape[-1]
        self.gate = nn.Linear(n, n)
        self.init_states(x_example)

    def init_states(self, x):
        self.h = torch.zeros(1, x.shape[-1], device=x.device)

    def forward(self, x):
        h = self.h
        out = torch.tanh(x + self.gate(h))
        self.h = out.mean(0, keepdim=True).detach()
        return out


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
block = Block({example}).to(device)
print(block(torch.randn(2, 4, device=device)))
"""


def test_states_made_on_a_cpu_example_inputs_device_and_read_through_a_local_are_gl106():
    # xLSTM-pytorch#2: `device=x.device` of a CPU example; forward copies the state to a local and
    # feeds it to a torch layer before reassigning it
    src = STATES.replace("{example}", "torch.zeros(2, 4)")
    found = check(src, ["GL106"])
    assert [(d.code, d.line) for d in found] == [("GL106", line_of(src, "self.h = torch.zeros"))]


def test_states_made_on_the_example_inputs_device_when_it_is_moved_are_not():
    src = STATES.replace("{example}", "torch.zeros(2, 4, device=device)")
    assert check(src, ["GL106", "GL116"]) == []


def test_a_torch_layer_in_forward_given_the_state_moved_to_the_inputs_device_is_silent():
    src = STATES.replace("{example}", "torch.zeros(2, 4, device=device)").replace(
        "out = torch.tanh(x + self.gate(h))", "out = torch.tanh(x + self.gate(h.to(x.device)))")
    assert check(src, ["GL106", "GL116", "GL105"]) == []


def line_of(src: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if text in line)


ALIASES = """
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self, n=3, dim=3):
        super().__init__()
        params = [torch.rand(1, dim) for i in range(n)]
        self.params = []
        for i, param in enumerate(params):
            self.register_buffer("param_{}".format(i), param)
{keep}
        self.proj = nn.Linear(dim, 1)

    def forward(self, x):
{use}
        return self.proj(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
a = M().to(device)
print(a(torch.randn(4, 3).to(device)))
"""


def aliases(keep: str, use: str) -> str:
    return ALIASES.replace("{keep}", keep).replace("{use}", use)


def test_a_list_of_the_tensors_registered_keeps_the_cpu_originals():
    # pytorch#29807: `self.params.append(getattr(self, name))` right after `register_buffer(name, t)`
    src = aliases('            self.params.append(getattr(self, "param_{}".format(i)))',
                  "        for p in self.params:\n            x = x + p")
    assert [(d.code, d.line) for d in check(src, ["GL116", "GL105", "GL106"])] == [
        ("GL116", line_of(src, "x = x + p"))]


def test_the_buffers_looked_up_in_forward_are_where_the_module_is():
    src = aliases("            pass",
                  '        for i in range(3):\n            x = x + getattr(self, "param_{}".format(i))')
    assert check(src, ["GL116", "GL105", "GL106"]) == []


def test_tensors_made_in_init_and_kept_in_a_list_are_gl116_not_gl105():
    src = aliases("            self.params.append(param)", "        for p in self.params:\n            x = x + p")
    assert [d.code for d in check(src, ["GL116", "GL105", "GL106"])] == ["GL116"]
    moved = src.replace("x = x + p", "x = x + p.to(x.device)")
    assert check(moved, ["GL116", "GL105", "GL106"]) == []


EPOCH_END = """
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)

    def {name}(self, outputs):
        total = torch.zeros(3, 3)
        for out in outputs:
            total += out
        return total


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = M().to(device)
x = torch.randn(2, 4).to(device)
print(model.{name}([model(x).t() @ model(x)]))
"""


def test_a_factory_in_a_method_forward_does_not_reach_is_gl116_at_the_operation():
    # code2seq#52: an epoch-end hook's accumulator made without a device
    src = EPOCH_END.replace("{name}", "epoch_end")
    assert [(d.code, d.line) for d in check(src, ["GL105", "GL116"])] == [("GL116", line_of(src, "total += out"))]


def test_forward_inputs_are_tensors_when_the_only_instance_is_built_with_to_device():
    # neural_renderer#52: `model = Mesh().to(device)`; every call of `model` passes a tensor, so
    # forward's parameter is a tensor and the helper's discarded `.to()` on it is GL104
    src = textwrap.dedent('''
        import torch
        import torch.nn as nn


        def look(vertices, direction):
            direction.to(vertices.device)
            return vertices * direction


        class Mesh(nn.Module):
            def __init__(self):
                super().__init__()
                self.v = nn.Parameter(torch.randn(3))

            def forward(self, direction):
                return look(self.v, direction)


        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Mesh(){chain}
        print(model(torch.tensor([1.0, 0.0, 0.0])))
    ''')
    for chain in (".to(device)", ".to(device).train()"):
        found = check(src.replace("{chain}", chain), ["GL104"])
        assert [(d.code, d.line) for d in found] == [("GL104", line_of(src, "direction.to(vertices.device)"))]


def test_an_init_attribute_built_by_a_method_chain_is_gl106_only():
    # SRGAN-PyTorch#22 (fixtures14): `self.mean = torch.Tensor([...]).view(1, 3, 1, 1)` was
    # reported by GL106 at the assignment and by GL116 at every use in forward
    src = textwrap.dedent('''
        import torch
        import torch.nn as nn


        class ContentLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.mean = torch.Tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)

            def forward(self, source, target):
                return ((source - self.mean) - (target - self.mean)).abs().mean()


        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loss = ContentLoss().to(device)
        x = torch.randn(2, 3, 4, 4, device=device)
        print(loss(x, x))
    ''')
    assert [d.code for d in check(src, ["GL106", "GL116", "GL105"])] == ["GL106"]
