"""Engine and rule items, thirty-first session (each test checked to fail on 94610b46 unless it says
it is a control that already passed there)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# P64-1 (dl-chem-101#10's fixed form): two instances of a wrapper that takes its device as a
# constructor argument, one on the available device and one on the CPU; each moves its own network
# and its own inputs with `self._device`, so every call meets one device.
WRAPPER = """
import torch
import torch.nn as nn


class Wrapper:
    def __init__(self, device=None):
        self._device = device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu")
        self.network = nn.Linear(4, 2)
        self.network.to(self._device)

    def score(self, x):
        x = x{move}
        return self.network(x)


{calls}
"""


def test_two_instances_on_two_devices_are_not_mixed():
    src = WRAPPER.format(move=".to(self._device)", calls="Wrapper().score(torch.randn(2, 4))\n"
                         "Wrapper(device='cpu').score(torch.randn(2, 4))")
    assert _lines(src, "GL116", "GL112", "GL101") == []


def test_two_instances_in_the_other_order_are_not_mixed():
    src = WRAPPER.format(move=".to(self._device)", calls="Wrapper(device='cpu').score(torch.randn(2, 4))\n"
                         "Wrapper().score(torch.randn(2, 4))")
    assert _lines(src, "GL116", "GL112", "GL101") == []


def test_one_instance_on_the_host_is_silent():
    # control (silent on 94610b46 too)
    src = WRAPPER.format(move=".to(self._device)", calls="Wrapper(device='cpu').score(torch.randn(2, 4))")
    assert _lines(src, "GL116", "GL112", "GL101") == []


def test_a_class_moved_to_one_device_by_every_construction_still_reports_a_host_input():
    # control: one construction, a fixed accelerator, the input never moved
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class Wrapper:
        def __init__(self, device):
            self._device = device
            self.network = nn.Linear(4, 2)
            self.network.to(self._device)

        def score(self, x):
            return self.network(x)


    Wrapper(device).score(torch.randn(2, 4))
    """
    assert (15, "GL116") in _lines(src, "GL116", "GL101")


# E64-3 (dl-chem-101#10): a module put on the CPU on purpose produces host outputs; a hidden state
# made on the available device meets it.
RNN = """
import torch
import torch.nn as nn


def get_device():
    return "cuda" if torch.cuda.is_available() else "cpu"


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.rnn = nn.LSTM(4, 4, batch_first=True)

    def forward(self, x):
        h = (torch.zeros(1, x.size(0), 4, device={hdev}), torch.zeros(1, x.size(0), 4, device={hdev}))
        out, _ = self.rnn(self.emb(x), h)
        return out


net = RNN()
net.to("cpu")
out = net(torch.randint(0, 10, (2, 5)))
"""


def test_hidden_state_on_the_available_device_meets_a_module_moved_to_the_cpu():
    diags = _run(RNN.format(hdev="get_device()"), "GL116").diagnostics
    assert [(d.line, d.code) for d in diags] == [(18, "GL116")]
    assert "put on the CPU on purpose (line 23)" in diags[0].message


def test_hidden_state_on_the_input_device_is_silent():
    # control: the dl-chem-101 fix (silent on 94610b46 too)
    assert _lines(RNN.format(hdev="x.device"), "GL116", "GL105", "GL112") == []


def test_hidden_state_with_the_module_left_on_the_available_device_is_silent():
    src = RNN.format(hdev="get_device()").replace('net.to("cpu")', "net.to(get_device())").replace(
        "(2, 5))", "(2, 5), device=get_device())")
    assert _lines(src, "GL116", "GL105", "GL112") == []


EMB = """
import torch
import torch.nn as nn

dev = "cuda" if torch.cuda.is_available() else "cpu"
emb = nn.Embedding(10, 4)
emb.to({where})
idx = torch.randint(0, 10, (2, 5))
x = emb(idx)
y = x + torch.zeros(2, 5, 4, device=dev)
"""


def test_output_of_a_layer_moved_to_the_cpu_meets_an_accelerator_tensor():
    assert _lines(EMB.format(where='"cpu"'), "GL116") == [(10, "GL116")]


def test_output_of_a_layer_moved_to_the_available_device_is_silent():
    # control
    src = EMB.format(where="dev").replace("(2, 5))", "(2, 5), device=dev)")
    assert _lines(src, "GL116") == []


def test_output_of_a_layer_built_on_the_host_and_never_moved_is_not_a_premise():
    # control: a layer merely built on the host (maybe moved by code the engine does not follow)
    # says nothing about its output's rank on the host
    src = EMB.format(where='"cpu"').replace('emb.to("cpu")\n', "")
    assert _lines(src, "GL116") == []


# P52-2 (diff-svc's ONNX export): a submodule of a module the file never places, called from a
# method that is not a forward with inputs put on the CPU on purpose.
EXPORT = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv1d(4, 4, 1)

    def forward(self, spec, step):
        x = spec.squeeze(0)
        x = self.proj(x)
        return x * step


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.denoise_fn = Net()

    def export(self):
        x = torch.randn(1, 4, 10){cpu}
        t = torch.full((1,), 3, device=x.device)
        return self.denoise_fn(x{cpu}, t{cpu})
"""


def test_submodule_fed_inputs_moved_to_the_cpu_from_an_export_method_is_silent():
    assert _lines(EXPORT.format(cpu=".cpu()"), "GL116", "GL105") == []


def test_submodule_fed_host_factories_from_a_method_is_still_reported():
    # control: noise made without `device=` (a sampling method's oversight) stays a finding
    assert (13, "GL116") in _lines(EXPORT.format(cpu=""), "GL116", "GL105")


# E66-1 (Cooperative_Training#2): the loop's own `loss.backward()`, the optimizer step in a solver
# method that steps each of its optimizers and runs no backward.
SOLVER = """
import torch
import torch.nn as nn


class Solver:
    def __init__(self):
        self.net = nn.Linear(4, 1).cuda()
        self.optimizers = [torch.optim.SGD(self.net.parameters(), lr=0.1)]

    def reset_all_optimizers(self):
        for opt in self.optimizers:
            opt.zero_grad()

    def optimize_all_params(self):
        for opt in self.optimizers:
            opt.step()


loader = [(torch.randn(2, 4), torch.randn(2, 1))] * 4


def train(solver):
    for epoch in range(2):
        for x, y in loader:
            loss = ((solver.net(x.cuda()) - y.cuda()) ** 2).mean()
            solver.reset_all_optimizers()
            loss.backward()
            {step}
            {inner}
        {outer}


train(Solver())
"""


def test_empty_cache_every_step_with_the_step_in_a_solver_method():
    src = SOLVER.format(step="solver.optimize_all_params()", inner="torch.cuda.empty_cache()", outer="pass")
    assert _lines(src, "GL505") == [(30, "GL505")]


def test_empty_cache_once_per_epoch_with_the_step_in_a_solver_method_is_silent():
    src = SOLVER.format(step="solver.optimize_all_params()", inner="pass", outer="torch.cuda.empty_cache()")
    assert _lines(src, "GL505") == []


def test_without_any_step_the_loop_is_no_training_loop():
    # control (silent on 94610b46 too): backward only, no optimizer step anywhere
    src = SOLVER.format(step="pass", inner="torch.cuda.empty_cache()", outer="pass")
    assert _lines(src, "GL505") == []


# E49-3 (faster-rcnn-pytorch#27): the epoch function's accumulator `rpn_loc_loss` shares its name
# with a loss the trainer's `forward` backpropagates (through a list); that backward is another
# function's local, not a backward of the accumulator.
FRCNN = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, net):
        self.net = net
        self.opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def train_step(self, x):
        self.opt.zero_grad()
        rpn_loc_loss = self.net(x).pow(2).mean()
        roi_loss = self.net(x).abs().mean()
        losses = [rpn_loc_loss, roi_loss]
        losses = losses + [sum(losses)]
        losses[-1].backward()
        self.opt.step()
        return losses


def fit(trainer, data):
    rpn_loc_loss = 0
    for x in data:
        rpn_loc, roi, total = trainer.train_step(x)
        rpn_loc_loss += rpn_loc
    {tail}


fit(Trainer(nn.Linear(4, 2)), [torch.randn(8, 4) for _ in range(3)])
"""


def test_accumulator_named_like_another_functions_backpropagated_loss():
    assert _lines(FRCNN.format(tail="print(rpn_loc_loss)"), "GL402") == [(26, "GL402")]


def test_accumulator_returned_to_the_caller_is_left_to_it():
    # control (silent on 94610b46 too): the caller may differentiate what it is handed
    assert _lines(FRCNN.format(tail="return rpn_loc_loss"), "GL402") == []


# G43-3b (PAAC.pytorch#1): a sum started at 0 and grown by tensors with gradients, negated and
# divided by a value of unknown kind, is still a number or a tensor holding its graph.
PAAC = """
import torch
import torch.nn as nn

net = nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)


class Envs:
    def __init__(self, n):
        self.n_e = n


envs = Envs(8)
entropy_sum = 0
for step in range(3):
    neg_sum = 0
    for t in range(2):
        neg_sum += net(torch.randn(8, 4)).sum()
    entropy = -neg_sum / {den}
    entropy_sum += entropy
    opt.zero_grad()
    (-entropy).backward()
    opt.step()
"""


def test_negated_sum_divided_by_an_unknown_value_keeps_its_graph():
    assert _lines(PAAC.format(den="envs.n_e"), "GL402") == [(21, "GL402")]


def test_negated_sum_divided_by_a_number_keeps_its_graph():
    # control (reported on 94610b46 too)
    assert _lines(PAAC.format(den="8"), "GL402") == [(21, "GL402")]


# ParallelWaveGAN#26, module-level shape: the networks kept in a dict, the evaluation loop calls
# one of them by key after `model[key].eval()`.
DICT_MODELS = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = {"generator": nn.Linear(4, 4).to(device), "discriminator": nn.Linear(4, 1).to(device)}
opt = torch.optim.Adam(model["generator"].parameters())
data = [torch.randn(8, 4) for _ in range(3)]
for x in data:
    loss = model["generator"](x.to(device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
for key in model.keys():
    model[key].eval()
losses = []
for x in data:
    {body}
"""


def test_evaluation_loop_calls_a_network_kept_in_a_dict():
    src = DICT_MODELS.replace("{body}", 'losses.append(model["generator"](x.to(device)).pow(2).mean())')
    assert _lines(src, "GL403") == [(18, "GL403")]


def test_evaluation_loop_under_no_grad_with_a_network_kept_in_a_dict_is_silent():
    # control (silent on 94610b46 too)
    src = DICT_MODELS.replace("{body}", 'with torch.no_grad():\n        losses.append(model["generator"](x.to(device)).pow(2).mean())')
    assert _lines(src, "GL403") == []


# E65-4 (Skeleton-Aware Networks): tensors a Dataset of the file keeps, read back from the dataset
# object outside its loader and fed to a network on the accelerator.
DATASET_ATTRS = """
import torch
import torch.nn as nn
from torch.utils.data import Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MotionDataset(Dataset):
    def __init__(self):
        self.offset_a = torch.randn(6, 3){move}
        self.offsets = [torch.randn(6, 3){move}, torch.randn(6, 3){move}]

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.offset_a


def infer(model, dataset):
    offset_a = dataset.offset_a
    a, b = dataset.offsets
    return model(offset_a), model(a)


model = nn.Linear(3, 2).to(device)
infer(model, MotionDataset())
"""


def test_tensors_a_dataset_keeps_read_back_outside_its_loader():
    assert _lines(DATASET_ATTRS.format(move=""), "GL116") == [(24, "GL116"), (24, "GL116")]


def test_tensors_a_dataset_keeps_on_the_device_are_silent():
    # control (silent on 94610b46 too)
    assert _lines(DATASET_ATTRS.format(move=".to(device)"), "GL116") == []


# E65-3 (pix2pixHD's GANLoss over a multiscale discriminator): `input_i[-1]` of a list of lists of
# module outputs is the last output.
NESTED = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
D = nn.Linear(4, 1).to(device)
x = torch.randn(2, 4).to(device)
result = []
result.append([D(x)])
result.append([D(x)])
loss = 0
for input_i in result:
    pred = input_i[-1]
    target = torch.ones(pred.size(){dev})
    loss += nn.functional.mse_loss(pred, target)
"""


def test_last_item_of_each_list_of_discriminator_outputs():
    assert _lines(NESTED.format(dev=""), "GL116") == [(15, "GL116")]


def test_last_item_with_the_target_made_on_its_device_is_silent():
    # control (silent on 94610b46 too)
    assert _lines(NESTED.format(dev=", device=pred.device"), "GL116") == []


# rules65's E65-1: `model = main()` at module level runs the script.
def test_an_entry_function_whose_result_is_kept_makes_a_script():
    src = """
import torch.nn as nn


def main():
    return nn.Linear(3, 2).cuda()


model = main()
"""
    assert _lines(src, "GL102") == [(6, "GL102")]


def test_a_helper_building_a_module_constant_does_not_make_a_script():
    # control (silent on 94610b46 too)
    src = """
import torch.nn as nn


def _build():
    return nn.Linear(3, 2).cuda()


LAYER = _build()
"""
    assert _lines(src, "GL102") == []


def test_the_prefilter_and_the_model_share_the_entry_names():
    from gpulint import engine, model

    assert engine._ENTRY_NAME.pattern == model._ENTRY_NAME.pattern


# E64-1 (tr-rosetta-pytorch PR#5): a host factory on one branch of a conditional expression whose
# test is not about devices, beside an accelerator tensor on the other.
IFEXP = """
import sys

import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
n = len(sys.argv)
a = torch.randn(3).to(dev)
b = a * 2 if {test} else torch.zeros(3{kw})
c = torch.cat((a, b))
"""


def test_host_factory_on_one_branch_of_a_conditional_expression():
    diags = _run(IFEXP.format(test="n > 1", kw=""), "GL116").diagnostics
    assert [(d.line, d.code) for d in diags] == [(10, "GL116")]
    assert "when `n > 1` is false" in diags[0].message
    assert diags[0].fix is not None and diags[0].fix.applicability == "safe"


def test_factory_made_on_the_device_on_that_branch_is_silent():
    # control (silent on 94610b46 too)
    assert _lines(IFEXP.format(test="n > 1", kw=", device=a.device"), "GL116") == []


def test_a_branch_chosen_by_a_device_test_is_left_alone():
    # control (silent on 94610b46 too): the host branch runs where there is no GPU
    assert _lines(IFEXP.format(test="torch.cuda.is_available()", kw=""), "GL116") == []
