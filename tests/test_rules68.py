"""rules68 (thirty-fourth session): rule-side gap items of the generality probes (Q:G69-3,
Q:G69-5, Q:G69-4, Q:G69-6, Q:G69-7) and of fixtures69 (F:G69-2); see the README section
"rules68 (thirty-fourth session)" in tests/fixtures_pending/README.md and benchmarks/PROBES69.md."""

from __future__ import annotations

import textwrap

from fixture_support import check


def _diags(src: str, code: str):
    return [d for d in check(textwrap.dedent(src), {code}) if d.code == code]


def _lines(src: str, code: str):
    return [d.line for d in _diags(src, code)]


# ------------------------------------------------------------------------------------- Q:G69-3
# GL206: `self.net.half()` in `__init__` (under a device test), trained in `run()`

TRAINER_HALF = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.net = nn.Linear(4, 1).to(self.device)
        if self.device.type == "cuda":
            self.net.half()
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)

    def run(self):
        for _ in range(3):
            x = torch.randn(8, 4, device=self.device, dtype=torch.float16)
            loss = self.net(x).float().pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


Trainer().run()
"""


def test_gl206_self_attribute_half_in_init_trained_in_run():
    d = _diags(TRAINER_HALF, "GL206")
    assert [x.line for x in d] == [11]  # f0874ac5: nothing
    assert "`self.net`" in d[0].message


def test_gl206_self_attribute_half_assigned_in_init():
    src = TRAINER_HALF.replace("        if self.device.type == \"cuda\":\n            self.net.half()\n",
                               "        self.net = self.net.half() if self.device.type == \"cuda\" else self.net\n")
    assert _lines(src, "GL206") == [10]  # f0874ac5: nothing


def test_gl206_self_attribute_negative_with_scaler():
    src = TRAINER_HALF.replace("            loss.backward()\n            self.opt.step()\n",
                               "            self.scaler.scale(loss).backward()\n            self.scaler.step(self.opt)\n"
                               "            self.scaler.update()\n").replace(
        "        self.opt = torch", "        self.scaler = torch.amp.GradScaler(\"cuda\")\n        self.opt = torch")
    assert _lines(src, "GL206") == []


def test_gl206_self_attribute_negative_frozen_teacher():
    # the half module is a frozen teacher: the optimizer steps another attribute
    src = TRAINER_HALF.replace("            self.net.half()\n", "            self.teacher.half()\n").replace(
        "        self.net = nn.Linear(4, 1).to(self.device)\n",
        "        self.net = nn.Linear(4, 1).to(self.device)\n        self.teacher = nn.Linear(4, 1).to(self.device)\n")
    assert _lines(src, "GL206") == []


def test_gl206_self_attribute_negative_class_that_does_not_train():
    # the half model lives in an inference wrapper; the training class builds its own optimizer
    src = """
    import torch
    import torch.nn as nn


    class Predictor:
        def __init__(self, net):
            self.net = net
            self.net.half()
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.0)

        def predict(self, x):
            with torch.no_grad():
                return self.net(x.half())


    class Trainer:
        def __init__(self):
            self.net = nn.Linear(4, 1)
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

        def run(self):
            loss = self.net(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            self.opt.step()
    """
    assert _lines(src, "GL206") == []


def test_gl206_self_attribute_handed_to_a_training_function():
    # `run()` hands `self.net` to a module-level training function (stylegan2 in probe69 classify)
    src = """
    import torch
    import torch.nn as nn


    def train(net, opt):
        for _ in range(3):
            loss = net(torch.randn(8, 4).half()).float().pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


    class Trainer:
        def __init__(self):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.net = nn.Linear(4, 1).to(self.device)
            if self.device.type == "cuda":
                self.net.half()
            self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)

        def run(self):
            train(self.net, self.opt)


    Trainer().run()
    """
    assert _lines(src, "GL206") == [19]  # f0874ac5: nothing
    # handed on for evaluation only: no training function receives it
    assert _lines(src.replace("train(self.net, self.opt)", "print(self.net)"), "GL206") == []


def test_gl206_module_converting_itself_built_in_a_trainer_init():
    # the model's own `__init__` converts its blocks; the trainer's `__init__` builds it and its
    # optimizer, `run()` trains (TRELLIS-style `convert_to_fp16()`, triposf in probe69 classify)
    src = """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)
            self.convert_to_fp16()

        def convert_to_fp16(self):
            self.fc.half()

        def forward(self, x):
            return self.fc(x)


    class Trainer:
        def __init__(self):
            self.model = Net()
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)

        def run(self):
            for _ in range(3):
                loss = self.model(torch.randn(8, 4).half()).float().pow(2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


    Trainer().run()
    """
    assert _lines(src, "GL206") == [10]  # f0874ac5: nothing
    # the trainer never trains (no backward in its methods)
    frozen = src.replace("                self.optimizer.zero_grad()\n                loss.backward()\n"
                         "                self.optimizer.step()\n", "                print(loss.item())\n")
    assert _lines(frozen, "GL206") == []


# ------------------------------------------------------------------------------------- Q:G69-5
# GL206: the optimizer is built from an alias of the converted model

ALIAS_HALF = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 1).to(device).half()
net = model
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
X = torch.randn(256, 8, device=device, dtype=torch.float16)
for step in range(100):
    optimizer.zero_grad()
    net(X).float().pow(2).mean().backward()
    optimizer.step()
"""


def test_gl206_optimizer_of_an_alias():
    d = _diags(ALIAS_HALF, "GL206")
    assert [x.line for x in d] == [6]  # f0874ac5: nothing
    assert "`model`" in d[0].message


def test_gl206_alias_negative_other_model_optimized():
    src = ALIAS_HALF.replace("net = model\n", "net = nn.Linear(8, 1).to(device)\n")
    assert _lines(src, "GL206") == []


# ------------------------------------------------------------------------------------- Q:G69-4
# GL303: `self.model = DDP(self.model)` after `self.model = Net().cuda()` in a trainer class

DDP_SELF = """
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        dist.init_process_group("nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        self.model = nn.Linear(4, 2).cuda()
        self.model = DDP(self.model)


Trainer()
"""


def test_gl303_self_model_wrapped_in_ddp():
    assert _lines(DDP_SELF, "GL303") == [15]  # f0874ac5: nothing


def test_gl303_self_model_fix():
    from fixture_support import fix

    out = fix(textwrap.dedent(DDP_SELF), {"GL303"}, True).text
    assert ("        local_rank = int(os.environ[\"LOCAL_RANK\"])\n        torch.cuda.set_device(local_rank)\n"
            "        self.model = nn.Linear(4, 2).cuda()\n"
            "        self.model = DDP(self.model, device_ids=[local_rank])\n") in out
    assert _lines(out, "GL303") == []


def test_gl303_self_model_moved_through_self_device():
    src = DDP_SELF.replace("        self.model = nn.Linear(4, 2).cuda()\n",
                           "        self.device = torch.device(\"cuda\")\n"
                           "        self.model = nn.Linear(4, 2)\n        self.model.to(self.device)\n")
    assert _lines(src, "GL303") == [17]  # f0874ac5: nothing


def test_gl303_self_model_negatives():
    # the rank's own device (not index-less), device_ids given, set_device called
    indexed = DDP_SELF.replace("nn.Linear(4, 2).cuda()", "nn.Linear(4, 2).cuda(local_rank)")
    ids = DDP_SELF.replace("DDP(self.model)", "DDP(self.model, device_ids=[local_rank])")
    setdev = DDP_SELF.replace("        self.model = nn.Linear", "        torch.cuda.set_device(local_rank)\n"
                              "        self.model = nn.Linear")
    rank_dev = DDP_SELF.replace("        self.model = nn.Linear(4, 2).cuda()\n",
                                "        self.device = torch.device(f\"cuda:{local_rank}\")\n"
                                "        self.model = nn.Linear(4, 2).to(self.device)\n")
    for src in (indexed, ids, setdev, rank_dev):
        assert _lines(src, "GL303") == []


# ------------------------------------------------------------------------------------- Q:G69-6
# GL404/GL403: a loss module known by its value (`crit = criterion`), not by its name

LOSS_ALIAS = """
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
criterion = nn.MSELoss()
crit = criterion
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 1))] * 4
for epoch in range(3):
    for x, y in data:
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        for x, y in data:
            print(crit(model(x), y).item())
"""


def test_gl404_eval_loop_with_an_aliased_loss():
    d = _diags(LOSS_ALIAS, "GL404")
    assert [x.line for x in d] == [16]  # f0874ac5: nothing
    assert "runs `model` in training mode" in d[0].message


def test_gl404_eval_block_with_an_aliased_loss():
    # the whole validation set in one forward under no_grad (GradNorm's notebook, aliased)
    src = LOSS_ALIAS.replace("        for x, y in data:\n            print(crit(model(x), y).item())\n",
                             "        print(crit(model(data[0][0]), data[0][1]).item())\n")
    assert _lines(src, "GL404") == [15]  # f0874ac5: nothing


def test_gl403_aliased_loss_is_not_a_second_model():
    src = LOSS_ALIAS.replace("for epoch in range(3):\n", "for epoch in range(3):\n    model.train()\n").replace(
        "    with torch.no_grad():\n        for x, y in data:\n            print(",
        "    model.eval()\n    for x, y in data:\n        print(")
    d = _diags(src, "GL403")
    assert len(d) == 1  # f0874ac5: two, "calls `crit`" and "calls `model`"
    assert "calls `model`" in d[0].message


def test_gl404_aliased_loss_negatives():
    # the model is put in eval mode around the evaluation: nothing to report
    src = LOSS_ALIAS.replace("    with torch.no_grad():\n",
                             "    model.eval()\n    with torch.no_grad():\n").replace(
        "            print(crit(model(x), y).item())\n",
        "            print(crit(model(x), y).item())\n    model.train()\n")
    assert _lines(src, "GL404") == []


# ------------------------------------------------------------------------------------- F:G69-2
# GL113 (opt-in): `self.device = torch.device("cuda:1")` + `nn.DataParallel(net).to(self.device)`
# in methods (HOReID#28; the fixture moved in: tests/fixtures/GL113/horeid_*)

DP_SELF = """
import torch
import torch.nn as nn


class Base:
    def __init__(self):
        self.device = torch.device("cuda:1")
        self.net = nn.DataParallel(nn.Linear(4, 2)).to(self.device)


b = Base()
b.net(torch.randn(8, 4, device=b.device))
"""


def test_gl113_dataparallel_moved_to_self_device_in_a_class():
    d = _diags(DP_SELF, "GL113")
    assert [x.line for x in d] == [8]  # f0874ac5: nothing
    assert "has no `device_ids`" in d[0].message


def test_gl113_dataparallel_self_device_negatives():
    # DataParallel's first device is the model's; the index-less device; a computed device_ids
    ids = DP_SELF.replace("nn.DataParallel(nn.Linear(4, 2))", "nn.DataParallel(nn.Linear(4, 2), device_ids=[1, 2])")
    plain = DP_SELF.replace('torch.device("cuda:1")', 'torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    zero = DP_SELF.replace('"cuda:1"', '"cuda:0"')
    computed = DP_SELF.replace("nn.DataParallel(nn.Linear(4, 2))",
                               "nn.DataParallel(nn.Linear(4, 2), device_ids=self.gpus)")
    for src in (ids, plain, zero, computed):
        assert _lines(src, "GL113") == []


# ------------------------------------------------------------------------------------- Q:G69-7
# GL115: CUDA initialised in `__init__`, the variable set in another method

VISIBLE_IN_RUN = """
import os

import torch


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def run(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        print(torch.zeros(2, device=self.device))


Trainer().run()
"""


def test_gl115_cuda_initialised_in_init_variable_set_in_run():
    d = _diags(VISIBLE_IN_RUN, "GL115")
    assert [x.line for x in d] == [12]  # f0874ac5: nothing
    assert "line 9" in d[0].message


def test_gl115_init_negatives():
    # `__init__` runs the setter first (BGRL_Pytorch's ModelTrainer: `self._init()` sets the
    # variable, then the device is picked); a staticmethod; a device test under a branch of
    # `__init__`; a launcher method (the variable is for the process it starts)
    setter_first = VISIBLE_IN_RUN.replace(
        "    def __init__(self):\n",
        "    def __init__(self):\n        self.run()\n")
    setter_nested = VISIBLE_IN_RUN.replace(
        "    def __init__(self):\n",
        "    def __init__(self):\n        self._init()\n").replace(
        "    def run(self):\n", "    def _init(self):\n        self.run()\n\n    def run(self):\n")
    static = VISIBLE_IN_RUN.replace("    def run(self):\n", "    @staticmethod\n    def run():\n").replace(
        "device=self.device", "device=\"cpu\"").replace("Trainer().run()", "Trainer.run()")
    branch = VISIBLE_IN_RUN.replace(
        "        self.device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n",
        "        self.device = \"cpu\"\n        if os.environ.get(\"USE_GPU\"):\n"
        "            self.device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n")
    launcher = VISIBLE_IN_RUN.replace("import os\n", "import os\nimport subprocess\n").replace(
        "        print(torch.zeros(2, device=self.device))\n",
        "        subprocess.run([\"python\", \"worker.py\"], check=False)\n")
    for src in (setter_first, setter_nested, static, branch, launcher):
        assert _lines(src, "GL115") == []


# ------------------------------------------------------------------------------------- GL403
# `self.net.eval()` in `__init__`, the evaluation loop in `run()` (probe69 classify of the
# CIE_XYZ_NET fixture: 3 markers)

EVAL_IN_INIT = """
import torch
import torch.nn as nn


def train(net):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(4, 2)).sum().backward()
        opt.step()


class Trainer:
    def __init__(self):
        self.net = nn.Linear(2, 1)
        train(self.net)
        self.net.eval()

    def run(self):
        for _ in range(3):
            out = self.net(torch.randn(4, 2))
            print(out.detach().numpy())


Trainer().run()
"""


def test_gl403_eval_in_init_loop_in_run():
    d = _diags(EVAL_IN_INIT, "GL403")
    assert [x.line for x in d] == [22]  # f0874ac5: nothing
    assert "calls `self.net`" in d[0].message


def test_gl403_eval_in_init_negatives():
    # the instance trains again in another method; `run()` itself sets train mode afterwards;
    # `__init__` ends in training mode; the caller picks no_grad; a decorated method
    other_train = EVAL_IN_INIT.replace("    def run(self):\n",
                                       "    def fit(self):\n        self.net.train()\n        train(self.net)\n\n"
                                       "    def run(self):\n")
    run_trains = EVAL_IN_INIT.replace("            print(out.detach().numpy())\n",
                                      "            print(out.detach().numpy())\n        self.net.train()\n")
    init_train = EVAL_IN_INIT.replace("        self.net.eval()\n", "        self.net.eval()\n        self.net.train()\n")
    caller = EVAL_IN_INIT.replace("Trainer().run()", "with torch.no_grad():\n    Trainer().run()")
    decorated = EVAL_IN_INIT.replace("    def run(self):\n", "    @torch.inference_mode()\n    def run(self):\n")
    for src in (other_train, run_trains, init_train, caller, decorated):
        assert _lines(src, "GL403") == []


def test_gl403_eval_in_init_other_objects_negatives():
    # KPConv's ModelVisualizer: `__init__(self, net)` calls `net.eval()`, a method loops over its own
    # `net` parameter; schnetpack's ensemble calculator: the loop runs the items of `self.models`
    # (models that may differentiate inside, forces from energies): which objects these are the
    # file does not say
    param = """
    import torch
    import torch.nn as nn


    class Visualizer:
        def __init__(self, net):
            net.eval()

        def show(self, net, batches):
            for x in batches:
                out = net(x)
                print(out.detach().numpy())


    net = nn.Linear(2, 1)
    Visualizer(net).show(net, [torch.randn(4, 2)])
    """
    ensemble = """
    import torch
    import torch.nn as nn


    class Ensemble:
        def __init__(self):
            self.models = [nn.Linear(2, 1), nn.Linear(2, 1)]
            for model in self.models:
                model.eval()

        def run(self, x):
            for model in self.models:
                print(model(x).detach().numpy())


    Ensemble().run(torch.randn(4, 2))
    """
    for src in (param, ensemble):
        assert _lines(src, "GL403") == []


# ------------------------------------------------------------------------------------- GL102
# the run-time device kept in a parsed option (`opt.device` whose default is the CUDA-or-CPU
# choice; probe69 argsdev lost GL102 on the alphazero and jiant fixtures)

OPTION_DEVICE = """
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--device", default=torch.device("cuda" if torch.cuda.is_available() else "cpu"))
opt = parser.parse_args([])


def make_one_hot(labels, depth):
    return torch.sparse.torch.eye(depth).cuda().index_select(0, labels)


model = nn.Linear(4, 3).to(opt.device)
opt_ = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4).to(opt.device)
    y = torch.randint(0, 3, (8,)).to(opt.device)
    target = make_one_hot(y, 3)
    loss = (model(x) - target).pow(2).mean()
    opt_.zero_grad()
    loss.backward()
    opt_.step()
"""


def test_gl102_cuda_on_the_path_of_an_option_device():
    d = _diags(OPTION_DEVICE, "GL102")
    assert [x.line for x in d] == [13]  # f0874ac5: nothing
    assert "moves its model to `opt.device`" in d[0].message


def test_gl102_option_device_negatives():
    # the site guarded by a device test; the site moved to the labels' device
    guarded = OPTION_DEVICE.replace(
        "    return torch.sparse.torch.eye(depth).cuda().index_select(0, labels)\n",
        "    eye = torch.sparse.torch.eye(depth)\n    if opt.device.type == \"cuda\":\n        eye = eye.cuda()\n"
        "    return eye.index_select(0, labels)\n")
    fixed = OPTION_DEVICE.replace(".cuda().index_select", ".to(labels.device).index_select")
    for src in (guarded, fixed):
        assert _lines(src, "GL102") == []


# ------------------------------------------------------------------------------------- F:G69-4
# GL116's safe `device=` fix when the device operand is bound after the host factory, from a
# parameter bound before it (deepchem PR#3301's loss closures, minimal form)

MASK_FIRST = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)


def loss(enc, enc2):
    pos_mask = torch.eye(enc.shape[0])
    res = torch.mm(enc, enc2.t())
    return (res * pos_mask).sum()


x = torch.randn(8, 4, device=device)
print(loss(model(x), model(x)))
"""


def test_gl116_factory_fix_through_the_source_parameter():
    from fixture_support import fix

    d = _diags(MASK_FIRST, "GL116")
    assert [x.line for x in d] == [12]
    assert d[0].fix is not None  # f0874ac5: no fix
    assert "`device=enc.device`" in d[0].message
    out = fix(textwrap.dedent(MASK_FIRST), {"GL116"}, False).text
    assert "    pos_mask = torch.eye(enc.shape[0], device=enc.device)\n" in out
    assert _lines(out, "GL116") == []


def test_gl116_source_parameter_negatives():
    # the only parameter the operand reads is rebound to the host before the factory (its device
    # there is not the operand's); a random factory (other numbers with `device=`)
    rebound = MASK_FIRST.replace("    pos_mask = torch.eye(enc.shape[0])\n    res = torch.mm(enc, enc2.t())\n",
                                 "    enc = enc.cpu()\n    pos_mask = torch.eye(enc.shape[0])\n"
                                 "    res = torch.mm(enc.to(device), enc.to(device).t())\n")
    random = MASK_FIRST.replace("torch.eye(enc.shape[0])", "torch.rand(enc.shape[0], enc.shape[0])")
    for src in (rebound, random):
        d = _diags(src, "GL116")
        assert d and all(x.fix is None for x in d)


def test_gl116_source_parameter_skips_a_rebound_one():
    # `enc` rebound to the host: the fix names `enc2`, the other parameter the operand is made from
    src = MASK_FIRST.replace("    pos_mask = torch.eye(enc.shape[0])\n    res = torch.mm(enc, enc2.t())\n",
                             "    enc = enc.cpu()\n    pos_mask = torch.eye(enc.shape[0])\n"
                             "    res = torch.mm(enc2, enc2.t())\n")
    d = _diags(src, "GL116")
    assert len(d) == 1 and d[0].fix is not None and "`device=enc2.device`" in d[0].message
