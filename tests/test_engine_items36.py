"""Engine items, twenty-ninth session (each test checked to fail on 7d8aa31 unless it says it is a
control that already passed there)."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry


def _run(src: str, *codes: str):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# E60-1 (sd-scripts#2102): a scheduler's `add_noise` re-binds `self.table` to the latents' device;
# the loop looks the table up with host indices *before* calling it, so the first pass is fine and
# every later pass meets an accelerator table with host indices.
SCHED = """
import torch


class Sched:
    def __init__(self):
        self.table = torch.linspace(0.1, 0.9, 10)

    def add_noise(self, x, t):
        {move}
        return x * table[t.to(x.device)]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
sched = Sched()
for step in range({n}):
    x = torch.randn(4, device=device)
    t = torch.randint(0, 10, (4,))
    v = torch.index_select(sched.table, 0, t.cpu())
    {cut}
    y = sched.add_noise(x, t)
"""


def test_a_table_a_later_call_moves_meets_host_indices_on_the_next_pass():
    src = SCHED.format(move="table = self.table = self.table.to(x.device)", n=3, cut="pass")
    assert _lines(src, "GL116") == [(19, "GL116")]


def test_the_joined_value_at_the_top_of_the_loop_is_still_host_or_accelerator():
    # the extra pass only reports: what value_of answers stays the fixed point's (control)
    src = textwrap.dedent(SCHED.format(move="table = self.table = self.table.to(x.device)", n=3, cut="pass"))
    m = ScriptModel(cst.parse_module(src), src)
    loop = next(s for s in m.module.body if isinstance(s, cst.For))
    lookup = loop.body.body[2].body[0].value  # torch.index_select(...)
    assert m.value_of(lookup.args[0].value).dev.where == "either"


def test_a_table_that_stays_on_the_host_is_silent():
    # control (silent on 7d8aa31 too): `add_noise` indexes a copy, the table itself stays put
    src = SCHED.format(move="table = self.table.to(x.device)", n=3, cut="pass")
    assert _lines(src, "GL116") == []


def test_a_loop_that_runs_once_or_leaves_early_is_silent():
    # controls: a pass that ends in `break`, or one `continue` can skip the move, hands other
    # values round than the end of the body
    assert _lines(SCHED.format(move="table = self.table = self.table.to(x.device)", n=3, cut="break"), "GL116") == []
    assert _lines(SCHED.format(move="table = self.table = self.table.to(x.device)", n=3,
                               cut="if step % 2:\n        continue"), "GL116") == []


# A recurrent state kept on the host at the end of each pass (`h = out.detach().cpu()`) meets the
# device inputs of the next pass.
STATE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
cell = nn.Linear(4, 4).to(device)
h = torch.zeros(2, 4, device=device)
for step in range(5):
    x = torch.randn(2, 4).to(device)
    out = cell(x + h)
    h = {keep}
"""


def test_a_state_moved_to_the_host_at_the_end_of_the_pass_meets_device_inputs():
    assert _lines(STATE.format(keep="out.detach().cpu()"), "GL116") == [(10, "GL116")]


def test_a_state_kept_on_the_device_is_silent():
    # control (silent on 7d8aa31 too)
    assert _lines(STATE.format(keep="out.detach()"), "GL116") == []


# `x.cpu()` under a test that names no device is a host copy on a GPU run as well
# (`elif huber_schedule == "snr":`, sd-scripts#2102); under a device or flag test it may be a
# CPU-only branch's choice and stays silent (E42-8).
BRANCH = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
table = torch.linspace(0.1, 0.9, 10).to(device)


def lookup(t, {param}):
    if {test}:
        return torch.index_select(table, 0, t.cpu())
    return table[t.to(device)]


print(lookup(torch.randint(0, 10, (4,)), {arg}))
"""


def test_a_host_copy_under_a_test_that_names_no_device_is_reported():
    src = BRANCH.format(param="schedule", test='schedule == "snr"', arg='"snr"')
    assert _lines(src, "GL116") == [(10, "GL116")]


def test_a_host_copy_under_a_device_test_stays_silent():
    # controls (silent on 7d8aa31 too)
    for param, test, arg in (("use_cpu", "use_cpu", "True"), ("use_gpu", "not use_gpu", "False"),
                             ("args", "args.device == 'cpu'", "None")):
        assert _lines(BRANCH.format(param=param, test=test, arg=arg), "GL116") == [], test


def test_the_message_says_the_first_pass_is_fine():
    src = SCHED.format(move="table = self.table = self.table.to(x.device)", n=3, cut="pass")
    (d,) = _run(src, "GL116").diagnostics
    assert "on every pass but the first of the loop on line 16" in d.message


# E61-1 (darts#3052): a module caches a plain tensor attribute on first use; a forward on the
# host before `model.to(device)` leaves the cache there (Module.to moves parameters and buffers).
CACHE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        {init}

    def forward(self, x):
        if {guard}:
            self.mask = torch.ones(4, dtype=torch.bool, device=x.device)
        return self.lin(x).masked_fill(self.mask, 0.0)


m = M()
{before}
m.to(device)
out = m(torch.randn(2, 4).to(device))
"""


def _cache(init="self.mask = None", guard="self.mask is None", before="m(torch.randn(2, 4))"):
    return CACHE.format(init=init, guard=guard, before=before)


def test_a_cache_built_by_a_host_call_before_the_move_is_reported():
    (d,) = _run(_cache(), "GL116").diagnostics
    assert d.line == 17 and "`self.mask` is cached on the CPU by the call on line 21" in d.message
    assert d.fix is not None and d.fix.applicability == "unsafe"


def test_cache_controls_stay_silent():
    # controls (silent on 7d8aa31 too): a buffer moves with the module; a guard that compares
    # devices rebuilds the cache; no call before the move; the call comes after the move
    assert _lines(_cache(init='self.register_buffer("mask", None, persistent=False)'), "GL116") == []
    assert _lines(_cache(guard="self.mask is None or self.mask.device != x.device"), "GL116") == []
    assert _lines(_cache(before="pass"), "GL116") == []
    assert _lines(_cache(init="self.mask = torch.ones(4, dtype=torch.bool)", guard="False"), "GL116") == []
    src = _cache(before="pass").replace("m.to(device)\n", "m.to(device)\nm(torch.randn(2, 4).to(device))\n")
    assert _lines(src, "GL116") == []


# G62-1 (fixtures62; a safe fix that broke correct code): the host factory sits in the list
# display that binds the stacked list; `device=parts.device` there names a list not bound yet.
STACKED = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class L2(nn.Module):
    def forward(self, pred):
        parts = [pred.mean(), torch.tensor(0.0)]
        return torch.stack(parts).mean()


def f(pred):
    parts = [pred.mean(), torch.zeros(3).sum()]
    return torch.stack(parts)


model = nn.Linear(3, 3).to(device)
L2()(model(torch.randn(2, 3).to(device))).backward()
f(model(torch.randn(2, 3).to(device)))
"""


def test_no_fix_names_a_list_bound_by_the_factory_statement():
    result = _run(STACKED, "GL105", "GL116")
    assert sorted((d.line, d.code) for d in result.diagnostics) == [(10, "GL105"), (16, "GL116")]
    assert all(d.fix is None for d in result.diagnostics), [d.fix for d in result.diagnostics]
    assert all("parts.device" not in d.message for d in result.diagnostics)
    gl116 = next(d for d in result.diagnostics if d.code == "GL116")
    assert "`parts` holds tensors on the CPU" in gl116.message


# E62-3 (pix2pix#253): `Module.cpu()` is in place, also inside a statement's call; a save in the
# training loop leaves the model on the host for every later pass.
SAVE = """
import copy

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    x = torch.randn(8, 4).to(device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    {save}
{after}
"""


def test_a_module_saved_through_cpu_in_the_loop_meets_device_inputs_on_the_next_pass():
    (d,) = _run(SAVE.format(save='torch.save(model.cpu().state_dict(), "m.pt")', after=""), "GL116",
                "GL112").diagnostics
    assert (d.line, d.code) == (12, "GL116")
    assert "moved to the CPU in place by `model.cpu()` on line 16" in d.message


def test_saves_that_leave_the_model_where_it_runs_are_silent():
    # controls (silent on 7d8aa31 too): a copy moved; moved back after the save; saved after the loop
    for save, after in (('torch.save(copy.deepcopy(model).cpu().state_dict(), "m.pt")', ""),
                        ('torch.save(model.cpu().state_dict(), "m.pt")\n    model.to(device)', ""),
                        ("pass", 'torch.save(model.cpu().state_dict(), "m.pt")')):
        assert _lines(SAVE.format(save=save, after=after), "GL116", "GL112") == [], save


# E62-2 (PatchmatchNet#35, fixtures62's minimal repro): a dict display filled under computed keys
# (`out[f"stage_{s}"] = [self.lin(x)]` in a loop) gives its values when indexed.
STAGES = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        out = {{}}
        for s in range(1, 3):
            out[f"stage_{{s}}"] = [self.lin(x)]
        return out


def loss_fn(preds, gt):
    loss = {init}
    for l in range(1, 3):
        p = preds[f"stage_{{l}}"]
        for i in range(len(p)):
            loss = loss + F.smooth_l1_loss(p[i], gt)
    return loss


model = Net().to(device)
x = torch.randn(2, 3).to(device)
loss_fn(model(x), x).backward()
"""


def test_values_stored_under_computed_keys_are_read_back():
    assert _lines(STAGES.format(init="torch.zeros(1)"), "GL116") == [(26, "GL116")]


def test_an_accumulator_that_starts_from_a_number_is_silent():
    # control (silent on 7d8aa31 too)
    assert _lines(STAGES.format(init="0"), "GL116") == []
