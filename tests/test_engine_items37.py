"""Engine and rule items, thirtieth session (each test checked to fail on dd3c6bd unless it says it
is a control that already passed there)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# E60-2 (pytorch#8741): a trainer builds its network and optimizer in `__init__`, restores the
# optimizer in `load()` and moves the network in `to()`; the script calls `load` before `to`.
TRAINER = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self{param}):
        self.network = {net}
        self.optim = torch.optim.Adam(self.network.parameters())

    def load(self, path):
        state = torch.load(path, map_location="cpu")
        self.network.load_state_dict(state["network"])
        self.optim.load_state_dict(state["optim"])
{extra}
    def to(self, device):
        self.network.to(device)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{build}
{calls}
"""


def _trainer(param="", net="nn.Linear(4, 2)", extra="", build="trainer = Trainer()",
             calls="trainer.load('last.pt')\ntrainer.to(device)"):
    return TRAINER.format(param=param, net=net, extra=extra, build=build, calls=calls)


def test_trainer_optimizer_built_in_init_restored_before_moving_method():
    assert _lines(_trainer(), "GL111") == [(14, "GL111")]
    msg = _run(_trainer(), "GL111").diagnostics[0].message
    assert "`self.network`" in msg and "`to()` moves it" in msg


def test_trainer_moved_before_restore_is_silent():
    assert _lines(_trainer(calls="trainer.to(device)\ntrainer.load('last.pt')"), "GL111") == []


def test_trainer_given_a_moved_network_is_silent():
    src = _trainer(param=", net", net="net", build="trainer = Trainer(nn.Linear(4, 2).to(device))")
    assert _lines(src, "GL111") == []
    # a network handed in unmoved is restored on the host as well
    src = _trainer(param=", net", net="net", build="trainer = Trainer(nn.Linear(4, 2))")
    assert _lines(src, "GL111") == [(14, "GL111")]


def test_trainer_moving_optimizer_state_after_restore_is_silent():
    extra = ("        for st in self.optim.state.values():\n"
             "            for k, v in st.items():\n"
             "                if torch.is_tensor(v):\n"
             "                    st[k] = v.to(device)\n")
    assert _lines(_trainer(extra=extra), "GL111") == []


def test_trainer_moved_while_built_is_silent():
    src = _trainer(net="nn.Linear(4, 2).to(device)")
    assert _lines(src, "GL111") == []


# E62-1 (pytorch-retinanet#220): a loss module appends one loss per image; an image without boxes
# appends a host zero, the others a loss on the inputs' device; `torch.stack` then mixes devices.
FOCAL = """
import torch
import torch.nn as nn


class FocalLoss(nn.Module):
    def forward(self, classifications, annotations):
        losses = []
        for j in range(classifications.shape[0]):
            classification = classifications[j]
            ann = annotations[j]
            ann = ann[ann[:, 4] != -1]
            if {test}:
                losses.append({empty})
                continue
            losses.append(classification.pow(2).sum())
        return torch.stack(losses).mean()


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Head().to(device)
criterion = FocalLoss()
x = torch.randn(4, 8, 6).to(device)
ann = torch.randn(4, 3, 5).to(device)
loss = criterion(model(x), ann)
loss.backward()
"""


def _focal(test="ann.shape[0] == 0", empty="torch.tensor(0).float()"):
    return FOCAL.format(test=test, empty=empty)


def test_appended_host_zero_and_device_losses_stacked():
    assert _lines(_focal(), "GL105") == [(14, "GL105")]


def test_appended_zero_made_on_the_inputs_device_is_silent():
    assert _lines(_focal(empty="torch.tensor(0.0, device=classification.device)"), "GL105", "GL116") == []
    assert _lines(_focal(empty="classification.sum() * 0"), "GL105", "GL116") == []


def test_appended_host_zero_under_a_setting_is_silent():
    # a test that reads nothing the loop re-binds takes the same branch on every pass (a CPU-only
    # evaluation mode, say): the list is all host or all device
    src = _focal(test="self.training is False")
    assert _lines(src, "GL105", "GL116") == []


def test_appended_host_copies_then_stacked_and_moved_is_silent():
    src = FOCAL.format(test="ann.shape[0] == 0", empty="classification.sum().cpu()").replace(
        "losses.append(classification.pow(2).sum())", "losses.append(classification.pow(2).sum().cpu())")
    assert _lines(src, "GL105", "GL116") == []


# E46-2 (transformers#4240): `Trainer.train()` takes its optimizer from a method that returns it
# in a tuple, restores its state, and only then moves the model through an alias of `self.model`.
HF = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def get_optimizers(self):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
        return optimizer, scheduler

    def train(self, path=None):
        optimizer, scheduler = self.get_optimizers()
{before}        if path is not None:
            optimizer.load_state_dict(torch.load(path, map_location="cpu"))
        model = self.model
        model.to(self.device)
        for step in range(3):
            loss = model(torch.randn(4, 6).to(self.device)).pow(2).mean()
            loss.backward()
            optimizer.step()
            scheduler.step()
            model.zero_grad()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = Trainer({model}, device)
trainer.train("ckpt/optimizer.pt")
"""


def _hf(before="", model="nn.Linear(6, 1)"):
    return HF.format(before=before, model=model)


def test_optimizer_from_method_tuple_restored_before_alias_moved():
    assert _lines(_hf(), "GL111") == [(19, "GL111")]


def test_optimizer_from_method_tuple_model_moved_first_is_silent():
    assert _lines(_hf(before="        self.model.to(self.device)\n"), "GL111") == []
    assert _lines(_hf(model="nn.Linear(6, 1).to(device)"), "GL111") == []


# E44-3 (SimplePIM#2): a module class keeps the parameter it was given (made on the GPU); the
# instance is never moved, so `model.weights` is still where it was made.
PIM = """
import torch


class LinearRegression(torch.nn.Module):
    def __init__(self, init_weight):
        super().__init__()
        self.weights = init_weight

    def forward(self, x):
        return x @ self.weights


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = torch.nn.Parameter(torch.zeros(3).to(device))
model = LinearRegression(w)
{after}
print(model.weights.detach().numpy())
"""


def test_parameter_attribute_of_unmoved_module_instance_made_on_device():
    assert _lines(PIM.format(after=""), "GL109") == [(18, "GL109")]


def test_parameter_attribute_after_the_instance_is_moved_is_silent():
    # a move to the host takes the parameter with it; where the engine saw a move, it stays silent
    assert _lines(PIM.format(after="model.cpu()"), "GL109") == []
    assert _lines(PIM.format(after="model.to('cpu')"), "GL109") == []
    src = PIM.format(after="def offload(m):\n    m.cpu()\n\n\noffload(model)")
    assert _lines(src, "GL109") == []


# E60-2 (pytorch#8741, minimal): the holder's optimizer and network read from outside the class.
HOLDER = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net = {net}
        self.optim = torch.optim.Adam(self.net.parameters())


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = Trainer()
state = torch.load("last.pt", map_location="cpu")
{body}
"""


def test_holder_optimizer_restored_before_its_network_is_moved():
    src = HOLDER.format(net="nn.Linear(4, 2)", body='trainer.optim.load_state_dict(state["optim"])\ntrainer.net.to(device)')
    assert _lines(src, "GL111") == [(15, "GL111")]


def test_holder_network_moved_first_or_in_init_is_silent():
    src = HOLDER.format(net="nn.Linear(4, 2)", body='trainer.net.to(device)\ntrainer.optim.load_state_dict(state["optim"])')
    assert _lines(src, "GL111") == []
    src = HOLDER.format(net="nn.Linear(4, 2).to(device)",
                        body='trainer.optim.load_state_dict(state["optim"])\ntrainer.net.to(device)')
    assert _lines(src, "GL111") == []
    src = HOLDER.format(net="nn.Linear(4, 2)", body='trainer.optim.load_state_dict(state["optim"])\ntrainer.net.to("cpu")')
    assert _lines(src, "GL111") == []


# E63-1 (sentence-transformers#26): a module class built around a moved module adds a layer of
# its own in `__init__`; the wrapper itself is never moved, so that layer stays on the host.
WRAP = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Head(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
{own}

    def forward(self, x):
        return {body}


enc = nn.Linear(4, 4).to(device)
head = Head(enc)
{after}
out = head(torch.randn(2, 4).to(device))
"""


def _wrap(own="        self.classifier = nn.Linear(4, 3)", body="self.classifier(self.model(x))", after=""):
    return WRAP.format(own=own, body=body, after=after)


def test_wrapper_with_own_layer_around_moved_module_never_moved():
    assert _lines(_wrap(), "GL112", "GL116") == [(21, "GL112")]


def test_wrapper_that_only_stores_the_moved_module_is_silent():
    assert _lines(_wrap(own="        self.scale = 2.0", body="self.model(x) * self.scale"), "GL112", "GL116") == []


def test_wrapper_moved_or_building_its_layer_on_the_device_is_silent():
    assert _lines(_wrap(after="head.to(device)"), "GL112", "GL116") == []
    own = "        self.classifier = nn.Linear(4, 3).to(next(model.parameters()).device)"
    assert _lines(_wrap(own=own), "GL112", "GL116") == []


# G63-1 (fixtures63, aladdinpersson Machine-Learning-Collection PR#15): a factory in forward moved
# with `.to(self.device)`, `self.device` the constructor's "cpu" default that no construction
# passes. `device=` on the factory would not change where the moved value is: GL105 stays silent
# (its fix used to leave the crash in place) and GL116 reports the meeting, naming the move.
ENC = """
import torch
import torch.nn as nn


class Enc(nn.Module):
    def __init__(self, device="cpu"):
        super().__init__()
        self.device = device
        self.emb = nn.Embedding(10, 4)

    def forward(self, x):
        pos = torch.arange(x.shape[1]).expand_as(x){move}
        return self.emb(x) + self.emb(pos)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Enc({arg}).to(device)
model(torch.randint(0, 10, (2, 3)).to(device)).sum().backward()
"""


def test_factory_moved_to_a_host_device_attribute_is_the_moves_fault():
    diags = _run(ENC.format(move=".to(self.device)", arg=""), "GL105", "GL116").diagnostics
    assert [(d.line, d.code) for d in diags] == [(14, "GL116")]
    assert "moved there by" in diags[0].message


def test_factory_without_the_move_is_still_gl105():
    assert _lines(ENC.format(move="", arg=""), "GL105", "GL116") == [(13, "GL105")]


def test_factory_moved_to_the_device_passed_in_is_silent():
    assert _lines(ENC.format(move=".to(self.device)", arg="device"), "GL105", "GL116") == []


# P63-1 (PyTorch_YOLOv4 build_targets): the wrapper test held in a local before the reads.
YOLO = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.hyp = {{"giou": 1.0}}

    def forward(self, x):
        return self.fc(x)

{helper}

def build_targets(model):
    multi_gpu = {test}
    return model.module.hyp if multi_gpu else model.hyp


model = Net()
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
build_targets(model)
"""

IS_PARALLEL = """
def is_parallel(model):
    return type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)
"""


def test_wrapper_test_in_a_local_is_a_guard():
    assert _lines(YOLO.format(helper=IS_PARALLEL, test="is_parallel(model)"), "GL305") == []


def test_other_one_argument_call_is_no_guard():
    # control (passes on dd3c6bd too): a call of the model that tests nothing about the wrapper
    src = YOLO.format(helper="", test="callable(model) and False")
    assert _lines(src, "GL305") == [(19, "GL305")]


def test_wrapper_type_test_in_a_local_is_a_guard():
    src = YOLO.format(helper="", test="type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)")
    assert _lines(src, "GL305") == []


# P50-1 (DifFace's vendored basicsr SeqConv3x3): a layer's Parameter assigned to a module
# attribute is registered and moves with the module.
SEQCONV = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class SeqConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        conv0 = nn.Conv2d(cin, cout, kernel_size=1)
        self.k0 = conv0.{attr}
        self.b0 = conv0.bias

    def forward(self, x):
        y0 = F.conv2d(input=x, weight=self.k0, bias=self.b0)
        return y0 + self.b0.view(1, -1, 1, 1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = SeqConv(3, 4){move}
net(torch.randn(1, 3, 5, 5, device=device))
"""


def test_layer_parameter_kept_on_module_moves_with_it():
    assert _lines(SEQCONV.format(attr="weight", move=".to(device)"), "GL116", "GL105", "GL106", "GL112") == []


def test_plain_tensor_copy_of_a_layer_weight_does_not_move():
    # control: `.weight.detach().clone()` is a plain tensor attribute, left behind by `.to()`
    src = SEQCONV.format(attr="weight.detach().clone()", move=".to(device)")
    assert (15, "GL116") in _lines(src, "GL116")


# P50-10 (precision50): a forward that copies its input and moves the copy first thing puts it
# where it needs it, as `x = x.to(self.device)` does.
FIT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.fc = nn.Linear(4, 3)
        self.to(self.device)

    def forward(self, x):
        x = {first}
        return self.fc(x)

    def fit(self, loader):
        for xb, yb in loader:
            out = self.forward(xb)


Net().fit(DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8)), batch_size=4))
"""


def _module_call_mismatches(src):
    from gpulint.model import ScriptModel
    import libcst as cst
    m = ScriptModel(cst.parse_module(textwrap.dedent(src)))
    return [mm for mm in m.mismatches() if mm.op == "module-call"]


def test_forward_copying_its_input_to_the_device_takes_host_inputs():
    assert _module_call_mismatches(FIT.format(first="torch.tensor(x).to(self.device)")) == []
    assert _module_call_mismatches(FIT.format(first="torch.as_tensor(x).float().to(self.device)")) == []
    assert _module_call_mismatches(FIT.format(first="x.to(self.device)")) == []


def test_forward_copying_its_input_without_moving_it_is_still_a_mismatch():
    # control: a copy that stays on the host does not move the input
    assert _module_call_mismatches(FIT.format(first="torch.tensor(x).float()")) != []


# G63-2 (conversational-uptake PR#4): `instance[key].to(device)` right after `instance[key] = ...`
# gets the safe fix that writes the moved copy back; a subscript the code never assigned does not.
UPTAKE = """
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def prepare(instance, batch):
    for key in ["input_ids", "token_type_ids"]:
{first}
        {recv}.to(device)
    return instance


prepare({{"input_ids": [1, 2], "token_type_ids": [0, 0]}}, [torch.zeros(3)])
"""


def _fixes(src, code):
    res = _run(src, code)
    return [(d.line, d.fix is not None) for d in res.diagnostics]


def test_item_just_assigned_gets_the_fix():
    src = UPTAKE.format(first="        instance[key] = torch.tensor(instance[key]).unsqueeze(0)", recv="instance[key]")
    assert _fixes(src, "GL104") == [(10, True)]


def test_item_not_assigned_just_before_gets_no_fix():
    src = UPTAKE.format(first="        batch[0] = torch.zeros(3)\n        print(key)", recv="batch[0]")
    assert _fixes(src, "GL104") == [(11, False)]


def test_forward_casting_its_input_to_a_dtype_is_still_a_mismatch():
    # `.to(torch.float32)` is a cast, not a move (dd3c6bd took `x = x.to(torch.float32)` for a move too)
    assert _module_call_mismatches(FIT.format(first="x.to(torch.float32)")) != []
    assert _module_call_mismatches(FIT.format(first="torch.tensor(x).to(torch.float32)")) != []



# P51-4 (precision51, eval-historical-texts): `.eval()` of a beam-search hypothesis (its score,
# used as a number) is not eval mode; GL403's "safe" no_grad fix broke training through the search.
BEAM = """
from queue import PriorityQueue

import torch
import torch.nn as nn

from base import ModelBase
from node import Candidate


class Decoder(ModelBase):
    def __init__(self, dim=8, vocab=5):
        super().__init__()
        self.cell = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)
        self.drop = nn.Dropout(0.1)

    def forward(self, h, steps=3):
        return self._beam(h, steps)

    def _beam(self, h, steps):
        queue = PriorityQueue()
        first = Candidate(h, 0.0, 1)
        queue.put((-first.eval(), id(first), first))
        while True:
            _, _, cand = queue.get()
            if cand.length > steps:
                break
            hidden = self._step(cand.hidden)
            score = self.out(hidden).log_softmax(-1).max()
            nxt = Candidate(hidden, cand.log_prob + score, cand.length + 1)
            queue.put((-nxt.eval(), id(nxt), nxt))
        return cand.hidden

    def _step(self, hidden):
        return self.drop(self.cell(hidden, hidden))


dec = Decoder()
opt = torch.optim.SGD(dec.parameters(), lr=0.1)
loss = dec(torch.randn(1, 8)).square().sum()
loss.backward()
opt.step()
"""


def test_score_eval_of_a_hypothesis_is_not_eval_mode():
    assert _lines(BEAM, "GL403", "GL404") == []


def test_module_eval_statement_is_still_eval_mode():
    # control: the same loop after a real `self.eval()` statement in a plain evaluation function
    src = BEAM.replace("dec = Decoder()", "dec = Decoder()\ndec.eval()\nfor h in [torch.randn(1, 8)]:\n    print(dec(h))")
    assert (42, "GL403") in _lines(src, "GL403")


# P51-2 / P51-2b (precision51, brain-decoding shape): the holder's optimizer restored from outside,
# then a method of the holder moves the network; and a holder class with its own `to` method.
FITTER = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net = nn.Linear(4, 2)
        self.optim = torch.optim.Adam(self.net.parameters())

    def to(self, device):
        self.net.to(device)
        return self

    def fit(self, device, steps=2):
        self.net.to(device)
        for _ in range(steps):
            loss = self.net(torch.randn(8, 4, device=device)).square().mean()
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()


first = Trainer()
first.fit("cpu", steps=1)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = Trainer()
state = torch.load("last.pt", map_location="cpu")
{body}
"""


def test_holder_restored_then_a_method_moves_its_network():
    src = FITTER.format(body='trainer.optim.load_state_dict(state["optim"])\ntrainer.fit(device)')
    diags = _run(src, "GL111").diagnostics
    assert [(d.line, d.code) for d in diags] == [(29, "GL111")]
    assert "`trainer.fit()` moves it" in diags[0].message


def test_holder_with_its_own_to_method_moved_directly():
    src = FITTER.format(body='trainer.optim.load_state_dict(state["optim"])\ntrainer.net.to(device)')
    assert _lines(src, "GL111") == [(29, "GL111")]
    src = FITTER.format(body='trainer.optim.load_state_dict(state["optim"])\ntrainer.to(device)')
    assert _lines(src, "GL111") == [(29, "GL111")]


def test_holder_moved_by_a_method_before_the_restore_is_silent():
    src = FITTER.format(body='trainer.fit(device, steps=1)\ntrainer.optim.load_state_dict(state["optim"])\ntrainer.fit(device)')
    assert _lines(src, "GL111") == []
    # a holder made elsewhere may have been moved there already: not reported
    src = FITTER.format(body='def resume(t):\n    t.fit(device, steps=1)\n    return t\n\n\n'
                             'trainer = resume(Trainer())\ntrainer.optim.load_state_dict(state["optim"])\ntrainer.fit(device)')
    assert _lines(src, "GL111") == []


def test_optimizer_over_a_module_that_places_itself_is_silent():
    # the engine path of GL111 asks where the module object was made: a class of the file whose
    # `__init__` moves itself is on the device before the load (no finding)
    src = HOLDER.format(net="nn.Linear(4, 2)", body='trainer.optim.load_state_dict(state["optim"])\ntrainer.net.to(device)')
    src = src.replace("        self.net = nn.Linear(4, 2)\n", "        self.net = Net()\n").replace(
        "class Trainer:", "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n        self.to(device)\n\n\nclass Trainer:")
    assert _lines(src, "GL111") == []


# E63-3 (timoschick/pet#86, dashAI#679 F): a move through one instance's attribute
# (`w.model.to(device)`) does not move the model another instance of the class holds.
INSTANCES = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Wrapper:
    def __init__(self):
        self.model = nn.Linear(4, 2)

    def eval(self, xs, device):
        for x in xs:
            x = x.to(device)
            self.model(x)


{body}
"""


def test_second_instance_not_moved_is_reported():
    body = ("w = Wrapper()\nw.model.to(device)\nw.eval([torch.randn(2, 4)], device)\n"
            "w = Wrapper()\nw.eval([torch.randn(2, 4)], device)")
    assert _lines(INSTANCES.format(body=body), "GL112", "GL116") == [(15, "GL112")]


def test_instances_moved_through_a_loop_or_each_moved_are_silent():
    body = ("ws = [Wrapper(), Wrapper()]\nfor w in ws:\n    w.model.to(device)\n"
            "for w in ws:\n    w.eval([torch.randn(2, 4)], device)")
    assert _lines(INSTANCES.format(body=body), "GL112", "GL116") == []
    body = ("a = Wrapper()\na.model.to(device)\na.eval([torch.randn(2, 4)], device)\n"
            "b = Wrapper()\nb.model.to(device)\nb.eval([torch.randn(2, 4)], device)")
    assert _lines(INSTANCES.format(body=body), "GL112", "GL116") == []


# G64-1 (braindecode PR#381): GL101's fix moves the batch names that meet tensors, not an item
# only collected (`all_inds.extend(ind)`: a list of index tensors after collation).
LOADER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
items = [(torch.randn(4), 0, [i, i + 1]) for i in range(8)]
model = nn.Linear(4, 2).to(device)
inds, hits = [], 0
for X, y, ind in DataLoader(items, batch_size=2):
    out = model(X)
    inds.extend(ind)
    {use}
"""


def _fixed(src, code, unsafe=True):
    from gpulint.engine import Options, run_text
    from gpulint.registry import Registry
    rules = [Registry.load().by_code(code)()]
    return run_text("train.py", textwrap.dedent(src), rules, Options(fix=True, unsafe_fixes=unsafe, write=False)).text


def test_batch_item_only_collected_is_not_moved():
    fixed = _fixed(LOADER.format(use="pass"), "GL101")
    assert "X = X.to(device)" in fixed and "ind = ind.to(" not in fixed and "y = y.to(" not in fixed


def test_batch_item_meeting_the_output_is_moved():
    fixed = _fixed(LOADER.format(use="hits += (out.argmax(1) == y).sum().item()"), "GL101")
    assert "X = X.to(device)" in fixed and "y = y.to(device)" in fixed and "ind = ind.to(" not in fixed
