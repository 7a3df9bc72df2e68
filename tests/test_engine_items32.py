"""Engine items, twenty-fifth session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# One answer for "a default tensor type that may be CUDA is set" (ScriptModel.cuda_default_set):
# a written-out CPU type leaves factories on the host, as GL112 already read it.
DEFAULT_TYPE = """
import torch
import torch.nn as nn

torch.set_default_tensor_type({arg})


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        noise = torch.randn(x.shape[0], 4)
        return self.fc(x + noise)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 4, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_written_out_cpu_default_type_leaves_factories_on_the_host():
    assert _lines(DEFAULT_TYPE.format(arg="torch.DoubleTensor"), "GL105") == [(14, "GL105")]
    assert _lines(DEFAULT_TYPE.format(arg="'torch.FloatTensor'"), "GL105") == [(14, "GL105")]


def test_a_cuda_default_type_may_place_factories():
    assert _lines(DEFAULT_TYPE.format(arg="torch.cuda.FloatTensor"), "GL105") == []
    assert _lines(DEFAULT_TYPE.format(arg="dtype_name"), "GL105") == []


# M46-1 (ResidualMaskingNetwork's FER2013 trainer): a driver at module level that builds an
# instance of a class of the file and calls one of its methods runs the file's code: the file is a
# script, and GL102 reads its hard-coded `.cuda()` against the configured device.
TRAINER_DRIVER = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, configs):
        self._device = torch.device(configs["device"])
        self._model = nn.Linear(4, 2).to(self._device)
        self._opt = torch.optim.SGD(self._model.parameters(), lr=0.1)

    def train(self):
        for _ in range(3):
            images = torch.randn(8, 4).cuda()
            loss = self._model(images).pow(2).mean()
            self._opt.zero_grad()
            loss.backward()
            self._opt.step()
        return loss.item()


configs = {"device": "cuda:0" if torch.cuda.is_available() else "cpu"}
{driver}
"""


def test_a_method_of_a_file_class_run_at_import_makes_a_script():
    from gpulint.model import ScriptModel
    import libcst as cst

    for driver in ("trainer = Trainer(configs)\nacc = trainer.train()",
                   "trainer = Trainer(configs)\ntrainer.train()",
                   "acc = Trainer(configs).train()"):
        src = textwrap.dedent(TRAINER_DRIVER.replace("{driver}", driver))
        assert ScriptModel(cst.parse_module(src), src).is_script, driver
        assert _lines(TRAINER_DRIVER.replace("{driver}", driver), "GL102") == [(14, "GL102")], driver


def test_an_instance_alone_or_a_method_the_file_does_not_define_is_no_script():
    from gpulint.model import ScriptModel
    import libcst as cst

    for driver in ("trainer = Trainer(configs)",  # a module-level instance of a library
                   "trainer = Trainer(configs)\ntrainer.to_json()",  # not a method of the file
                   "state = load(configs).train()"):  # not a class of the file
        src = textwrap.dedent(TRAINER_DRIVER.replace("{driver}", driver))
        assert not ScriptModel(cst.parse_module(src), src).is_script, driver
        assert _lines(TRAINER_DRIVER.replace("{driver}", driver), "GL102") == [], driver


# F22-2 (TSD#6's ERM): a module class that moves its inputs in its own method and runs its
# registered container, built from parts made by a helper and a class of the file, through
# `self.predict(x)`; the only instance is never moved. Reported where the instance is called.
ERM = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def get_fea():
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class ERM(nn.Module):
    def __init__(self):
        super().__init__()
        self.featurizer = get_fea()
        self.classifier = Head()
        self.network = nn.Sequential(self.featurizer, self.classifier)

    def update(self, batches):
        x = torch.cat([b.to(device) for b in batches])
        return self.predict(x).sum()

    def predict(self, x):
        return self.network(x)


algorithm = ERM(){move}
for _ in range(3):
    algorithm.update([torch.randn(2, 4)])
"""


def test_an_unmoved_module_running_its_parts_through_its_own_methods():
    assert _lines(ERM.replace("{move}", ""), "GL112") == [(38, "GL112")]


def test_a_moved_module_running_its_parts_through_its_own_methods_is_silent():
    assert _lines(ERM.replace("{move}", ".to(device)"), "GL112") == []


# E50-4 (Reinforcement-Learning-Pytorch-Cartpole#1): a module-level function named like a method
# of a class of the file. A bare-name call never calls the method, so the method's one call site
# (`target_net.get_action(state)`) still gives its arguments.
SAME_NAME = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)

    def get_action(self, input):
        qvalue = self.forward(input)
        _, action = torch.max(qvalue, 1)
        return action.numpy()[0]


def {name}(state, target_net, epsilon):
    return target_net.get_action(state)


def main():
    target_net = QNet()
    target_net.to(device)
    state = torch.randn(1, 4).to(device)
    for step in range(3):
        with torch.no_grad():
            a = {name}(state, target_net, 0.5)


main()
"""


def test_a_function_named_like_a_method_does_not_hide_the_methods_call_site():
    assert _lines(SAME_NAME.replace("{name}", "choose"), "GL109") == [(19, "GL109")]
    assert _lines(SAME_NAME.replace("{name}", "get_action"), "GL109") == [(19, "GL109")]


# P39-A1 (FMLP-Rec's models.py): a host mask moved with `.cuda()` under an options flag named for
# the GPU (`self.args.cuda_condition`, set from `torch.cuda.is_available() and not args.no_cuda`)
# before it meets the input: GL105 stays silent, as for `if self.args.use_gpu:`.
MASK = """
import torch
import torch.nn as nn


class Rec(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.fc = nn.Linear(4, 4)

    def forward(self, input_ids):
        mask = torch.triu(torch.ones(1, 4, 4), diagonal=1)
        if {test}:
            mask = mask.cuda()
        return self.fc(input_ids.float() * mask)
"""


def test_a_host_tensor_moved_under_a_gpu_named_options_flag_is_not_reported():
    for test in ("self.args.cuda_condition", "self.args.use_gpu",
                 "torch.cuda.is_available() and not self.args.no_cuda"):
        assert _lines(MASK.replace("{test}", test), "GL105") == [], test


def test_a_host_tensor_moved_under_a_cpu_or_other_flag_is_still_reported():
    for test in ("self.args.no_cuda", "self.args.verbose", "self.args.cuda_condition and self.args.verbose"):
        assert _lines(MASK.replace("{test}", test), "GL105") == [(13, "GL105")], test


# E50-1 (gluonts#1230's forecast generator): an instance handed to the constructor of a class of
# the file, which keeps it as `self.gen`; its `__call__`'s sites are that attribute's calls, so
# the helper it calls sees the moved network and its device outputs.
GENERATOR = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(device)


def p2n(prediction_net, inputs):
    return prediction_net(*inputs).numpy()


class Gen:
    def __call__(self, batches, prediction_net):
        return [p2n(prediction_net, [b]) for b in batches]


class Predictor:
    def __init__(self, prediction_net, gen):
        self.prediction_net = prediction_net
        self.gen = gen{extra}

    def predict(self, batches):
        with torch.no_grad():
            return self.gen(batches, self.prediction_net)


outs = Predictor(net, Gen()).predict([torch.randn(3, 4).to(device)])
"""


def test_an_instance_kept_by_a_constructor_is_called_through_its_attribute():
    assert _lines(GENERATOR.replace("{extra}", ""), "GL109") == [(10, "GL109")]


def test_an_instance_the_constructor_also_hands_elsewhere_has_unknown_sites():
    # `register(gen)`: the instance may be called where the file does not show
    src = GENERATOR.replace("{extra}", "\n        register(gen)")
    assert _lines(src, "GL109") == []


# E50-3 (Reinforcement-Learning-Pytorch-Cartpole#1): a tensor made from a list or tuple built
# elsewhere, or from a repeated list display, has a dimension, so meeting device tensors on the
# host is a mismatch (a 0-dim host tensor would not be).
RANK = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(device)
pred = net(torch.randn(3, 4).to(device))
rows = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
a = {make}
out = pred * a
"""


def test_a_tensor_made_from_a_list_value_has_a_dimension():
    for make in ("torch.Tensor(rows)", "torch.tensor([[1.0, 0.0]] * 3)", "torch.FloatTensor(tuple(rows[0]))"):
        assert _lines(RANK.replace("{make}", make), "GL116") == [(10, "GL116")], make


def test_a_tensor_made_from_a_number_or_an_empty_list_may_have_none():
    for make in ("torch.tensor(rows[0][0])", "torch.tensor(len(rows))", "torch.Tensor([])"):
        assert _lines(RANK.replace("{make}", make), "GL116") == [], make


# E52-3 (mrs's loss list): modules kept in a list a helper returns, moved one by one in place
# (`for c in criterions: c.to(device)`), are no longer known to be on the host where the list is
# handed on: GL112 stays silent. Without the loop the list's module is still reported.
LOSS_LIST = """
import torch
import torch.nn as nn


class LossClass(nn.Module):
    pass


class Xent(LossClass):
    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(torch.tensor([1.0, 2.0]))

    def forward(self, pred, lbl):
        return self.criterion(pred, lbl)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def step(self, batches, device, criterions):
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            pred = self.fc(x)
            for c in criterions:
                loss = c(pred, y)
                loss.backward()


def create_loss():
    return [Xent()]


def train(device):
    model = Net()
    criterions = create_loss()
    model.to(device)
    for c in criterions:
        c.to(device)
    model.step([(torch.randn(8, 4), torch.randint(0, 2, (8,)))], device, criterions)


train(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
"""


def test_list_elements_moved_in_place_in_a_loop_are_not_on_the_host():
    assert _lines(LOSS_LIST, "GL112") == []


def test_list_elements_never_moved_are_on_the_host():
    src = LOSS_LIST.replace("    for c in criterions:\n        c.to(device)\n", "")
    assert _lines(src, "GL112") == [(29, "GL112")]


# E52-5 (torchbearer#506): a model output kept in a state dict (`state = {}`, then
# `state["y_pred"] = model(x)` in the loop) is read back with its graph; the dict gains keys on
# some paths, and a key read back has the value of the paths that set it.
STATE_DICT = """
import torch
import torch.nn as nn


class Mean:
    def __init__(self):
        self._sum = 0.0

    def process(self, data):
        self._sum += data.sum()


class MSE:
    def process(self, y_pred, y_true):
        return torch.pow(y_pred - y_true, 2)


model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
mse, agg = MSE(), Mean()
state = {}
for x, y in [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]:
    state["y_pred"] = model(x)
    state["y_true"] = y
    loss = nn.functional.mse_loss(state["y_pred"], y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    agg.process(mse.process(state["y_pred"], y))
"""


def test_a_graph_stored_in_a_state_dict_by_key_is_read_back():
    assert _lines(STATE_DICT, "GL402") == [(30, "GL402")]


def test_a_dict_nested_in_a_display_is_not_known_empty():
    # `{"kwargs": {}}`: its inner dict may gain keys through the outer one (`cfg["kwargs"]["device"]`)
    src = STATE_DICT.replace('state = {}', 'cfg = {"kwargs": {}}\nstate = cfg["kwargs"]')
    assert _lines(src, "GL402") == []


# E50-5 (allennlp#205): a trainer that moves the model only `if self._cuda_device >= 0:`, the
# attribute set from a constructor parameter every construction passes as `0 if
# torch.cuda.is_available() else -1`: the move runs on a GPU machine, so an optimizer built before
# it is GL118's.
CUDA_INDEX = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, optimizer, cuda_device=-1):
        self._model = model
        self._optimizer = optimizer
        self._cuda_device = cuda_device
        if self._cuda_device >= 0:
            self._model = self._model.cuda(self._cuda_device)

    def train(self, x):
        if self._cuda_device >= 0:
            x = x.cuda(self._cuda_device)
        self._optimizer.zero_grad()
        self._model(x).sum().backward()
        self._optimizer.step()


model = nn.Linear(4, 2)
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
trainer = Trainer(model, optimizer, cuda_device=0 if torch.cuda.is_available() else -1)
trainer.train(torch.randn(8, 4))
"""


def test_a_gpu_index_attribute_from_the_constructor_decides_the_guarded_move():
    assert _lines(CUDA_INDEX, "GL118") == [(23, "GL118")]


def test_a_gpu_index_attribute_of_unknown_value_decides_nothing():
    src = CUDA_INDEX.replace("cuda_device=0 if torch.cuda.is_available() else -1", "cuda_device=args_gpu")
    assert _lines(src, "GL118") == []


# E51-3a (WatChMaL): a `while epoch < n:` loop around the pass over a distributed loader is an
# epoch loop: GL302 reports the sampler without `set_epoch` (no fix: no epoch variable).
WHILE_EPOCHS = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
dataset = TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, sampler=sampler, batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
epoch = 0
while epoch < 3:{set_epoch}
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    epoch += 1
"""


def test_a_while_epoch_loop_repeats_the_distributed_pass():
    assert _lines(WHILE_EPOCHS.replace("{set_epoch}", ""), "GL302") == [(9, "GL302")]


def test_a_while_epoch_loop_that_sets_the_epoch_is_silent():
    assert _lines(WHILE_EPOCHS.replace("{set_epoch}", "\n    sampler.set_epoch(epoch)"), "GL302") == []


# E51-3b (WatChMaL): loaders kept in a dict filled in a loop over another dict's keys
# (`loaders[name] = DataLoader(...)`): `loaders["train"]` is that loader.
LOADER_DICT = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
loaders = {}
for name, n in {iterated}:
    dataset = TensorDataset(torch.randn(n, 4))
    loaders[name] = DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for (x,) in loaders["train"]:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""


def test_a_dict_filled_in_a_loop_over_known_keys_holds_each_value():
    src = LOADER_DICT.replace("{iterated}", '{"train": 64, "validation": 16}.items()')
    assert _lines(src, "GL302") == [(11, "GL302")]


def test_a_dict_filled_in_a_loop_over_unknown_keys_stays_unknown():
    src = LOADER_DICT.replace("{iterated}", "sizes.items()")
    assert _lines(src, "GL302") == []


# E52-1 (mrs's `set_train_params`): an optimizer built from a method of the model's class that
# returns parameter groups of `self.encoder.parameters()`, ... is tied to the model: GL111 reports
# its state restored before the model is moved.
PARAM_GROUPS = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.decoder = nn.Linear(8, 2)

    def set_train_params(self, lrs):
        return [{"params": self.encoder.parameters(), "lr": lrs[0]},
                {"params": self.decoder.parameters(), "lr": lrs[1]}]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net()
optm = torch.optim.Adam(model.set_train_params((1e-3, 1e-2)))
ckpt = torch.load("/tmp/ckpt.pt", map_location="cpu")
optm.load_state_dict(ckpt["opt_dict"])
model.to(device)
"""


def test_param_groups_from_a_method_of_the_model_tie_the_optimizer_to_it():
    assert _lines(PARAM_GROUPS, "GL111") == [(21, "GL111")]


def test_a_method_returning_no_parameters_of_its_own_ties_nothing():
    src = PARAM_GROUPS.replace("self.encoder.parameters()", "[]").replace("self.decoder.parameters()", "[]")
    assert _lines(src, "GL111") == []


# E52-2 (mrs's `load_epoch`): the optimizer's state restored in a module-level helper that every
# call gives the optimizer, called before the caller moves the model.
HELPER_LOAD = """
import torch
import torch.nn as nn


def load_epoch(path, model, optm):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["state_dict"])
    optm.load_state_dict(checkpoint["opt_dict"])


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optm = torch.optim.Adam(model.parameters(), lr=1e-2)
load_epoch("/tmp/ckpt.pt", model, optm)
model.to(device)
"""


def test_a_state_restored_in_a_helper_called_before_the_move():
    assert _lines(HELPER_LOAD, "GL111") == [(9, "GL111")]


def test_a_state_restored_in_a_helper_called_after_the_move_is_silent():
    src = HELPER_LOAD.replace('load_epoch("/tmp/ckpt.pt", model, optm)\nmodel.to(device)',
                              'model.to(device)\nload_epoch("/tmp/ckpt.pt", model, optm)')
    assert "model.to(device)\nload_epoch" in src
    assert _lines(src, "GL111") == []


# A dict grown from `{}` by key stores knows the keys it reads back, not that it has no other:
# `cfg = kwargs; cfg["device"] = device` sets one through an alias, so `Net(**kwargs)` may be
# placed (a guard for E52-5: silent on 3b203c8, where `{}` was unknown, and now).
ALIAS_GROWN = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        if "device" in kw:
            self.to(kw["device"])

    def forward(self, x):
        return self.fc(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
kwargs = {}
cfg = kwargs
cfg["device"] = device
model = Net(**kwargs)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4).to(device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_splat_of_a_dict_grown_from_empty_may_place_the_module():
    assert _lines(ALIAS_GROWN, "GL112") == []
