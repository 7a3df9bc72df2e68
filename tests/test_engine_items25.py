"""Engine items, eighteenth session.

PRECISION19 A2 (thunlp/OpenNRE `BagOne(BagRE)`, the base imported from another module of the
project): an explicit `self.forward(...)` in a method of a class whose base the file does not
define made the submodules of an instance "wherever the module is", so a host tensor handed to the
instance met a submodule "on the accelerator" (GL116) in a file that places nothing anywhere. An
instance built by the file is where it was built when the file never moves, places or launches
anything; once the file places something, the submodule is again wherever the module is.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
from base_model_demo import BagRE


class SentenceEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 8)

    def forward(self, token):
        return self.proj(token)


class BagOne(BagRE):
    def __init__(self, sentence_encoder):
        super().__init__()
        self.sentence_encoder = sentence_encoder

    def infer(self, bag):
        return self.forward(bag)

    def forward(self, token, train=True):
        return self.sentence_encoder(token)


model = BagOne(SentenceEncoder()){move}
out = model.infer(torch.randn(6, 16))
print("device", "cpu")
"""


def gl116(src: str) -> list[int]:
    rule = Registry.load().by_code("GL116")()
    return [d.line for d in run_text("bag_one.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_an_instance_of_a_class_with_an_imported_base_in_a_file_that_places_nothing():
    assert gl116(SRC.replace("{move}", "")) == []


def test_once_the_file_moves_the_instance_its_submodules_follow_it():
    # the same call after `model.to("cuda")`: the host input meets the moved submodule (at the
    # call of the submodule: since the nineteenth session the engine knows the instance moved, as
    # it does for a module, and reports the module call, as for `model(x)`)
    assert gl116(SRC.replace("{move}", '\nmodel.to("cuda")')) == [25]


BATCH_SRC = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from helpers import to_device_ext

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)


class DS(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"x": torch.randn(4), "y": torch.randn(1)}


def to_device(batch, device):
    for key, value in batch.items():
        batch[key] = value.to(device)


def show(batch):
    print(batch["x"].shape)


for batch in DataLoader(DS(), batch_size=4):
    {call}
    loss = ((model(batch["x"]) - batch["y"]) ** 2).mean()
"""


def gl101(src: str) -> list[int]:
    rule = Registry.load().by_code("GL101")()
    return [d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_a_dict_batch_moved_in_place_by_a_called_function():
    # fixtures26's E26-3 (mikkelfo/CORE-BEHRT#1's repaired trainer): `to_device(batch, device)`
    # stores each moved value into the caller's dict
    assert gl101(BATCH_SRC.replace("{call}", "to_device(batch, device)")) == []
    # imported code given the batch and a device, its result unused
    assert gl101(BATCH_SRC.replace("{call}", "to_device_ext(batch, device)")) == []


def test_a_batch_handed_to_code_that_cannot_move_it_is_still_on_the_host():
    assert gl101(BATCH_SRC.replace("{call}", "show(batch)")) == [30]
    assert gl101(BATCH_SRC.replace("{call}", "print(batch, device)")) == [30]
    # imported code without a device, or whose result is kept, moves nothing in place
    assert gl101(BATCH_SRC.replace("{call}", "to_device_ext(batch)")) == [30]
    assert gl101(BATCH_SRC.replace("{call}", "moved = to_device_ext(batch, device)")) == [30]


RECORD_SRC = """
from dataclasses import dataclass
from types import SimpleNamespace
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class Output:
    logits: torch.Tensor
    loss: torch.Tensor = None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return {ret}


model = Net().to(device)
x = torch.randn(8, 4)
y = torch.randint(0, 3, (8,))
out = model(x.to(device))
acc = (out.logits.argmax(-1) == {target}).float().mean()
"""


def gl116(src: str, name: str = "train.py") -> list[int]:  # noqa: F811 (also used above)
    rule = Registry.load().by_code("GL116")()
    return [d.line for d in run_text(name, textwrap.dedent(src), [rule], Options()).diagnostics]


def test_fields_of_a_dataclass_or_namespace_output_keep_their_device():
    # fixtures26's E26-2 (mikkelfo/CORE-BEHRT#1): `forward` returns the Hugging Face ModelOutput
    # shape, a dataclass of the file; `out.logits` is the head's output, on the model's device
    for ret in ("Output(logits=self.fc(x))", "Output(self.fc(x))", "SimpleNamespace(logits=self.fc(x))"):
        assert gl116(RECORD_SRC.replace("{ret}", ret).replace("{target}", "y")) == [29], ret
        assert gl116(RECORD_SRC.replace("{ret}", ret).replace("{target}", "y.to(device)")) == [], ret


def test_a_field_never_given_or_a_plain_class_is_unknown():
    src = RECORD_SRC.replace("{target}", "y").replace("out.logits.argmax(-1)", "out.loss")
    assert gl116(src.replace("{ret}", "Output(logits=self.fc(x))")) == []


def test_a_batch_handed_on_to_a_method_that_returns_a_new_dict_is_not_changed_in_place():
    # the CORE-BEHRT trainer before the repair: `batch = self.to_device(batch)` in forward_pass
    # rebinds a local; the caller's batch is still the loader's (the metric meets it on the host)
    src = BATCH_SRC.replace("{call}", "helper(batch)").replace(
        "def show(batch):", "def helper(batch):\n    batch = moved_copy(batch)\n    return batch\n\n\n"
        "def moved_copy(batch):\n    return {k: v.to(device) for k, v in batch.items()}\n\n\ndef show(batch):")
    assert gl101(src) != []
    # handed on to a function that stores into it: may be changed in place
    src2 = src.replace("batch = moved_copy(batch)", "to_device(batch, device)")
    assert gl101(src2) == []


SINGLETON = """
import torch
import torch.nn as nn

MODEL = None


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)

    def forward(self, input_ids, attention_mask):
        return self.emb(input_ids) * attention_mask.unsqueeze(-1)


def get_bert():
    global MODEL
    if MODEL is None:
        MODEL = TinyBert()
        if torch.cuda.is_available():
            MODEL = MODEL.cuda()
    return MODEL


def bert_embed(token_ids):
    model = get_bert()
    mask = {mask}
    if torch.cuda.is_available():
        token_ids = token_ids.cuda()
    return model(input_ids=token_ids, attention_mask=mask)


emb = bert_embed(torch.randint(1, 50, (4, 8)))
"""


def test_a_lazily_built_global_model_returned_by_its_getter():
    # fixtures26's E26-1 (lucidrains/RETRO-pytorch#9): `global MODEL`, built and moved on first
    # use; on the path that does not assign it the name holds the module's value (None, joined away)
    assert gl116(SINGLETON.replace("{mask}", "token_ids != 0")) == [31]
    assert gl116(SINGLETON.replace("{mask}", "(token_ids != 0).to(next(model.parameters()).device)")) == []


def _codes(src: str, code: str) -> list[int]:
    rule = Registry.load().by_code(code)()
    return [d.line for d in run_text("play.py", textwrap.dedent(src), [rule], Options()).diagnostics]


PARAM_DEVICE_TYPE = """
import torch
import torch.nn as nn


def build_paths(linear_hidden, linear_input):
    device = {device}
    hidden = torch.zeros(1, 1, linear_hidden.in_features)
    lh = linear_hidden(hidden.to(device))
    return lh


linear_hidden = nn.Linear(2, 2)
linear_input = nn.Linear(2, 2)
print(build_paths(linear_hidden, linear_input))
"""


def test_device_type_of_parameters_on_the_host():
    # PRECISION20 A2 (dvgodoy/PyTorchStepByStep plots/chapter8.py): `.device.type` of the layers'
    # own parameters names their device, the host; it was read as some accelerator (GL112)
    for device in ("list(linear_input.parameters())[0].device.type", "next(linear_input.parameters()).device.type",
                   "next(linear_input.parameters()).device"):
        assert _codes(PARAM_DEVICE_TYPE.replace("{device}", device), "GL112") == [], device
    assert _codes(PARAM_DEVICE_TYPE.replace("{device}", '"cuda"'), "GL112") == [9]


MOVED_IN_ARGUMENT = """
import torch

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = torch.nn.Sequential(torch.nn.Linear(64, 4))
model.to(device)


def test_model(model):
    state = torch.from_numpy(torch.rand(1, 64).numpy())
    return model(state)


def test_many(model):
    for _ in range(3):
        test_model(model)


{call}
test_many(model)
"""


def test_a_module_moved_inside_a_call_argument_is_moved():
    # PRECISION20 A3 (DeepReinforcementLearningInAction's Ch3 DQN notebook): `test_model(model.to("cpu"))`
    assert _codes(MOVED_IN_ARGUMENT.replace("{call}", 'test_model(model.to("cpu"))'), "GL116") == []
    # without the move, the host state meets the model on the accelerator
    assert _codes(MOVED_IN_ARGUMENT.replace("{call}", "test_model(model)"), "GL116") == [11]


PLAIN_MLP = """
import numpy as np
import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 150), torch.nn.ReLU(), {layer}torch.nn.Linear(150, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for i in range(10):
    loss = model(torch.randn(1, 64)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def test_model(model):
    for i in range(15):
        with torch.no_grad():
            qval = model(torch.from_numpy(np.random.rand(1, 64)).float())


test_model(model)
"""


def test_a_model_handed_by_name_to_an_evaluation_function_is_followed_to_its_layers():
    # PRECISION20 A1 (DeepReinforcementLearningInAction Chapter 3): a Linear/ReLU stack behaves the
    # same in both modes, so evaluating it in training mode is no bug (GL404)
    assert _codes(PLAIN_MLP.replace("{layer}", ""), "GL404") == []
    assert _codes(PLAIN_MLP.replace("{layer}", "torch.nn.Dropout(0.2), "), "GL404") != []
