"""Engine and rule items, thirty-second session (each test checked to fail on 77361210 unless it says
it is a control that already passed there).

N1 (a generality probe, not a bug report): every committed positive fixture re-checked with common
names renamed (`device` -> `where`, ...) kept 1,051 of 1,096 markers; most of the losses came from
a device variable that was recognised by its name only. A name every binding of which is a device
expression (`"cuda" if torch.cuda.is_available() else "cpu"`, `x.device`) is now a device whatever
it is called."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


LOADER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

where = {choice}
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
net = nn.Linear(4, 1)
net.to(where)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    pred = net(x)
    nn.functional.mse_loss(pred, y).backward()
    opt.step()
"""


def test_device_string_choice_named_otherwise_is_a_device():
    src = LOADER.replace("{choice}", '"cuda" if torch.cuda.is_available() else "cpu"')
    assert (13, "GL101") in _lines(src, "GL101")


def test_device_string_choice_message_names_the_variable():
    src = LOADER.replace("{choice}", '"cuda" if torch.cuda.is_available() else "cpu"')
    msgs = [d.message for d in _run(src, "GL101").diagnostics if d.line == 13]
    assert msgs and "where" in msgs[0]


def test_choice_picked_by_a_tensor_is_not_a_configured_device():
    # control: a device string picked by where a tensor already is (`t.is_cuda`) names that
    # tensor's device, which may be the host (silent on 77361210 too)
    src = LOADER.replace("{choice}", '"cuda" if torch.ones(1).is_cuda else "cpu"')
    assert (13, "GL101") not in _lines(src, "GL101")


def test_choice_between_strings_that_are_not_devices_is_nothing():
    # control: `"nccl" if ... else "gloo"` is no device (silent on 77361210 too)
    src = LOADER.replace("{choice}", '"nccl" if torch.cuda.is_available() else "gloo"')
    assert _lines(src, "GL101", "GL116") == []


def test_host_only_choice_is_the_host():
    # control: both branches the host (silent on 77361210 too)
    src = LOADER.replace("{choice}", '"cpu" if torch.cuda.is_available() else "cpu"')
    assert _lines(src, "GL101", "GL116") == []


RESUME = """
import torch
import torch.nn as nn


def main(resume):
    where = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if resume:
        ckpt = torch.load(resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
    model = model.to(where)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.randn(3, 4, device=where)).sum().backward()
        optimizer.step()


main("ckpt.pt")
"""


def test_optimizer_state_before_a_move_to_a_device_named_otherwise():
    assert (13, "GL111") in _lines(RESUME, "GL111")


def test_optimizer_state_after_the_move_is_silent():
    src = RESUME.replace("    model = model.to(where)\n", "").replace(
        "    optimizer = torch.optim", "    model = model.to(where)\n    optimizer = torch.optim")
    assert _lines(src, "GL111") == []


FORWARD = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        d = {bind}
        z = torch.zeros(x.shape[0], 8).to(d)
        return self.proj(x) + z


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
head = Head().to(device)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    head(torch.randn(2, 8, device=device)).pow(2).mean().backward()
    opt.step()
"""


def test_create_then_move_to_a_tensors_device_in_a_short_name():
    assert (13, "GL501") in _lines(FORWARD.replace("{bind}", "x.device"), "GL501")


def test_create_then_move_to_a_dtype_in_a_short_name_is_silent():
    # control: `.to(d)` with `d = x.dtype` casts (silent on 77361210 too)
    assert _lines(FORWARD.replace("{bind}", "x.dtype"), "GL501") == []


def test_name_bound_to_an_integer_is_not_taken_for_a_device():
    # control: `.to(k)` with `k = 0` is left alone by the binding rule (an integer binding is
    # not read as a device index by name; silent on 77361210 too)
    assert _lines(FORWARD.replace("{bind}", "0"), "GL501") == []


# P68-1 (GL403 false positive, NTIRE ESR test harness, nathan66666/DVMSR#5): a model frozen through
# `named_parameters()`, and one a helper of the file freezes and returns, evaluated by a function
# it is handed to, records no graph.
FROZEN = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
batches = [torch.randn(2, 4, device=device) for _ in range(3)]
model = nn.Linear(4, 2).to(device)
model.eval()
for {target} in model.{params}():
    v.requires_grad = False
outs = []
for x in batches:
    outs.append(model(x))
"""


def test_frozen_through_named_parameters_is_silent():
    assert _lines(FROZEN.replace("{target}", "k, v").replace("{params}", "named_parameters"), "GL403") == []


def test_frozen_through_parameters_is_silent():
    # control (silent on 77361210 too)
    assert _lines(FROZEN.replace("{target}", "v").replace("{params}", "parameters"), "GL403") == []


def test_named_parameters_loop_that_does_not_freeze_still_reports():
    # control: the loop sets nothing about gradients (reported on 77361210 too)
    src = FROZEN.replace("{target}", "k, v").replace("{params}", "named_parameters").replace(
        "v.requires_grad = False", "print(k)")
    assert _lines(src, "GL403") == [(13, "GL403")]


HARNESS = """
import torch
import torch.nn as nn


def select_model(device):
    model = nn.Linear(4, 2)
    model.eval()
    for k, v in model.named_parameters():
        v.requires_grad = {flag}
    model = model.to(device)
    return model, "linear"


def run(model, device):
    outs = []
    for i in range(3):
        outs.append(model(torch.randn(2, 4, device=device)))
    return outs


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, name = select_model(device)
    run(model, device)
{more}

main()
"""


def test_model_frozen_by_the_helper_that_returns_it_is_silent():
    assert _lines(HARNESS.replace("{flag}", "False").replace("{more}", ""), "GL403") == []


def test_model_the_helper_leaves_trainable_still_reports():
    # control (reported on 77361210 too)
    assert _lines(HARNESS.replace("{flag}", "True").replace("{more}", ""), "GL403") == [(18, "GL403")]


def test_one_call_with_a_trainable_model_still_reports():
    # control: `run` is also handed a model nobody froze (reported on 77361210 too)
    src = HARNESS.replace("{flag}", "False").replace("{more}", "    run(nn.Linear(4, 2).to(device).eval(), device)")
    assert _lines(src, "GL403") == [(18, "GL403")]


# G68-1 (GL403, ultralytics/yolov3 PR#457): `hasattr(model, "hyp")` in the evaluation loop reads an
# attribute; it does not hand the model to code that might take gradients.
HASATTR = """
import torch
import torch.nn as nn


def compute_loss(out, y):
    return ((out - y) ** 2).mean(), out.sum()


def test(model, data):
    model.eval()
    total = 0.0
    for x, y in data:
        out = model(x)
        if {test}:
            total += compute_loss(out, y)[1].item()
    return total


model = nn.Linear(4, 2)
print(test(model, [(torch.randn(2, 4), torch.randn(2, 2))]))
"""


def test_hasattr_on_the_model_does_not_hide_the_evaluation_loop():
    assert _lines(HASATTR.replace("{test}", 'hasattr(model, "hyp")'), "GL403") == [(14, "GL403")]


def test_model_handed_to_unknown_code_stays_silent():
    # control: a call of code the file does not define that is given the model may take
    # gradients (silent on 77361210 too)
    src = HASATTR.replace("{test}", 'attack(model, "hyp")').replace("import torch\n", "import torch\nfrom lib import attack\n", 1)
    assert _lines(src, "GL403") == []


# G68-6 (GL406, h2o-llmstudio#663): gradient accumulation counted by a variable the loop bumps
# first thing (`num_updates += 1`), the optimizer stepped under `num_updates % k == 0`, the
# scheduler (if there is one) stepped on every micro-batch.
ACCUM = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, 10)
batches = [torch.randn(2, 4) for _ in range(8)]
k = 4
num_updates = 0
for epoch in range(3):
    for i in range(len(batches)):
{bump}
        (model(batches[i]).pow(2).mean() / k).backward()
        if num_updates % k == 0:
            opt.step()
            opt.zero_grad()
{sched}
{after}
"""


def _accum(bump="        num_updates += 1", sched="        if sched is not None:\n            sched.step()", after=""):
    return ACCUM.replace("{bump}", bump).replace("{sched}", sched).replace("{after}", after)


def test_scheduler_every_micro_batch_with_an_update_counter_reports():
    src = _accum(sched="        if sched is not None:\n            sched.step()")
    assert _lines(src, "GL406") == [(19, "GL406")]


def test_scheduler_under_the_accumulation_guard_is_silent():
    # control (silent on 77361210 too)
    src = _accum(sched="            sched.step()")
    assert _lines(src, "GL406") == []


def test_counter_bumped_after_the_guard_is_not_read():
    # the counter's value at the guard on the first pass is not the one after a bump: silent
    src = _accum(bump="        pass", after="        num_updates += 1")
    assert _lines(src, "GL406") == []


def test_counter_started_from_an_unknown_value_is_not_read():
    src = _accum().replace("num_updates = 0", "num_updates = len(batches)")
    assert _lines(src, "GL406") == []


# G68-2 (GL402, fairseq#2255's trainer shape): a sum kept on `self` by a step method the script
# calls in a loop outlives the calls, so it chains every step's graph.
TRAINER = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.total_loss = 0.0

    def train_step(self, x, y):
{reset}
        self.opt.zero_grad()
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.total_loss += {added}


trainer = Trainer(nn.Linear(4, 1))
{driver}
"""
LOOP = "for step in range(100):\n    trainer.train_step(torch.randn(8, 4), torch.randn(8, 1))"


def _trainer(reset="        pass", added="loss", driver=LOOP):
    return TRAINER.replace("{reset}", reset).replace("{added}", added).replace("{driver}", driver)


def test_sum_on_self_in_a_step_method_called_in_a_loop_reports():
    assert _lines(_trainer(), "GL402") == [(19, "GL402")]


def test_sum_on_self_fix_detaches():
    rules = [Registry.load().by_code("GL402")()]
    fixed = run_text("train.py", textwrap.dedent(_trainer()), rules, Options(fix=True, write=False)).text
    assert "        self.total_loss += loss.detach()\n" in fixed
    assert fixed.count(".detach()") == 1


def test_sum_of_the_number_is_silent():
    assert _lines(_trainer(added="loss.item()"), "GL402") == []


def test_sum_reset_first_in_each_call_is_silent():
    assert _lines(_trainer(reset="        self.total_loss = 0.0"), "GL402") == []


def test_step_method_called_once_is_silent():
    assert _lines(_trainer(driver="trainer.train_step(torch.randn(8, 4), torch.randn(8, 1))"), "GL402") == []
