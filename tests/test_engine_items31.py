"""Engine items, twenty-fourth session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# P33-A2 (pixel2style2pixel's BicubicDownSample): `self.k.type(<a type name built at run time>)`
# names a device the analysis cannot read, so the attribute does not meet forward's input as a
# host tensor. A dtype keeps the attribute where it is, so GL106 still reports that form.
TYPED_KERNEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Down(nn.Module):
    def __init__(self, cuda=True):
        super().__init__()
        self.k = torch.ones(3, 1, 4, 1) / 4
        self.cuda = ".cuda" if cuda else ""

    def forward(self, x):
        k = self.k.type({arg})
        return F.conv2d(x, k, stride=(4, 1), groups=3)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
down = Down(cuda=False).to(device)
print(down(torch.rand(1, 3, 16, 16, device=device)).shape)
"""


def test_a_type_name_made_at_run_time_leaves_the_device_unknown():
    for arg in ('"torch{}.FloatTensor".format(self.cuda)', 'f"torch{self.cuda}.FloatTensor"',
                '"torch" + self.cuda + ".FloatTensor"'):
        assert _lines(TYPED_KERNEL.replace("{arg}", arg), "GL106") == [], arg


def test_a_dtype_keeps_the_attribute_on_the_host():
    assert _lines(TYPED_KERNEL.replace("{arg}", "torch.float32"), "GL106") == [(10, "GL106")]


# E44-6 (RLHive's DQN agent): `MLPNetwork(**qnet["kwargs"])` of a file class whose `__init__`
# takes no `device` and no `**kwargs` is built on the host whatever the mapping holds; the engine
# read every `**mapping` as a possible `device=`.
SPLAT_BUILT = """
import torch
import torch.nn as nn


class MLPNetwork(nn.Module):
    def __init__(self, in_dim, out_dim{extra}):
        super().__init__()
        self.net = nn.Linear(in_dim, out_dim)

    def forward(self, x):
        return self.net(x)


def get_qnet(qnet):
    return MLPNetwork(**qnet["kwargs"])


class Agent:
    def __init__(self, qnet, device):
        qnet["kwargs"]["in_dim"] = 4
        qnet["kwargs"]["out_dim"] = 2
        self._qnet = get_qnet(qnet)
        self._device = torch.device(device)

    def act(self, observation):
        return self._qnet(torch.tensor(observation).to(self._device).float())


device = "cuda" if torch.cuda.is_available() else "cpu"
Agent({"kwargs": {}}, device).act([0.0, 1.0, 2.0, 3.0])
"""


def test_a_mapping_splat_cannot_place_a_class_that_takes_no_device():
    assert _lines(SPLAT_BUILT.replace("{extra}", ""), "GL112") == [(27, "GL112")]


def test_a_mapping_splat_may_place_a_class_that_takes_a_device_or_kwargs():
    assert _lines(SPLAT_BUILT.replace("{extra}", ", device=None"), "GL112") == []
    assert _lines(SPLAT_BUILT.replace("{extra}", ", **kwargs"), "GL112") == []


# E45-3 (ignite#750's checkpoint handler): the wrapper is one entry of a mapping handed to an
# object, and the save writes `{name: obj.state_dict() for name, obj in self.to_save.items()}`.
# The engine knows the mapping's entries; a loop variable over `.items()`/`.values()` holds the
# wrapper on one iteration, and an entry read with its key holds it always.
ENTRIES = """
import torch
import torch.nn as nn


class Checkpoint:
    def __init__(self, to_save):
        self.to_save = to_save

    def __call__(self):
        torch.save({name: obj.state_dict() for name, obj in self.to_save.items()}, "ckpt.pt")


model = nn.DataParallel(nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
Checkpoint({"model": model, "optimizer": opt})()
to_save = {"model": model, "optimizer": opt}
torch.save({"model": to_save["model"].state_dict()}, "a.pt")
torch.save([o.state_dict() for o in to_save.values()], "b.pt")
for name, obj in to_save.items():
    torch.save(obj.state_dict(), name + ".pt")
"""

ENTRIES_UNWRAPPED = """
import torch
import torch.nn as nn

model = nn.DataParallel(nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
plain = {"model": model.module, "optimizer": opt}
torch.save({k: o.state_dict() for k, o in plain.items()}, "c.pt")
to_save = {"model": model, "optimizer": opt}
torch.save({k: (o.module if isinstance(o, nn.DataParallel) else o).state_dict() for k, o in to_save.items()}, "d.pt")
torch.save({k: v for k, v in to_save.items() if k != "model"}, "e.pt")
for name, obj in to_save.items():
    obj = getattr(obj, "module", obj)
    torch.save(obj.state_dict(), name + ".pt")
"""


def test_a_wrapper_among_a_mappings_entries_is_saved_with_module_keys():
    assert _lines(ENTRIES, "GL304") == [(11, "GL304"), (18, "GL304"), (19, "GL304"), (21, "GL304")]


def test_unwrapped_or_checked_entries_stay_silent():
    assert _lines(ENTRIES_UNWRAPPED, "GL304") == []


# E44-1b (DiGress's noise schedule): `torch.cumprod(...)` is a tensor. The script model's kinds
# came from a hand list of torch functions that lacked it; they now also take the knowledge base's
# tensor-returning functions.
CUMPROD = """
import torch
import torch.nn as nn


class Diffusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.alphas_bar = torch.{fn}(torch.linspace(0.01, 0.2, 4), dim=0)

    def forward(self, x, t):
        return self.net(x) * self.alphas_bar[t]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Diffusion().to(device)
model(torch.randn(8, 4).to(device), torch.randint(0, 4, (8, 1), device=device))
"""


def test_a_tensor_function_of_the_knowledge_base_makes_a_tensor_attribute():
    assert _lines(CUMPROD.replace("{fn}", "cumprod"), "GL106") == [(10, "GL106")]
    assert _lines(CUMPROD.replace("{fn}", "logcumsumexp"), "GL106") == [(10, "GL106")]


# E44-1a (DiGress's schedule submodule): a plain attribute computed in `__init__` from the
# module's own buffer (`self.alphas_bar = torch.exp(torch.log(1 - self.betas))`) is a host
# snapshot: the engine read a registered buffer as "wherever the module is" even in the `__init__`
# that made it, so the attribute followed the later move.
SNAPSHOT = """
import torch
import torch.nn as nn


class Schedule(nn.Module):
    def __init__(self, T):
        super().__init__()
        self.register_buffer("betas", torch.linspace(0.01, 0.2, T + 1))
        self.alphas_bar = {derived}

    def get_alpha_bar(self, t_int):
        return self.alphas_bar[t_int.long()]


class Diffusion(nn.Module):
    def __init__(self, T=10):
        super().__init__()
        self.net = nn.Linear(4, 4)
        self.noise_schedule = Schedule(T)

    def forward(self, x):
        t_int = torch.randint(1, 11, (x.size(0), 1), device=x.device)
        return self.net(x * self.noise_schedule.get_alpha_bar(t_int)).mean()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Diffusion().to(device)
model(torch.randn(8, 4).to(device))
"""


def test_a_value_derived_from_an_own_buffer_in_init_is_a_host_snapshot():
    assert _lines(SNAPSHOT.replace("{derived}", "torch.exp(torch.log(1 - self.betas))"), "GL106") == [(10, "GL106")]


def test_a_buffer_read_in_init_after_a_move_or_registered_again_stays_silent():
    moved = SNAPSHOT.replace("{derived}", "torch.exp(torch.log(1 - self.betas))").replace(
        '        self.register_buffer("betas", torch.linspace(0.01, 0.2, T + 1))\n',
        '        self.register_buffer("betas", torch.linspace(0.01, 0.2, T + 1))\n        self.to("cuda")\n')
    assert _lines(moved, "GL106") == []
    registered = SNAPSHOT.replace("        self.alphas_bar = {derived}",
                                  '        self.register_buffer("alphas_bar", torch.exp(torch.log(1 - self.betas)))')
    assert _lines(registered, "GL106") == []


# E46-3 (spd_learn's wavelet layer): a submodule whose `forward` copies its output to a plain
# `self.device = torch.device("cpu")` on every path hands the parent a host tensor; the engine took
# any file module's output to be where the module is.
HOST_OUTPUT = """
import torch
import torch.nn as nn


class Feature(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cpu")
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, X):
        out = X * self.scale
        {ret}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = Feature()
        self.proj = nn.Linear(4, 2)

    def forward(self, X):
        return self.proj(self.feature(X))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
model(torch.randn(8, 4, device=device)).sum().backward()
"""


def test_a_submodule_output_copied_to_the_host_on_every_path_is_on_the_host():
    assert _lines(HOST_OUTPUT.replace("{ret}", "return out.to(device=self.device)"), "GL116") == [(24, "GL116")]
    assert _lines(HOST_OUTPUT.replace("{ret}", "return out.cpu()"), "GL116") == [(24, "GL116")]


def test_a_submodule_output_copied_to_the_host_on_some_paths_or_to_its_input_stays_silent():
    assert _lines(HOST_OUTPUT.replace("{ret}", "return out.cpu() if not out.requires_grad else out"), "GL116") == []
    assert _lines(HOST_OUTPUT.replace("{ret}", "return out.to(X.device)"), "GL116") == []


# E46-4 (captum's TCAV classifier): `self._classes = None` in `__init__` is a placeholder that
# `fit()` fills with a host table; read through `lm.classes()` at module level the engine saw
# only `__init__`'s None (so the table was "None", not a host tensor, and nothing was reported).
PLACEHOLDER = """
import torch
import torch.nn as nn


class LinearModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self._classes = None

    def fit(self, y):
        self._classes = {table}

    def forward(self, x):
        return self.linear(x)

    def classes(self):
        return self._classes


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
lm = LinearModel().to(device)
lm.fit(torch.tensor([0, 1, 1, 0]))
predict = lm(torch.randn(8, 4, device=device))
predict = lm.classes()[torch.argmax(predict, dim=1)]
"""


def test_a_placeholder_attribute_joins_what_other_methods_store():
    assert _lines(PLACEHOLDER.replace("{table}", "torch.tensor([0, 1])"), "GL116") == [(26, "GL116")]


def test_a_placeholder_filled_on_the_device_or_with_an_unknown_value_stays_silent():
    on_device = PLACEHOLDER.replace("lm.fit(torch.tensor([0, 1, 1, 0]))",
                                    "lm.fit(torch.tensor([0, 1, 1, 0], device=device))")
    assert _lines(on_device.replace("{table}", "torch.tensor([0, 1], device=y.device)"), "GL116") == []
    assert _lines(on_device.replace("{table}", "torch.unique(y)"), "GL116") == []
    assert _lines(PLACEHOLDER.replace("{table}", "y.new_tensor([0, 1]).to(device)"), "GL116") == []


# E46-1 (federated_adaptation's TextHelper): a slice of a `.cuda()` batch (`source[0:5]`) is a view
# placed where the batch was placed; the engine dropped the placement at the subscript, so GL102's
# meeting with the run-time-placed model was lost.
SLICED = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def batchify(data, bsz):
    return data.view(bsz, -1).t().contiguous().{move}


model = nn.Embedding(40, 8)
model.to(device)
train_data = [batchify(torch.arange(40), 4) for _ in range(3)]
for source in train_data:
    data = source[0:5]
    model(data).sum().backward()
"""


def test_a_slice_keeps_the_placement_of_its_tensor():
    assert _lines(SLICED.replace("{move}", "cuda()"), "GL102") == [(9, "GL102")]
    assert _lines(SLICED.replace("{move}", "to(device)"), "GL102") == []


# E46-2 (transformers#4240's Trainer.train, reduced): the optimizer is built from
# `self.model.parameters()` of a model handed to the constructor, restored, then `self.model` is
# moved. GL111 did not tie the optimizer to `self.model`: the script model's kinds do not know a
# constructor argument is a module; the engine does.
TRAINER_RESTORE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Trainer:
    def __init__(self, model):
        self.model = model

    def train(self, state):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        {first}
        {second}
        self.model(torch.randn(4, 6, device=device)).sum().backward()
        optimizer.step()


src = nn.Linear(6, 1)
opt0 = torch.optim.AdamW(src.parameters())
state = opt0.state_dict()
Trainer(nn.Linear(6, 1)).train(state)
"""


def test_an_optimizer_of_a_self_model_restored_before_its_move():
    load, move = "optimizer.load_state_dict(state)", "self.model.to(device)"
    assert _lines(TRAINER_RESTORE.replace("{first}", load).replace("{second}", move), "GL111") == [(14, "GL111")]
    assert _lines(TRAINER_RESTORE.replace("{first}", move).replace("{second}", load), "GL111") == []


# E47-3 (pytracking's LTR trainer, reduced): a graph-carrying loss added into an `AverageMeter` of
# the file read from a dict (`stats["loss"].update(loss, 8)`); the engine resolves the meter, the
# rule dropped the update because the receiver has no dotted name.
METER_IN_DICT = """
import torch
import torch.nn as nn


class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
stats = {"loss": AverageMeter()}
for _ in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    stats["loss"].update({arg}, 8)
print(stats["loss"].sum)
"""


def test_a_meter_read_from_a_dict_accumulates_the_graph():
    assert _lines(METER_IN_DICT.replace("{arg}", "loss"), "GL402") == [(24, "GL402")]
    assert _lines(METER_IN_DICT.replace("{arg}", "loss.item()"), "GL402") == []


# E42-2 (pytorch-AGNN#5, reduced): `__init__` makes `self.beta` a Parameter on one branch and a plain
# tensor on the other; the file builds the class both ways. The instances' values were joined, so
# the plain one was never seen meeting the device. The engine now keeps, per construction, the
# plain host tensors such an `__init__` leaves, and GL106 reports the plain assignment (without a
# fix: the buffer fix would turn the other branch's Parameter into a buffer).
BRANCHY = """
import torch
import torch.nn as nn
from torch.nn.parameter import Parameter


class Layer(nn.Module):
    def __init__(self, requires_grad=True):
        super().__init__()
        if requires_grad:
            self.beta = Parameter(torch.Tensor(1).uniform_(0, 1))
        else:
            self.beta = torch.zeros(1)

    def forward(self, x):
        return self.beta * x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = Layer({first})
        self.l2 = Layer()

    def forward(self, x):
        return self.l2(self.l1(x))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
out = model(torch.randn(4, 2).to(device))
"""


def test_a_plain_branch_of_a_parameter_attribute_is_reported_per_construction():
    rules = [Registry.load().by_code("GL106")()]
    diags = run_text("train.py", textwrap.dedent(BRANCHY.replace("{first}", "requires_grad=False")),
                     rules, Options()).diagnostics
    assert [(d.line, d.code) for d in diags] == [(13, "GL106")]
    assert all(d.fix is None for d in diags)


def test_every_construction_taking_the_parameter_branch_stays_silent():
    assert _lines(BRANCHY.replace("{first}", "requires_grad=True"), "GL106", "GL116") == []


# P37-A1 (BERT4doc's multitask heads): a forward that reads a parameter only as
# `dataset_labels[0].item()` may be handed it on the host; `_host_use` knew `.item()` of the
# parameter itself, not of an element picked by a written-out number.
HEAD_CHOICE = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head_1 = nn.Linear(8, 2)
        self.head_2 = nn.Linear(8, 3)

    def forward(self, x, dataset_labels):
        h = self.body(x)
        if {use} == 1:
            return self.head_1(h)
        return self.head_2(h)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = MultiHead().to(device)
data = TensorDataset(torch.randn(8, 4), torch.ones(8, dtype=torch.long))
for x, dataset_label_id in DataLoader(data, batch_size=4):
    x = x.to(device)
    with torch.no_grad():
        logits = model(x, dataset_label_id)
print(logits.shape)
"""


def test_a_parameter_read_only_as_an_element_number_may_stay_on_the_host():
    assert _lines(HEAD_CHOICE.replace("{use}", "dataset_labels[0].item()"), "GL101") == []
    assert _lines(HEAD_CHOICE.replace("{use}", "dataset_labels[-1].item()"), "GL101") == []


def test_a_parameter_that_meets_the_device_is_still_reported():
    assert _lines(HEAD_CHOICE.replace("{use}", "(h.sum(1) * dataset_labels)[0].item()"), "GL101") == [(27, "GL101")]


# E48-1 (CLEAN's LayerNormNet): every layer `__init__` builds takes `device=` from the constructor's
# `device` parameter (passed by position), and a parameterless `nn.Dropout` sits beside them: the
# instance is where its argument says, not on the host. GL112 reported `model(x)`.
BUILT_THERE = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LayerNormNet(nn.Module):
    def __init__(self, hidden_dim, out_dim, device, dtype):
        super().__init__()
        self.fc1 = nn.Linear(8, hidden_dim, dtype=dtype, device={dev})
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(hidden_dim, out_dim, dtype=dtype, device={dev})

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


model = LayerNormNet(16, 4, device, torch.float32)
x = torch.randn(5, 8).to(device)
model(x).sum().backward()
"""


def test_layers_built_with_the_constructors_device_place_the_instance():
    assert _lines(BUILT_THERE.replace("{dev}", "device"), "GL112") == []


def test_layers_built_on_the_cpu_leave_the_instance_there():
    assert _lines(BUILT_THERE.replace("{dev}", '"cpu"'), "GL112") == [(21, "GL112")]
    assert _lines(BUILT_THERE.replace("{dev}", "None"), "GL112") == [(21, "GL112")]


# E46-5 (InnerEye#198's ModelAndInfo): one method of a holder class builds the optimizer from
# `self.model.parameters()` and restores it, another moves `self.model`; the caller runs them in
# that order on one instance. GL111 covered a restore while the instance is built only.
HOLDER = """
import torch
import torch.nn as nn


class ModelAndInfo:
    def __init__(self):
        self.model = nn.Linear(6, 1)
        self.optimizer = None

    def to_cuda(self):
        self.model = self.model.cuda()

    def adjust_model_for_gpus(self):
        if torch.cuda.is_available():
            self.to_cuda()

    def create_optimizer_and_load(self, state):
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.optimizer.load_state_dict(state)


opt0 = torch.optim.Adam(nn.Linear(6, 1).parameters())
info = ModelAndInfo()
{first}
{second}
info.model(torch.randn(2, 6, device=next(info.model.parameters()).device)).sum().backward()
info.optimizer.step()
"""


def test_a_restoring_method_called_before_the_moving_one():
    load, move = "info.create_optimizer_and_load(opt0.state_dict())", "info.adjust_model_for_gpus()"
    assert _lines(HOLDER.replace("{first}", load).replace("{second}", move), "GL111") == [(20, "GL111")]


def test_the_moving_method_called_first_or_alone_stays_silent():
    load, move = "info.create_optimizer_and_load(opt0.state_dict())", "info.adjust_model_for_gpus()"
    assert _lines(HOLDER.replace("{first}", move).replace("{second}", load), "GL111") == []
    assert _lines(HOLDER.replace("{first}", load).replace("{second}", "pass"), "GL111") == []
    other = HOLDER.replace("{first}", load).replace("{second}", "ModelAndInfo().adjust_model_for_gpus()")
    assert _lines(other, "GL111") == []


# E48-2 (pytorch#20260): a GPU transform function of the file handed to the Dataset's constructor
# and called through `self.transform(x)` in `__getitem__`: worker code GL114 did not follow (the
# engine resolves the call; the rule read only the Dataset's own methods and transform classes).
TRANSFORM_FN = """
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def gpu_denoise(t):
    return (t.to(device) * 2).cpu()


class Images(Dataset):
    def __init__(self, transform=None):
        self.data = torch.randn(8, 4)
        self.transform = transform

    def __getitem__(self, i):
        x = self.data[i]
        if self.transform is not None:
            x = self.transform(x)
        return x

    def __len__(self):
        return 8


loader = DataLoader(Images(transform={given}), batch_size=4, num_workers={workers})
for x in loader:
    print(gpu_denoise(x).sum())
"""


def test_a_transform_function_called_in_getitem_runs_in_the_workers():
    assert _lines(TRANSFORM_FN.replace("{given}", "gpu_denoise").replace("{workers}", "2"), "GL114") == [(9, "GL114")]


def test_no_workers_or_no_transform_stays_silent():
    assert _lines(TRANSFORM_FN.replace("{given}", "gpu_denoise").replace("{workers}", "0"), "GL114") == []
    assert _lines(TRANSFORM_FN.replace("{given}", "None").replace("{workers}", "2"), "GL114") == []


# E49-2 (faster-rcnn-pytorch#27, reduced): the trainer is bound under `if __name__ == "__main__":`
# and read as a global by `fit()`. The engine joined the block's bindings with "not run", so the
# global was unknown there; the block runs when the script does.
MAIN_GLOBAL = """
import torch
import torch.nn as nn


class Trainer(nn.Module):
    def __init__(self, net, optimizer):
        super().__init__()
        self.net = net
        self.optimizer = optimizer

    def train_step(self, x):
        self.optimizer.zero_grad()
        a = self.net(x).pow(2).mean()
        b = self.net(x).abs().mean()
        (a + b).backward()
        self.optimizer.step()
        return [a, b, a + b]


def fit(data):
    total_loss = 0
    for x in data:
        a, b, total = train_util.train_step(x)
        total_loss += {acc}
    return total_loss


if {test}:
    net = nn.Linear(4, 2)
    train_util = Trainer(net, torch.optim.SGD(net.parameters(), lr=0.1))
    print(fit([torch.randn(8, 4) for _ in range(3)]))
"""


def test_globals_bound_in_the_main_block_are_read_by_functions():
    src = MAIN_GLOBAL.replace("{test}", '__name__ == "__main__"')
    assert _lines(src.replace("{acc}", "total"), "GL402") == [(25, "GL402")]
    assert _lines(src.replace("{acc}", "total.item()"), "GL402") == []
    assert _lines(MAIN_GLOBAL.replace("{test}", "'__main__' == __name__").replace("{acc}", "total"), "GL402") == [(25, "GL402")]


def test_another_module_level_test_is_not_decided():
    assert _lines(MAIN_GLOBAL.replace("{test}", "len(__name__) > 3").replace("{acc}", "total"), "GL402") == []


# E49-1 (faster-rcnn-pytorch#27's trainer): `losses + [sum(losses)]` is a list of both lists'
# elements, `sum()` of a list of tensors is a tensor holding their graphs, and a module class of the
# file placed nowhere known still returns the tuple its forward builds (`rpn_out, roi_out =
# self.faster_rcnn(x)`).
CONCAT = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 2)
        self.b = nn.Linear(4, 2)

    def forward(self, x):
        return self.a(x), self.b(x)


class Trainer(nn.Module):
    def __init__(self, net, optimizer):
        super().__init__()
        self.net = net
        self.optimizer = optimizer

    def forward(self, x):
        out_a, out_b = self.net(x)
        losses = [out_a.pow(2).mean(), out_b.abs().mean()]
        losses = losses + [{last}]
        return losses

    def train_step(self, x):
        self.optimizer.zero_grad()
        losses = self.forward(x)
        losses[-1].backward()
        self.optimizer.step()
        return losses


net = Net()
train_util = Trainer(net, torch.optim.SGD(net.parameters(), lr=0.1))
total_loss = 0
for x in [torch.randn(8, 4) for _ in range(3)]:
    a, b, total = train_util.train_step(x)
    total_loss += total
"""


def test_a_concatenated_list_of_losses_keeps_its_graphs():
    assert _lines(CONCAT.replace("{last}", "sum(losses)"), "GL402") == [(41, "GL402")]


def test_a_number_appended_by_concatenation_holds_no_graph():
    assert _lines(CONCAT.replace("{last}", "sum(l.item() for l in losses)"), "GL402") == []
    assert _lines(CONCAT.replace("{last}", "0.0"), "GL402") == []


# Found on corpus23 (kenziyuliu/MS-G3D model/ms_gcn.py) once the knowledge base's tensor functions
# gave kinds: `nn.init.uniform_(nn.Parameter(...))` hands back the Parameter, a registered one.
INIT_PARAMETER = """
import torch
import torch.nn as nn


class GraphConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.A = torch.ones(4, 4)
        self.A_res = nn.init.uniform_(nn.Parameter(torch.Tensor(4, 4)), -1e-6, 1e-6)

    def forward(self, x):
        A = self.A.to(x.device) + self.A_res
        return x @ A


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = GraphConv().to(device)
model(torch.randn(2, 4, device=device))
"""


def test_an_in_place_init_of_a_parameter_is_the_parameter():
    assert _lines(INIT_PARAMETER, "GL106") == []


BUILDER = """
import os
import torch
import torch.optim as optim
from models.networks import define_G


class CDTrainer:
    def __init__(self, args):
        self.net_G = {built}
        self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        self.optimizer_G = optim.SGD(self.net_G.parameters(), lr=0.01, momentum=0.9)

    def _load_checkpoint(self, path):
        if os.path.exists(path):
            checkpoint = torch.load(path, map_location=self.device)
            self.net_G.load_state_dict(checkpoint["model_G_state_dict"])
            self.optimizer_G.load_state_dict(checkpoint["optimizer_G_state_dict"])
            self.net_G.to(self.device)

    def train_models(self):
        self._load_checkpoint("last_ckpt.pt")
"""


def test_a_model_from_an_imported_builder_is_not_tied_by_the_engine():
    # corpus26 justchenhao/BIT_CD models/trainer.py: `self.net_G = define_G(args, gpu_ids)` from
    # another file, which moves it to the GPU before the optimizer is built from it
    assert _lines(BUILDER.replace("{built}", "define_G(args=args, gpu_ids=args.gpu_ids)"), "GL111") == []
