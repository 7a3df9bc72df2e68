"""Engine and rule items, thirty-third session (each test checked to fail on 60dfa2fd unless it says
it is a control that already passed there). The items are described in
tests/fixtures_pending/README.md, section "Thirty-third session (lead)"."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# P53-1: torch.onnx.operators.shape_as_tensor / torch._shape_as_tensor give host tensors; a host
# factory joined with them meets nothing on the device
SHAPE_AS_TENSOR = """
import torch
import torch.nn as nn
import torch.onnx.operators


class Pos(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.zeros(10, 4))

    def forward(self, input):
        bsz, seq_len = torch.onnx.operators.shape_as_tensor(input)
        flat = self.w.index_select(0, input.view(-1))
        shape = torch.cat((bsz.view(1), seq_len.view(1), torch.LongTensor([-1])))
        return torch.onnx.operators.reshape_from_tensor_shape(flat, shape)


class Pos2(nn.Module):
    def forward(self, input):
        s = torch._shape_as_tensor(input)
        return torch.cat((s, torch.LongTensor([-1])))


device = "cuda" if torch.cuda.is_available() else "cpu"
m = Pos().to(device)
m2 = Pos2().to(device)
"""


def test_p53_1_shape_as_tensor_is_host():
    assert _lines(SHAPE_AS_TENSOR, "GL105", "GL116") == []


def test_p53_1_control_factory_meeting_the_input_still_reported():
    # the factory joined with the input itself is still reported, and only it (the base also
    # reported the one joined with shape_as_tensor's sizes, line 16)
    src = SHAPE_AS_TENSOR.replace(
        "return torch.cat((s, torch.LongTensor([-1])))", "return torch.cat((input.view(-1), torch.LongTensor([-1])))")
    assert _lines(src, "GL105") == [(22, "GL105")]


# P53-2: a method analysed with the arguments of one call, where a parameter takes its `None`
# default: `p.device` under `if p is not None:` is not the host (reading it would raise there)
OPTIONAL_INPUT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.vis = nn.Linear(4, 4)

    def build(self, pixels):
        images = torch.zeros(pixels.shape, dtype=pixels.dtype, device=pixels.device)
        images[:] = pixels
        return images

    def forward(self, ids, pixels=None):
        x = self.emb(ids).mean(dim=1)
        if pixels is not None:
            x = x + self.vis(self.build(pixels)).mean(dim=1)
        return x

    def act(self, *, ids):
        return self(ids=ids).argmax(dim=-1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Model().to(device)
ids = torch.randint(0, 10, (2, 3)).to(device)
pixels = torch.randn(2, 3, 4).to(device)
model(ids, pixels).sum().backward()
model.act(ids=ids)
"""


def test_p53_2_device_of_a_none_default_is_not_the_host():
    assert _lines(OPTIONAL_INPUT, "GL105", "GL116") == []


def test_p53_2_control_a_real_host_factory_in_the_builder_still_reported():
    src = OPTIONAL_INPUT.replace("device=pixels.device)", ")")
    # (a control: passes on the base too)
    assert _lines(src, "GL105") == [(13, "GL105")]


# E67-1 (LLFlow#19): a wrapper made on one branch of `__init__` is read through the instance from
# outside the class, also when the class derives from a plain holder class of the file
INSTANCE_WRAP = """
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)

    def forward(self, x):
        return self.enc(x)


class Base:
    def __init__(self, opt):
        self.opt = opt


class Trainer(Base):
    def __init__(self, opt, gpu_ids):
        super().__init__(opt)
        self.net = Net()
        if len(gpu_ids) > 1:
            self.net = nn.DataParallel(self.net, gpu_ids)

    def log(self):
        print(self.net.enc)


t = Trainer({}, [0, 1])
t.log()
print(t.net.enc)
"""


def test_e67_1_wrapper_read_through_the_instance():
    assert _lines(INSTANCE_WRAP, "GL305") == [(27, "GL305"), (32, "GL305")]


def test_e67_1_no_report_when_a_base_method_rebinds_the_attribute():
    # a base class's method that stores the attribute may run after `__init__`: not concluded
    src = INSTANCE_WRAP.replace("        self.opt = opt\n", "        self.opt = opt\n\n    def reset(self):\n        self.net = None\n")
    assert _lines(src, "GL305") == [(30, "GL305")]  # inside the class only


def test_e67_1_no_report_for_a_wrap_made_in_another_method():
    # a wrap made by a method (`prepare()`) may come after the read through the instance
    src = INSTANCE_WRAP.replace("        if len(gpu_ids) > 1:\n            self.net = nn.DataParallel(self.net, gpu_ids)\n",
                                "\n    def prepare(self, gpu_ids):\n        if len(gpu_ids) > 1:\n"
                                "            self.net = nn.DataParallel(self.net, gpu_ids)\n")
    line = src.strip("\n").split("\n").index("print(t.net.enc)") + 2
    assert line == 34 and (line, "GL305") not in _lines(src, "GL305")


# E69-2 (pytorch/examples#1071): the branch of `if <option> and torch.cuda.is_available():` is the
# GPU run that gives the option; a label that branch leaves on the host meets the moved model
GPU_OPTION = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

gpu = 0 if torch.cuda.is_available() else None
model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if gpu is not None and torch.cuda.is_available():
    model = model.cuda(gpu)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 3, (16,))), batch_size=4)
for x, y in loader:
    if gpu is not None and torch.cuda.is_available():
        x = x.cuda(gpu)
    elif torch.cuda.is_available():
        y = y.cuda()
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_e69_2_option_and_availability_branch_is_the_gpu_run():
    assert _lines(GPU_OPTION, "GL101") == [(18, "GL101")]


def test_e69_2_labels_moved_in_that_branch_are_fine():
    src = GPU_OPTION.replace("        x = x.cuda(gpu)\n", "        x = x.cuda(gpu)\n        y = y.cuda(gpu)\n")
    assert _lines(src, "GL101", "GL116") == []


# E69-3 (monodle#7): a module-level helper restores the optimizer; a trainer's `__init__` calls it
# with its `self` attributes and moves the model after the call
HELPER_RESTORE = """
import torch
import torch.nn as nn


def load_checkpoint(model, optimizer, filename):
    ckpt = torch.load(filename, map_location="cpu")
    optimizer.load_state_dict(ckpt["optimizer"])


class Trainer:
    def __init__(self, model, optimizer, resume):
        self.model, self.optimizer = model, optimizer
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if resume:
            load_checkpoint(model=self.model, optimizer=self.optimizer, filename=resume)
        self.model = self.model.to(self.device)

    def step(self):
        loss = self.model(torch.randn(8, 4, device=self.device)).sum()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


model = nn.Linear(4, 2)
Trainer(model, torch.optim.Adam(model.parameters()), "ckpt.pth").step()
"""


def test_e69_3_helper_restore_called_from_a_method_before_the_move():
    assert _lines(HELPER_RESTORE, "GL111") == [(8, "GL111")]


def test_e69_3_moved_before_the_call_is_fine():
    src = HELPER_RESTORE.replace(
        "        if resume:\n", "        self.model = self.model.to(self.device)\n        if resume:\n")
    assert _lines(src, "GL111") == []


def test_e69_3_moved_in_another_method_is_not_concluded():
    src = HELPER_RESTORE.replace("        self.model = self.model.to(self.device)\n", "").replace(
        "    def step(self):\n", "    def cuda(self):\n        self.model.to(self.device)\n\n    def step(self):\n")
    assert _lines(src, "GL111") == []


# N2 (the rename probe's leftover of N1): a device string keeps its meaning through a call, into a
# parameter not named like a device (the value carries the device text)
RENAMED_DEVICE = """
import torch
import torch.nn as nn


class WDL(nn.Module):
    def __init__(self, n_dense, where="cpu"):
        super().__init__()
        self.lin = nn.Linear(n_dense, 1)
        self.to(where)

    def forward(self, x):
        return self.lin(x)


where = "cuda:0" if torch.cuda.is_available() else "cpu"
model = WDL(4, where=where)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 4, device=where)
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_n2_device_string_into_a_parameter_not_named_like_a_device():
    # the base reported GL112 ("the model itself is never moved"): `self.to(where)` was not a move
    assert _lines(RENAMED_DEVICE, "GL112", "GL101", "GL116") == []


FIT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def fit(net, loader, where):
    net.to(where)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(net(x), y.to(where))
        opt.zero_grad()
        loss.backward()
        opt.step()


loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 3, (16,))), batch_size=4)
fit(nn.Linear(4, 3), loader, "cuda" if torch.cuda.is_available() else "cpu")
"""


def test_n2_inputs_left_behind_a_model_moved_to_such_a_parameter():
    assert _lines(FIT, "GL101") == [(11, "GL101")]


def test_n2_every_call_passing_cpu_is_the_host():
    assert _lines(FIT.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cpu"'), "GL101", "GL116") == []


def test_n2_a_string_picked_by_a_tensor_is_not_the_accelerator():
    src = FIT.replace('fit(nn.Linear(4, 3), loader, "cuda" if torch.cuda.is_available() else "cpu")',
                      'x0 = torch.randn(2)\nfit(nn.Linear(4, 3), loader, "cuda" if x0.is_cuda else "cpu")')
    assert _lines(src, "GL101", "GL116") == []


# E69-4 (yolov3-multigpu#13, part): `collate_fn=Pairs.collate`, a staticmethod of a class of the
# file, is that function: the loader's batches are what it returns
STATIC_COLLATE = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.randn(4), torch.randn(3)

    @staticmethod
    def collate(batch):
        return torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
loader = DataLoader(Pairs(), batch_size=4, collate_fn=Pairs.collate)
for x, y in loader:
    out = model(x.to(device))
    loss = (out - y).pow(2).mean()
    loss.backward()
"""


def test_e69_4_staticmethod_collate_batches_are_on_the_host():
    assert _lines(STATIC_COLLATE, "GL116") == [(24, "GL116")]


def test_e69_4_staticmethod_collate_that_moves_the_batch():
    src = STATIC_COLLATE.replace("torch.stack([b[1] for b in batch])", "torch.stack([b[1] for b in batch]).to(device)")
    assert _lines(src, "GL116", "GL101") == []


# G69-3 (UQ360#28): loader batches handed to a model method other than forward from the training
# loop are reported at that call (both tensors, each with its move), not inside the method
MODEL_METHOD = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)

    def neg_elbo(self, x, y):
        return F.cross_entropy(self(x), y)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 3, (16,))), batch_size=4)
for bx, by in loader:
    loss = net.neg_elbo(x=bx, y=by)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_g69_3_batches_reported_at_the_model_method_call():
    diags = [d for d in _run(MODEL_METHOD, "GL101").diagnostics]
    assert sorted((d.line, d.message.split("`")[1]) for d in diags) == [(25, "bx"), (25, "by")]


def test_g69_3_fix_moves_both_at_the_top_of_the_loop():
    rules = [Registry.load().by_code("GL101")()]
    fixed = run_text("train.py", textwrap.dedent(MODEL_METHOD), rules,
                     Options(fix=True, unsafe_fixes=True, write=False)).text
    assert "for bx, by in loader:\n    bx = bx.to(device)\n    by = by.to(device)\n    loss = net.neg_elbo" in fixed


def test_g69_3_moved_batches_are_fine():
    src = MODEL_METHOD.replace("    loss = net.neg_elbo(x=bx, y=by)", "    loss = net.neg_elbo(x=bx.to(device), y=by.to(device))")
    assert _lines(src, "GL101", "GL116") == []


# E65-3 (pix2pixHD's GANLoss): a list of lists of module outputs handed to a parameterless loss
# module whose `__call__` iterates it (`for input_i in input: pred = input_i[-1]`)
LIST_OF_LISTS = """
import torch
import torch.nn as nn


class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.Tensor = torch.FloatTensor
        self.loss = nn.MSELoss()

    def __call__(self, input):
        loss = 0
        for input_i in input:
            pred = input_i[-1]
            target = self.Tensor(pred.size()).fill_(1.0)
            loss += self.loss(pred, target)
        return loss


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Linear(4, 1)

    def forward(self, x):
        result = []
        result.append([self.model(x)])
        return result


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
d = D().to(device)
crit = GANLoss()
print(crit(d(torch.randn(2, 4).to(device))))
"""


def test_e65_3_list_of_lists_of_outputs_keep_their_device():
    assert _lines(LIST_OF_LISTS, "GL116") == [(17, "GL116")]


def test_e65_3_targets_made_like_the_prediction_are_fine():
    src = LIST_OF_LISTS.replace("self.Tensor(pred.size()).fill_(1.0)", "torch.ones_like(pred)")
    assert _lines(src, "GL116") == []


# P54-1 (imaginaire's FID setup): a torch container replacing a layer after the move holds weights
# only when one of its parts does
REPLACED_HEAD = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.body(x))


net = Net().to("cuda")
net.fc = nn.Sequential()
print(net(torch.randn(2, 4).to("cuda")))
"""


def test_p54_1_empty_or_weightless_container_is_not_a_host_part():
    assert _lines(REPLACED_HEAD, "GL116") == []
    assert _lines(REPLACED_HEAD.replace("nn.Sequential()", "nn.Sequential(nn.ReLU(), nn.Dropout(0.1))"), "GL116") == []
    assert _lines(REPLACED_HEAD.replace("nn.Sequential()", "nn.ModuleList([nn.ReLU()])"), "GL116") == []


def test_p54_1_container_with_a_layer_still_reported():
    # (a control: passes on the base too)
    assert _lines(REPLACED_HEAD.replace("nn.Sequential()", "nn.Sequential(nn.ReLU(), nn.Linear(4, 2))"),
                  "GL116") == [(18, "GL116")]


# G69-5 (pytorch-seq2seq#4): a tensor attribute moved in `__init__` to the script's device handed
# to the constructor is pinned to one GPU like `.cuda()`; a DataParallel replica reads it there
PINNED_BY_DEVICE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Attn(nn.Module):
    def __init__(self, d, device):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.scale = torch.sqrt(torch.FloatTensor([d])).to(device)

    def forward(self, x):
        return self.fc(x) / self.scale


model = Attn(8, device).to(device)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model, device_ids=[0, 1])
print(model(torch.randn(4, 8).to(device)))
"""


def test_g69_5_attribute_moved_to_the_script_device_under_data_parallel():
    assert _lines(PINNED_BY_DEVICE, "GL106") == [(12, "GL106")]


def test_g69_5_without_data_parallel_or_with_a_buffer_is_fine():
    no_dp = PINNED_BY_DEVICE.replace("if torch.cuda.device_count() > 1:\n    model = nn.DataParallel(model, device_ids=[0, 1])\n", "")
    assert "DataParallel" not in no_dp and _lines(no_dp, "GL106") == []
    buffer = PINNED_BY_DEVICE.replace("self.scale = torch.sqrt(torch.FloatTensor([d])).to(device)",
                                      'self.register_buffer("scale", torch.sqrt(torch.FloatTensor([d])))')
    assert _lines(buffer, "GL106", "GL116") == []


# probe69 (classify mutation): a Dataset kept on `self` by a trainer and read by a DataLoader with
# workers is the same dataset (GL114 lost 5 of 6 markers when the script became a trainer class)
TRAINER_DATASET = """
import torch
import torch.nn as nn
import torch.utils.data as data


class DummyDataset(data.Dataset):
    def __init__(self, device):
        super().__init__()
        self.tensor = torch.randn(64, 3, device=device)

    def __getitem__(self, index):
        return self.tensor[index], 0

    def __len__(self):
        return 64


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.train_set = DummyDataset(device=self.device)
        self.loader = data.DataLoader(self.train_set, batch_size=16, num_workers=2)

    def run(self):
        for x, y in self.loader:
            print(x.sum())


Trainer().run()
"""


def test_probe69_dataset_kept_on_self_reaches_gl114():
    assert _lines(TRAINER_DATASET, "GL114") == [(10, "GL114")]


def test_probe69_dataset_on_self_without_workers_is_fine():
    assert _lines(TRAINER_DATASET.replace(", num_workers=2", ""), "GL114") == []


# probe69 E69-5/E69-6 (argsdev mutation): `ns.device` of `ns = parser.parse_args()` is what its
# option's default names, whatever the namespace is called
NAMESPACE_DEVICE = """
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
ns = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)
model = nn.Linear(4, 1).to(ns.device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in loader:
    with torch.autocast(device_type=ns.device, dtype=torch.float16):
        loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_probe69_namespace_device_from_the_option_default():
    assert _lines(NAMESPACE_DEVICE, "GL101", "GL201") == [(15, "GL201"), (16, "GL101")]


def test_probe69_namespace_device_defaulting_to_cpu_is_a_configured_device():
    # the user passes `--device cuda` on a GPU run: GL101 follows the name, as for `args.device`
    # (GL201 needs to know the autocast region can be CUDA: a "cpu" default says it cannot)
    src = NAMESPACE_DEVICE.replace('default="cuda" if torch.cuda.is_available() else "cpu"', 'default="cpu"')
    assert _lines(src, "GL101", "GL201") == [(16, "GL101")]
    # without a default: a configured device too (not `x.device` of an unknown value)
    src = NAMESPACE_DEVICE.replace(', default="cuda" if torch.cuda.is_available() else "cpu"', "")
    assert _lines(src, "GL101", "GL201") == [(16, "GL101")]


# probe69 G69-2: an evaluation loop in a function that first calls the file's training function
TRAIN_THEN_EVAL = """
import torch
import torch.nn as nn


def train(net):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(4, 2)).sum().backward()
        opt.step()


def main():
    net = nn.Linear(2, 1)
    train(net)
    net.eval()
    for _ in range(3):
        out = net(torch.randn(4, 2))
        print(out.detach().numpy())


main()
"""


def test_probe69_eval_loop_after_a_call_of_the_training_function():
    assert _lines(TRAIN_THEN_EVAL, "GL403") == [(19, "GL403")]


def test_probe69_gradient_use_inside_the_loop_still_silences():
    src = TRAIN_THEN_EVAL.replace("        print(out.detach().numpy())", "        out.sum().backward()")
    assert _lines(src, "GL403") == []


# probe69 E69-4: an attribute bound by a tuple target in `__init__` (`self.grid, self.other = ...`)
# is left alone like one bound alone (GL504's loop-invariant copy)
TUPLE_ATTRS = """
import torch


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.grid, self.other = torch.arange(0, 16), torch.arange(0, 16)
        self.w = torch.zeros(16, device=self.device, requires_grad=True)
        self.opt = torch.optim.SGD([self.w], lr=0.1)

    def run(self):
        for step in range(10):
            g = self.grid.float().to(self.device)
            loss = (g * self.w).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


Trainer().run()
"""


def test_probe69_tuple_bound_attribute_copied_every_step():
    assert _lines(TUPLE_ATTRS, "GL504") == [(14, "GL504")]


def test_probe69_tuple_bound_attribute_rebound_in_the_loop_is_fine():
    src = TUPLE_ATTRS.replace("            self.opt.step()\n", "            self.opt.step()\n            self.grid, self.other = self.other, self.grid\n")
    assert "self.grid, self.other = self.other" in src and _lines(src, "GL504") == []


# probe69 argsdev (namespace `ns` in a worker function, `default=torch.device(...)`)
WORKER_NS = """
import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def worker(rank, world_size):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29511", rank=rank, world_size=world_size)
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default=torch.device("cuda"))
    ns = parser.parse_args([])
    model = nn.Linear(10, 1)
    model.to(ns.device)
    ddp_model = DistributedDataParallel(model)
    ddp_model(torch.randn(4, 10, device=ns.device)).sum().backward()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    mp.spawn(worker, args=(n,), nprocs=n)
"""


def test_probe69_namespace_in_a_function_with_a_torch_device_default():
    assert _lines(WORKER_NS, "GL303") == [(17, "GL303")]


def test_probe69_namespace_with_an_indexed_default_is_fine():
    assert _lines(WORKER_NS.replace('torch.device("cuda")', 'torch.device(f"cuda:{rank}")'), "GL303") == []


# probe69 classify: a loss closure a maker returns, kept on `self` by a trainer and called in
# another method, runs with the arguments of that call (DeepChem's InfoGraph losses)
SELF_CLOSURE = """
import torch
import torch.nn as nn


class L:
    def make(self, scale=1.0):
        def loss(a):
            m = torch.eye(a.shape[0])
            return (a * m).sum() * scale

        return loss


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = nn.Linear(4, 4).to(self.device)
        self.lf = L().make()

    def run(self):
        out = self.model(torch.randn(4, 4, device=self.device))
        return self.lf(out)


Trainer().run()
"""


def test_probe69_closure_kept_on_self_runs_with_the_call():
    assert _lines(SELF_CLOSURE, "GL116") == [(10, "GL116")]


def test_probe69_closure_kept_on_self_made_like_its_input_is_fine():
    assert _lines(SELF_CLOSURE.replace("torch.eye(a.shape[0])", "torch.eye(a.shape[0], device=a.device)"), "GL116") == []
