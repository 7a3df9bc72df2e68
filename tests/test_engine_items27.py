"""Engine items, twentieth session.

E30-3 (ChatTTS#724, tests/fixtures/GL116/chattts_dvae_sample_audio_wav_on_host.py): a method that
accepts a NumPy array or a tensor converts the array on the host (`if isinstance(wav, np.ndarray):
wav = torch.from_numpy(wav)`) and feeds it to the module, which is on the accelerator. The engine
did not know the argument was a NumPy array (a NumPy constructor's result was a host value of no
known kind), so it could not decide the `isinstance` test and joined the array with the host
tensor: a value of unknown kind, no mismatch. NumPy arrays are now marked (`Value.py ==
NDARRAY`: NumPy constructors, draws of `np.random` and of its generators with a size,
`.numpy()`, `.astype()` and the like), and `isinstance(x, np.ndarray)` / `isinstance(x,
torch.Tensor)` / `torch.is_tensor(x)` are decided for arrays and tensors.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("infer.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


E303 = """
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)

    def predict(self, x):
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x){move}
        return self(x)


net = Net().to(device)
print(net.predict({arg}))
"""


def test_an_array_converted_under_isinstance_is_on_the_host():
    src = E303.format(move="", arg="np.zeros((1, 8), dtype=np.float32)")
    assert _lines(src, "GL116") == [(20, "GL116")]


def test_a_generator_draw_cast_with_astype_is_an_array():
    src = E303.format(move="", arg="np.random.RandomState(0).randn(1, 8).astype(np.float32)")
    assert _lines(src, "GL116") == [(20, "GL116")]


def test_an_array_converted_and_moved_is_silent():
    src = E303.format(move=".to(device)", arg="np.zeros((1, 8), dtype=np.float32)")
    assert _lines(src, "GL116") == []


def test_a_device_tensor_skips_the_array_branch():
    src = E303.format(move="", arg="torch.zeros(1, 8, device=device)")
    assert _lines(src, "GL116") == []


def test_a_value_of_unknown_type_decides_nothing():
    src = E303.format(move="", arg="load_features()")
    assert _lines(src, "GL116") == []


def test_not_a_tensor_test_on_a_tensor():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Linear(8, 2).to(device)


    def predict(x):
        if not torch.is_tensor(x):
            x = torch.tensor(x)
        return net(x)


    predict(torch.zeros(1, 8, device=device))
    predict(torch.zeros(1, 8).numpy())
    """
    # the array call converts on the host (line 12); the tensor call, on the device, does not
    assert _lines(src, "GL116") == [(12, "GL116")]


# E29-2 (TripoSF#5, tests/fixtures/GL206/triposf_vae_fp16_encoder_blocks_autocast_without_scaler.py):
# a float16 conversion in a part's own constructor (`self.encoder = Enc(use_fp16=True)`, whose
# `__init__` converts its blocks) made the part float16 but not the module that owns it, so an
# optimizer over `model.parameters()` trained fp16 weights unreported. The part's conversion now
# reaches the owner, unless the owner freezes the part or the part is built with the flag off. A
# conversion check asked while the constructor ran (`self.convert_to_fp16()` reading `self.blocks`
# before it was stored) was cached as "no conversion"; it is now asked again.
E292 = """
import torch
import torch.nn as nn


class Enc(nn.Module):
    def __init__(self, use_fp16=False):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4)])
        if use_fp16:
            self.convert_to_fp16()

    def convert_to_fp16(self):
        self.blocks.half()

    def forward(self, x):
        return self.blocks[0](x.half()).float()


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Enc(use_fp16={flag}){freeze}
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(self.encoder(x))


model = VAE()
opt = torch.optim.AdamW(model.parameters(), eps=1e-4)
for step in range(3):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_part_converted_by_its_own_constructor_makes_the_owner_half():
    assert _lines(E292.format(flag="True", freeze=""), "GL206") == [(11, "GL206")]


def test_a_part_built_with_the_flag_off_is_float32():
    assert _lines(E292.format(flag="False", freeze=""), "GL206") == []


def test_a_frozen_half_part_is_not_trained():
    freeze = "\n        self.encoder.requires_grad_(False)"
    assert _lines(E292.format(flag="True", freeze=freeze), "GL206") == []


# E30-4: a file under `tests/fixtures_pending/` was judged as test code (GL106 and GL116 stay
# silent in test suites), so a pending fixture's verdict in place differed from the verdict it gets
# once moved to `tests/fixtures/` (DeepForest's GL116 was caught for sessions but looked missed).
def test_pending_fixtures_are_scripts_not_tests():
    from gpulint.analysis.paths import is_test_path

    assert not is_test_path("tests/fixtures_pending/GL116/predict.py")
    assert not is_test_path("tests/fixtures/GL116/predict.py")
    assert is_test_path("tests/unit/predict.py")
    assert is_test_path("src/tests/test_predict.py")


# J20-5 (rl-starter-files#41, tests/fixtures/GL116/rl_starter_agent_memories_made_on_host_in_recurrent_branch.py):
# an evaluation `Agent` (a plain class) keeps recurrent memories on `self`; `get_actions` replaces
# them with the model's output (on the device), and `analyze_feedbacks`, called after it on the
# same instance, multiplies them in place by a mask built on the host. Three gaps kept it silent:
# (1) what a method leaves in `self.x` did not reach the instance it ran on (the next method read
# the class's join of every setter: host or device); (2) `if self.acmodel.recurrent:` (a
# `@property` of the model's class) was not read through a part; (3) the model's constructor
# default `use_memory=True` was unknown while one of its two constructions (inside
# `Agent.__init__`) was not yet recorded, although no call in the file passes it.
J205 = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ACModel(nn.Module):
    def __init__(self, use_memory=True):
        super().__init__()
        self.use_memory = use_memory
        self.rnn = nn.LSTMCell(4, 4)

    @property
    def recurrent(self):
        return self.use_memory

    def forward(self, x, memory):
        h, c = self.rnn(x, (memory, memory))
        return h


class Agent:
    def __init__(self):
        self.acmodel = ACModel(){ctor}
        self.acmodel.to(device)
        if self.acmodel.recurrent:
            self.memories = torch.zeros(2, 4)

    def get_actions(self, obs):
        if self.acmodel.recurrent:
            self.memories = self.acmodel(obs, self.memories){early}
        return self.memories.argmax(1)

    def analyze_feedbacks(self, dones):
        if self.acmodel.recurrent:
            masks = 1 - torch.tensor(dones, dtype=torch.float).unsqueeze(1)
            self.memories *= masks


model = ACModel().to(device)
agent = Agent()
for step in range(3):
    {first}
    agent.analyze_feedbacks([step % 2 == 1] * 2)
"""


ACTIONS = "agent.get_actions(torch.randn(2, 4, device=device))"
EARLY = "\n            return self.memories.argmax(1)"


def test_a_method_leaves_its_attributes_on_the_instance_it_ran_on():
    # line 32: the constructor's host memories reach the model (caught before); line 38: after
    # `get_actions`, this agent's memories are the model's output, on the device
    src = J205.format(ctor="", early="", first=ACTIONS)
    assert _lines(src, "GL116") == [(32, "GL116"), (38, "GL116")]


def test_an_instance_whose_setter_never_ran_keeps_the_constructor_values():
    # only `analyze_feedbacks` runs: the memories are the constructor's, on the host like the mask
    src = J205.format(ctor="", early="", first="pass")
    assert _lines(src, "GL116") == []


def test_a_method_with_an_early_exit_leaves_nothing_known():
    src = J205.format(ctor="", early=EARLY, first=ACTIONS)
    assert _lines(src, "GL116") == [(32, "GL116")]


def test_a_default_some_call_passes_is_not_assumed():
    # another construction passes `use_memory=False`: `if self.acmodel.recurrent:` is undecided,
    # after `get_actions` the memories are "host or device" and the mask meets nothing known
    src = J205.format(ctor="\n        self.other = ACModel(use_memory=False)", early="", first=ACTIONS)
    assert _lines(src, "GL116") == [(33, "GL116")]


# E32-1 (windows-ai-docs#94, tests/fixtures/GL101/winml_tutorial_test_accuracy_images_not_moved.py):
# the tutorial builds `model` at module level, `train()` moves it in place (`model.to(device)`) and
# then calls `testAccuracy()`, a function that reads the global `model` and feeds it the test
# loader's batches unmoved. The engine read the module-level binding (on the host) inside the
# helper: the crash was missed, and the reporter's fix (moving the batches) drew GL112 and GL116
# false positives. A module-level name a function moves in place now reaches the functions it
# calls afterwards (their summaries and, when every call does, their recorded pass) and the code
# after the call.
E321 = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
model = nn.Linear(4, 2)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test_accuracy():
    for x, y in loader:{move}
        out = model(x)
        print((out.argmax(1) == y).sum().item())


def train():
    model.to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        model(x).sum().backward()
    test_accuracy()


train()
"""


def test_a_helper_called_after_the_global_model_moved_sees_it_moved():
    assert _lines(E321.format(move=""), "GL101", "GL112") == [(13, "GL101")]


def test_the_helper_moving_its_batches_is_silent():
    move = "\n        x, y = x.to(device), y.to(device)"
    assert _lines(E321.format(move=move), "GL101", "GL112", "GL116") == []


SETUP = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)


def setup():
    model.to(device)

{call}
print(model(torch.randn(2, 4)))
"""


def test_module_code_after_the_call_sees_the_global_moved():
    assert _lines(SETUP.format(call="setup()"), "GL116", "GL101") == [(13, "GL116")]


def test_a_function_that_is_never_called_moves_nothing():
    assert _lines(SETUP.format(call=""), "GL116", "GL101", "GL112") == []


# E32-4 (EduNLP#110, tests/fixtures_pending/GL116/ok_edunlp_lm_dataparallel_outputs_fed_to_head.py
# stands for it): `__init__` calls `self.set_device(device)`, which re-binds `self.rnn` to a
# DataParallel wrapper on the GPU; `__call__` read the `__init__` value (a host Linear), so its
# output was "on the CPU" and GL116 reported the head that takes it (a false positive: the wrapper
# scatters the host input). What a method called as `self.meth(...)` leaves in `self.x` is now the
# caller's view of it after the call.
E324 = """
import torch
import torch.nn as nn
from torch.nn import DataParallel


def set_device(net, ctx):
    if ctx == "cpu":
        return net.cpu()
    return DataParallel(net).cuda()


class Vectorizer(object):
    def __init__(self, device=None):
        self.rnn = nn.Linear(4, 8)
        if device is not None:
            self.{call}(device)

    def __call__(self, items):
        return self.rnn(torch.tensor(items))

    def set_device(self, device):
        self.rnn = set_device(self.rnn, device)

    def describe(self, device):
        print(device)


device = "cuda" if torch.cuda.is_available() else "cpu"
model = Vectorizer(device=device)
head = nn.Linear(8, 2).to(device)
out = model([[0.5, 1.0, 2.0, 3.0]])
print(head(out))
"""


def test_a_part_re_bound_by_a_method_the_constructor_calls_is_not_the_host_part():
    assert _lines(E324.format(call="set_device"), "GL116") == []


def test_a_method_that_re_binds_nothing_leaves_the_host_part():
    assert _lines(E324.format(call="describe"), "GL116") == [(33, "GL116")]


# PRECISION24 (karpathy's nanoGPT lecture, bigram.py / gpt.py; tests/fixtures/GL112/ok_ng_video_lecture_bigram_moved_through_alias.py):
# `m = model.to(device)` moves `model` in place (nn.Module.to returns the module itself), but the
# engine moved only the new name: training `model` afterwards drew GL112 "never moved".
ALIAS = """
import copy
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Embedding(16, 16)
m = {moved}
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for it in range(3):
    xb = torch.randint(0, 16, (4, 8), device=device)
    loss = model(xb).logsumexp(-1).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_module_moved_under_another_name_is_moved():
    assert _lines(ALIAS.format(moved="model.to(device)"), "GL112", "GL116") == []
    assert _lines(ALIAS.format(moved="model.eval().cuda()"), "GL112", "GL116") == []


def test_a_copy_moved_under_another_name_leaves_the_original():
    assert _lines(ALIAS.format(moved="copy.deepcopy(model).to(device)"), "GL112") == [(12, "GL112")]


# E32-6 (deeplite-torch-zoo#61, tests/fixtures/GL112/deeplite_mb1_ssd_builder_model_left_on_host.py):
# a module whose parts are constructor arguments (`SSD(base_net, head)`, `self.base_net = base_net`)
# was not known to hold parameters, so the call that feeds it the moved batch was no mismatch and
# GL112 fired inside `forward`, advising `self.base_net = self.base_net.to(device)`. A construction
# that passes a module with parameters for a parameter the constructor stores on `self` now makes
# an instance with parameters.
E326 = """
import torch
import torch.nn as nn


class SSD(nn.Module):
    def __init__(self, base_net, head):
        super().__init__()
        self.base_net = base_net
        self.head = head

    def forward(self, x):
        return self.head(self.base_net(x))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = SSD({parts})
out = net(torch.rand(2, 3, 8, 8).to(device))
"""


def test_parts_given_to_the_constructor_make_a_module_with_parameters():
    parts = "nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)"
    assert _lines(E326.format(parts=parts), "GL112") == [(18, "GL112")]


def test_parameterless_parts_do_not():
    assert _lines(E326.format(parts="nn.ReLU(), nn.Identity()"), "GL112") == []


# E32-3 (a) (Deeprank-GNN#70): the network class is handed to the trainer (`NeuralNet(GINet)`) and
# built in its constructor (`self.model = Net(4, 2).to(self.device)`); the class name was an
# unknown value, so the model and its outputs were unknown and `np.argmax(pred.detach())` on the
# device output was missed. A class of the file used as a value is now that class, and calling a
# name bound to it builds an instance.
E323 = """
import numpy as np
import torch
import torch.nn as nn


class GINet(nn.Module):
    def __init__(self, input_shape, output_shape):
        super().__init__()
        self.fc = nn.Linear(input_shape, output_shape)

    def forward(self, x):
        return self.fc(x)


class GCN(GINet):
    pass


class NeuralNet(object):
    def __init__(self, Net):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = Net(4, 2).to(self.device)

    def predict(self, x):
        x = x.to(self.device)
        pred = self.model(x)
        return np.argmax(pred.detach(){cpu}, axis=1)


print(NeuralNet(GINet).predict(torch.randn(3, 4)))
{other}
"""


def test_a_class_handed_to_a_constructor_is_built_there():
    assert _lines(E323.format(cpu="", other=""), "GL109") == [(28, "GL109")]


def test_the_output_copied_to_the_host_is_silent():
    assert _lines(E323.format(cpu=".cpu()", other=""), "GL109") == []


def test_two_classes_handed_in_still_build_modules():
    # either class: the model is a module on the device whichever it is
    src = E323.format(cpu="", other="print(NeuralNet(GCN).predict(torch.randn(3, 4)))")
    assert _lines(src, "GL109") == [(28, "GL109")]


# E32-2 (MIL-Lab#4 / smooth-topk#16): a loss made by a factory (`def hinge(labels): def fun(x, y):
# ...; return fun`) closes over the labels it was given; called later with device tensors it
# compares them with the host labels (`torch.ne(y[:, None], labels[None, :])`). The returned
# function was unknown, and `torch.ne`/`torch.eq` (whose Python-number overload returns a bool)
# gave no tensor. A nested function returned by its maker now carries the values of its free names
# as the maker left them, and `torch.ne`/`torch.eq` of a tensor are tensor operations.
E322 = """
import torch


def hinge(labels):
    def fun(x, y):
        return (x + torch.ne(y[:, None], labels[None, :]).float()).amax(1).mean()
    return fun


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
F = hinge(torch.arange(3{dev}))
x = torch.randn(4, 3, device=device)
y = torch.randint(0, 3, (4,), device=device)
print(F(x, y))
"""


def test_a_closure_made_by_a_factory_keeps_what_it_captured():
    assert _lines(E322.format(dev=""), "GL116") == [(7, "GL116")]


def test_a_closure_over_device_labels_is_silent():
    assert _lines(E322.format(dev=", device=device"), "GL116") == []


# E32-5 (AgML-CY-Bench#236, first step): functions kept in a list (a parameter's default stored on
# `self`) and called through the loop variable were unknown, and a loop over a list the engine
# knows is not empty ran "maybe zero times", joining its result with the input. A default that is a
# list of the file's functions is now that list, and such a loop runs its body at least once.
E325 = """
import torch
import torch.nn as nn


def aggregate(x):
    out = torch.full((x.shape[0], 4), float("inf"), dtype=x.dtype{dev})
    for d in range(4):
        out[:, d] = x[:, d * 2:(d + 1) * 2].mean(dim=1)
    return out


class Net(nn.Module):
    def __init__(self, transforms=[aggregate]):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self._transforms = transforms

    def forward(self, x):
        for transform in self._transforms:
            x = transform(x)
        return self.fc(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
print(net(torch.randn(3, 8).to(device)))
"""


def test_functions_in_a_default_list_run_in_the_loop():
    assert _lines(E325.format(dev=""), "GL116", "GL105") == [(22, "GL116")]


def test_the_transform_on_the_input_device_is_silent():
    assert _lines(E325.format(dev=", device=x.device"), "GL116", "GL105") == []


# PRECISION25 A1 (YuliaRubanova/latent_ode, generate_timeseries.py): `torch.Tensor().new_tensor(data,
# device=self.device)` is made on `device=`, not where the receiver is; the engine took the
# receiver's device (the host) and reported a GL116 false positive where the series meets noise
# moved to the device.
A1 = """
import numpy as np
import torch


def sample(device):
    traj = torch.Tensor().new_{meth}
    noise = torch.randn(4, 9, device=device)
    traj[:, 1:] += noise
    return traj


print(sample(torch.device("cuda" if torch.cuda.is_available() else "cpu")))
"""


def test_new_tensor_with_a_device_is_made_there():
    assert _lines(A1.format(meth="tensor(np.random.randn(4, 10), device=device)"), "GL116") == []
    assert _lines(A1.format(meth="zeros((4, 10), device=device)"), "GL116") == []


# TopKDecoder (pending GL105/topk_decoder_beam_state_without_device.py, line 66's shape): a torch
# layer with parameters registered in a part of the file's module class (`self.rnn.emb`) was
# unknown, so a host tensor fed to it inside `forward` met nothing.
PART = """
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)


class Top(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = Dec()

    def forward(self, h):
        inp = torch.zeros(2, 1, dtype=torch.long{dev})
        return self.rnn.emb(inp)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Top().to(device)
model(torch.zeros(2, device=device))
"""


def test_a_layer_of_a_part_is_where_the_module_is():
    assert _lines(PART.format(dev=""), "GL105") == [(18, "GL105")]
    assert _lines(PART.format(dev=", device=h.device"), "GL105") == []


# E34-3 (dynamic-classification#1, pending GL112/protonet_train_model_never_moved_batches_moved.py):
# `batch = tuple(t.to(device) for t in batch)` then `model(*batch)` on a model never moved: the
# star-argument's elements were not the call's inputs.
E343 = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Proto(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)

    def forward(self, support, query):
        return self.enc(support).mean(0) - self.enc(query)


model = Proto(){move}
batch = (torch.randn(3, 4), torch.randn(2, 4))
batch = tuple(t.to(device) for t in batch)
out = model(*batch)
"""


def test_star_arguments_are_the_module_inputs():
    assert _lines(E343.format(move=""), "GL112") == [(20, "GL112")]
    assert _lines(E343.format(move=".to(device)"), "GL112", "GL116") == []


# E34-2 (geekTime-semantic-segmentation#1, pending GL112/unet_double_conv_batchnorm_built_in_forward.py):
# GL112 reports each layer built inside `forward` once per construction (two `nn.BatchNorm2d(4)(x)`
# are two layers), not once per spelling. (Letting the failing call's output follow its device input
# closed the GL116 cascade but drew a GL116 false positive on corpus21's pointMLP self-test: reverted.)
E342 = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        x = self.conv1(x)
        y = nn.BatchNorm2d(4)(x)
        z = nn.BatchNorm2d(4)(x)
        return y + z


model = Block().to(device)
out = model(torch.randn(2, 3, 8, 8).to(device))
"""


def test_each_layer_built_in_forward_is_reported():
    assert _lines(E342, "GL112") == [(15, "GL112"), (16, "GL112")]


# E34-4 (esrnn_torch#14): a module put on the CPU on purpose (`nn.GRU(...).to("cpu")`) called with a
# hidden state made on the GPU when one exists: GL112 said the module was "never moved" and advised
# `rnn = rnn.cuda()` (which moves it away from its CPU input). The input is the wrong one: GL116.
E344 = """
import torch
import torch.nn as nn

rnn = nn.GRU(4, 4){place}
x = torch.randn(3, 2, 4)
h = torch.zeros(1, 2, 4)
if torch.cuda.is_available():
    h = h.cuda()
out, h = rnn(x, h)
"""


def test_a_module_put_on_the_cpu_on_purpose_is_not_never_moved():
    assert _lines(E344.format(place='.to("cpu")'), "GL112", "GL116") == [(10, "GL116")]
    assert _lines(E344.format(place=""), "GL112", "GL116") == [(10, "GL112")]


# E34-1 (MARL#2): a tensor attribute of a plain class that every method setting it sets to a host
# tensor (`__init__` and `init_hidden()`) was unknown when read through another object
# (`self.policy.hidden`), because more than `__init__` sets it. Every setter agrees: host.
E341 = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Policy:
    def __init__(self):
        self.net = nn.GRUCell(4, 4).to(device)
        self.hidden = torch.zeros(2, 4)

    def init_hidden(self):
        self.hidden = torch.zeros(2, 4){move}


class Agents:
    def __init__(self):
        self.policy = Policy()

    def choose_action(self, x):
        h = self.policy.hidden
        x = x.to(device)
        return self.policy.net(x, h)


agents = Agents()
print(agents.choose_action(torch.randn(2, 4)))
"""


def test_every_setter_on_the_host_reads_as_host_through_another_object():
    assert _lines(E341.format(move=""), "GL116") == [(24, "GL116")]


def test_a_setter_that_moves_it_leaves_it_unknown():
    assert _lines(E341.format(move=".to(device)"), "GL116") == []
