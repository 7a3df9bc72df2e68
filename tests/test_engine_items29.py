"""Engine items, twenty-second session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# E35-4 (DrQA#144): a plain reader class whose `parallelize()` re-binds `self.network` to a
# DataParallel wrapper; the script calls it on its instance, then `save()`. The recorded pass of
# `save()` read the attribute as `__init__` set it. Two causes: every call of a method is its
# site only when the count of calls named `save` leaves out `torch.save(...)`, and the receiver
# of those calls (the instance as `parallelize()` left it) was dropped for a bare instance.
READER = """
import sys

import torch
import torch.nn as nn


class DocReader(object):
    def __init__(self):
        self.network = nn.Linear(4, 2)
        self.optimizer = torch.optim.SGD(self.network.parameters(), lr=0.1)

    def update(self, x):
        loss = self.network(x).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def save(self, filename):
        torch.save({{"state_dict": self.network.state_dict()}}, filename)

    def parallelize(self):
        self.network = torch.nn.DataParallel(self.network)


model = DocReader()
{before}
for _ in range(3):
    model.update(torch.randn(8, 4))
model.save("/tmp/reader.mdl")
{after}
"""


def test_a_wrapper_a_method_set_is_what_later_methods_of_that_instance_save():
    assert _lines(READER.format(before="model.parallelize()", after=""), "GL304") == [(20, "GL304")]


def test_a_wrapper_set_on_one_path_is_saved_on_that_path():
    src = READER.format(before="if len(sys.argv) > 1:\n    model.parallelize()", after="")
    assert _lines(src, "GL304") == [(20, "GL304")]


def test_a_wrapper_set_after_the_save_is_not_saved():
    assert _lines(READER.format(before="", after="model.parallelize()"), "GL304") == []


def test_a_copied_state_dict_in_the_saved_dict_is_followed():
    src = READER.format(before="model.parallelize()", after="").replace(
        '        torch.save({"state_dict": self.network.state_dict()}, filename)',
        '        sd = copy.copy(self.network.state_dict())\n'
        '        sd.pop("fixed", None)\n'
        '        torch.save({"state_dict": sd}, filename)').replace("import sys", "import copy\nimport sys")
    assert _lines(src, "GL304") == [(23, "GL304")]


# E36-1 (ST-SSL#3): `self.encoder.s_sim_mx.cpu()`, an attribute of a submodule whose value the
# engine does not know, handed to a helper that indexes it with a mask made on the device. Only
# a tensor (or a structure indexing its tensors) is put on the host by `.cpu()` and takes a mask:
# the index fails ("indices should be either on cpu or on the same device as the indexed tensor").
SIM = """
import torch
import torch.nn as nn


def aug(sim_mx, graph):
    edge_mask = (graph > 0).tril(diagonal=-1){mask_move}
    return torch.softmax(sim_mx[{index}], dim=0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(4, 4))
        self.s_sim_mx = None

    def forward(self, graph):
        self.s_sim_mx = self.emb.detach()
        return graph @ self.emb


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, graph):
        h = self.encoder(graph)
        sim = self.encoder.s_sim_mx.cpu()
        return aug(sim, graph).sum() * h.sum()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
graph = torch.ones(4, 4).to(device)
model(graph).backward()
"""


def test_a_value_put_on_the_host_indexed_with_a_device_mask():
    assert _lines(SIM.format(mask_move="", index="edge_mask"), "GL116") == [(8, "GL116")]


def test_a_value_put_on_the_host_indexed_with_a_host_mask_or_a_number():
    assert _lines(SIM.format(mask_move=".cpu()", index="edge_mask"), "GL116") == []
    assert _lines(SIM.format(mask_move="", index="0"), "GL116") == []


# E34-1 (MARL#2): `agents.policy.init_hidden(1)` re-binds the policy's hidden state (a host
# tensor) before `agents.choose_action(...)` slices it (`[:, agent_num, :]`, which keeps a
# dimension) and feeds it to the policy's network on the device. The class's other methods
# leave the attribute on the device, so only the instance as that call left it tells.
POLICY = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Policy:
    def __init__(self):
        self.net = nn.GRUCell(4, 4).to(device)
        self.hidden = None

    def init_hidden(self, n):
        self.hidden = torch.zeros((n, 2, 4)){move}

    def learn(self, x):
        self.hidden = self.hidden.to(device)
        self.hidden[:, 0, :] = self.net(x.to(device), self.hidden[:, 0, :])


class Agents:
    def __init__(self):
        self.policy = Policy()

    def choose_action(self, x, agent_num):
        h = self.policy.hidden[:, agent_num, :]
        x = x.to(device)
        return self.policy.net(x, h)


def episode(agents):
    agents.policy.init_hidden(1)
    for i in range(2):
        agents.choose_action(torch.randn(1, 4), i)


agents = Agents()
episode(agents)
"""


def test_a_method_of_an_instance_held_in_an_attribute_sets_what_the_holder_reads():
    assert _lines(POLICY.format(move=""), "GL116") == [(28, "GL116")]


def test_a_hidden_state_the_method_moves_is_not_reported():
    assert _lines(POLICY.format(move=".to(device)"), "GL116") == []


# E35-3 (TRELLIS#162's `convert_module_to_f16`): the parameters of a layer cast one by one
# through `.data` convert the layer to float16 like `l.half()`.
F16 = """
import torch
import torch.nn as nn


def convert_module_to_f16(l):
    if isinstance(l, nn.Linear):
        for p in l.parameters():
            p.data = p.data.{cast}()


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.blocks.apply(convert_module_to_f16)

    def forward(self, x):
        h = x.half()
        for block in self.blocks:
            h = block(h)
        return h.float()


device = "cuda" if torch.cuda.is_available() else "cpu"
model = Encoder().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for _ in range(3):
    loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_parameters_cast_one_by_one_convert_the_layer():
    assert _lines(F16.format(cast="half"), "GL206") == [(16, "GL206")]


def test_parameters_cast_to_float_do_not():
    assert _lines(F16.format(cast="float"), "GL206") == []


# E41-1 (torchgan#46's loss list): a method called on the loop variable over instances of two
# classes of the file runs each class's method with the call's arguments (and an `isinstance`
# test picks one class per branch), so a DataParallel wrapper passed along is followed in.
LOSSES = """
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoding_dims = 8
        self.fc = nn.Linear(8, 1)

    def forward(self, z):
        return self.fc(z)


class GeneratorLoss:
    def train_ops(self, generator):
        return generator(torch.randn(4, generator.encoding_dims)).mean()


class DiscriminatorLoss:
    def train_ops(self, generator, scale):
        return -generator(torch.randn(4, generator.encoding_dims)).mean() * scale


generator = Generator()
{wrap}
for loss in [GeneratorLoss(), DiscriminatorLoss()]:
    if isinstance(loss, GeneratorLoss):
        loss.train_ops(generator).backward()
    else:
        loss.train_ops(generator, 2.0).backward()
"""


def test_a_method_of_one_of_several_classes_runs_each():
    src = LOSSES.format(wrap="if torch.cuda.device_count() > 1:\n    generator = nn.DataParallel(generator)")
    assert _lines(src, "GL305") == [(18, "GL305"), (23, "GL305")]


def test_no_wrapper_no_report():
    assert _lines(LOSSES.format(wrap=""), "GL305") == []


# PRECISION30 A3 (Modern-Computer-Vision-with-PyTorch, Chapter02): a Dataset of the file given
# tensors already moved to the device keeps them there (`torch.tensor(x)` of a tensor copies it
# where it is), so the default collation's batches are on the device: no GL101. The same dataset
# given host tensors still is.
DS = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

X = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
Y = torch.tensor([[3.0], [7.0], [11.0], [15.0]])
device = "cuda" if torch.cuda.is_available() else "cpu"
{moves}


class MyDataset(Dataset):
    def __init__(self, x, y):
        self.x = torch.tensor(x).float()
        self.y = torch.tensor(y).float()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, ix):
        return self.x[ix], self.y[ix]


dl = DataLoader(MyDataset(X, Y), batch_size=2, shuffle=True)
mynet = nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(mynet.parameters(), lr=0.001)
for x, y in dl:
    opt.zero_grad()
    nn.functional.mse_loss(mynet(x), y).backward()
    opt.step()
"""


def test_a_dataset_of_device_tensors_gives_device_batches():
    assert _lines(DS.format(moves="X = X.to(device)\nY = Y.to(device)"), "GL101") == []


def test_a_dataset_of_host_tensors_gives_host_batches():
    assert _lines(DS.format(moves=""), "GL101") == [(29, "GL101")]


# PRECISION30 A5 (DL-Demos' style transfer, the PyTorch tutorial's shape): a Sequential started
# on the host and assembled with `add_module` from the children of a CNN moved to the device is
# not "never moved" (GL112); a loss module storing `target.detach()` of a tensor every
# construction passes from the device holds no host tensor (GL106); and the assembly loop whose
# outputs only reach constructors that detach them is no evaluation loop (GL403).
STYLE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
img = torch.rand(1, 3, 8, 8).to(device)


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target{detach}

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def build(img):
    model = nn.Sequential(nn.Identity())
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU()){move}.eval()
    losses = []
    for i, layer in enumerate(cnn.children()):
        model.add_module(f"l{{i}}", layer)
        target = model(img)
        loss = ContentLoss(target)
        model.add_module(f"loss{{i}}", loss)
        losses.append(loss)
    return model, losses


model, losses = build(img)
x = torch.randn(1, 3, 8, 8, device=device, requires_grad=True)
opt = torch.optim.Adam([x], lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(x)
    sum(ls.loss for ls in losses).backward()
    opt.step()
"""


def test_a_container_assembled_from_moved_layers_is_not_reported():
    assert _lines(STYLE.format(detach=".detach()", move=".to(device)"), "GL112", "GL106", "GL403") == []


def test_a_container_assembled_from_host_layers_is_reported():
    assert (38, "GL112") in _lines(STYLE.format(detach=".detach()", move=""), "GL112")


def test_an_output_kept_with_its_graph_is_an_evaluation():
    assert _lines(STYLE.format(detach="", move=".to(device)"), "GL403") == [(26, "GL403")]


# PRECISION30 A4 (Modern-Computer-Vision-with-PyTorch's RCNN): `torch` and `nn` come only from a
# star import; the class bases (`RCNN(nn.Module)`) were read before the star import's usual names
# were known, so the class was no module and `RCNN().to(device)` moved nothing: GL112 at its heads.
STAR = """
from torch_snippets import *

device = "cuda" if torch.cuda.is_available() else "cpu"
backbone = nn.Sequential(nn.Linear(8, 8))
backbone.eval().to(device)


class RCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = backbone
        self.cls_score = nn.Linear(8, 3)

    def forward(self, x):
        return self.cls_score(self.backbone(x))


rcnn = RCNN(){move}
out = rcnn(torch.randn(2, 8).to(device))
"""


def test_a_module_class_on_star_imported_nn_moves_its_parts():
    assert _lines(STAR.format(move=".to(device)"), "GL112", "GL116") == []


def test_a_module_class_on_star_imported_nn_never_moved_is_reported():
    assert _lines(STAR.format(move=""), "GL112", "GL116") != []


# PRECISION29 A1 (pytorch-pose's convert_checkpoint.py): a DataParallel wrapper that is only
# loaded into, counted and saved is never run: no GPU is driven (GL301 silent). Called once, it is.
CONVERT = """
import sys
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main(path, out):
    model = nn.Linear(4, 2)
    model = torch.nn.DataParallel(model).to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    checkpoint = torch.load(path, map_location=device)
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    print(sum(p.numel() for p in model.parameters()))
    {run}
    clean = {{k[7:]: v for k, v in checkpoint["state_dict"].items()}}
    torch.save(clean, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
"""


def test_a_wrapper_only_loaded_and_counted_drives_no_gpu():
    assert _lines(CONVERT.format(run="pass"), "GL301") == []


def test_a_wrapper_run_once_does():
    assert _lines(CONVERT.format(run="model(torch.randn(2, 4, device=device))"), "GL301") == [(11, "GL301")]


# PRECISION31 A3 (pytorch_neural_crf): a device picked by `x.get_device() >= 0` is x's device,
# which may be the host, not a configured accelerator.
def test_a_device_picked_by_a_tensors_get_device_is_that_tensors():
    src = """
    import torch
    scores = torch.randn(2, 5, 3)
    lens = torch.tensor([5, 3])
    dev_num = scores.get_device()
    curr_dev = torch.device(f"cuda:{dev_num}") if dev_num >= 0 else torch.device("cpu")
    mask = torch.ones_like(lens, dtype=torch.int64, device=curr_dev)
    idx = torch.where(lens - 1 > 0, lens - 1, mask)
    """
    assert _lines(src, "GL116") == []
    configured = src.replace("dev_num >= 0", "torch.cuda.is_available()")
    assert _lines(configured, "GL116") == [(8, "GL116")]


# PRECISION31 A4 (erfnet): a file criterion holding `nn.NLLLoss2d(weight)` (a loss by its torch
# base, not by its name) is GL108's business, not a never-moved model's (GL112).
CRIT = """
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class CrossEntropyLoss2d(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.loss = nn.{loss}(weight)

    def forward(self, outputs, targets):
        return self.loss(torch.log_softmax(outputs, dim=1), targets)


model = nn.Conv2d(3, 4, 1).to(device)
criterion = CrossEntropyLoss2d(torch.ones(4).to(device))
images = torch.randn(2, 3, 8, 8).to(device)
labels = torch.randint(0, 4, (2, 8, 8)).to(device)
loss = criterion(model(images), labels)
"""


def test_a_criterion_holding_nllloss2d_is_a_loss():
    assert _lines(CRIT.format(loss="NLLLoss2d"), "GL112") == []
    assert _lines(CRIT.format(loss="Conv2d"), "GL112") != []  # a layer with weights: still a model


# PRECISION31 A5 (STDC-Seg's DetailAggregateLoss): a module whose tensors are all made on the GPU
# in `__init__` with `.type(<cuda tensor type>)` needs no move of its own (GL112), nor are those
# tensors left on the CPU by a move (GL106).
DETAIL = """
import torch
import torch.nn.functional as F
from torch import nn

device_type = {tt}


class DetailAggregateLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float32).reshape(1, 1, 2, 2).type(device_type)
        self.fuse = nn.Parameter(torch.ones(1, 1, 1, 1).type(device_type))

    def forward(self, logits, masks):
        t = F.conv2d(masks.unsqueeze(1), self.kernel, padding=1)
        return F.binary_cross_entropy_with_logits(logits, (F.conv2d(t, self.fuse)[..., :4, :4] > 0).float())


masks = (torch.rand(2, 4, 4) > 0.5).float().cuda()
crit = DetailAggregateLoss()
loss = crit(torch.rand(2, 1, 4, 4).cuda(), masks)
"""


def test_a_module_made_on_the_gpu_in_init_is_not_never_moved():
    src = DETAIL.format(tt="torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor")
    assert _lines(src, "GL112", "GL106") == []


def test_a_module_made_on_the_host_in_init_is():
    assert _lines(DETAIL.format(tt="torch.FloatTensor"), "GL112") != []


# E42-6 (speech-emotion-recognition#12): batches made by the legacy availability choice of tensor
# type are on the accelerator, so a model never moved that receives them is GL112.
def test_batches_of_the_legacy_cuda_tensor_type_are_on_the_gpu():
    src = """
    import numpy as np
    import torch
    import torch.nn as nn

    input_tensor_type = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    model = nn.Linear(8, 4)
    data = np.random.randn(32, 8).astype(np.float32)
    for i in range(4):
        batch = input_tensor_type(data[i * 8:(i + 1) * 8])
        out = model(batch)
    """
    assert _lines(src, "GL112") == [(11, "GL112")]
    assert _lines(src.replace("model = nn.Linear(8, 4)", "model = nn.Linear(8, 4).cuda()"), "GL112") == []


# E42-7 (speech-emotion-recognition's utils.get_device()): `.to(get_device())` of a file
# function returning "cuda" under an availability test and "cpu" otherwise moves to the
# accelerator; a loss built without weights and moved there holds nothing that an input of
# unknown place could meet (no GL116 "`criterion` is on the accelerator").
GETDEV = """
import torch
import torch.nn as nn


def get_device():
    if torch.cuda.is_available():
        return "cuda"
    else:
        return "cpu"


def batches(labels):
    for i in range(4):
        yield torch.randn(8, 4).to(get_device()), labels[i]


model = nn.Linear(4, 2)
criterion = nn.CrossEntropyLoss().to(get_device())
for x, y in batches(LABELS):
    pred = model(x)
    loss = criterion(pred, y)
"""


def test_a_move_to_a_device_helper_is_a_move_to_the_accelerator():
    assert _lines(GETDEV, "GL112", "GL116") == [(21, "GL112")]


# E42-5 (DecisionTransformerInterpretability#5): in the branch `isinstance(s, torch.Tensor)`
# guards, `s` is a tensor, so its discarded `.to()` is GL104; a numpy branch is not.
def test_an_isinstance_tensor_test_makes_a_tensor():
    src = """
    import numpy as np
    import torch


    def as_float_tensor(s, device):
        if {test}:
            s.to(dtype=torch.float32, device=device)
        else:
            s = torch.from_numpy(s).to(dtype=torch.float32, device=device)
        return s


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    a = as_float_tensor(torch.randn(3), device)
    b = as_float_tensor(np.ones(3), device)
    """
    assert _lines(src.format(test="isinstance(s, torch.Tensor)"), "GL104") == [(8, "GL104")]
    assert _lines(src.format(test="torch.is_tensor(s)"), "GL104") == [(8, "GL104")]
    assert _lines(src.format(test="isinstance(s, np.ndarray)"), "GL104") == []


# E34-2 (geekTime-semantic-segmentation#1): a BatchNorm built inside forward fails on the moved
# input (GL112 at each); what it would have output is no "CPU tensor" for the next layer (no GL116
# downstream of the first failure).
def test_no_second_finding_downstream_of_a_failed_call():
    src = """
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.features = c
            self.conv1 = nn.Conv2d(c, c, 3, padding=1)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1)

        def forward(self, input):
            x = self.conv1(input)
            x = nn.BatchNorm2d(num_features=self.features)(x)
            x = nn.ReLU(inplace=True)(x)
            x = self.conv2(x)
            return x


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Block(4).to(device)
    out = model(torch.randn(2, 4, 8, 8).to(device))
    """
    assert _lines(src, "GL112", "GL116") == [(15, "GL112")]


# E42-4 (mmgeneration#476): a tensor handed to a method inside `dict(real_img=x)` keeps its
# device when the method reads `data["real_img"]`.
def test_a_dict_call_keeps_its_keywords_values():
    src = """
    import numpy as np
    import torch
    import torch.nn as nn


    def var_to_tensor(var, index):
        return torch.from_numpy(var)[index].float()


    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(8, 8)
            self.sqrt_alphas_bar = np.sqrt(np.cumprod(1.0 - np.linspace(1e-4, 0.05, 50)))

        def reconstruction_step(self, data, timesteps):
            x = data["real_img"]
            timesteps = timesteps.to(x.device)
            return x * var_to_tensor(self.sqrt_alphas_bar, timesteps)[:, None]


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Diffusion().to(device)
    x = torch.randn(4, 8).to(device)
    out = model.reconstruction_step({arg}, torch.randint(0, 50, (4,)))
    """
    assert _lines(src.format(arg="dict(real_img=x)"), "GL116") == [(8, "GL116")]
    assert _lines(src.format(arg="dict(real_img=x.cpu())"), "GL116") == []


# PRECISION32 A1 (Actor-Critic-Methods-Paper-To-Code's TD3): `torch.tensor(np.random.normal(
# scale=0.2))` holds one number (0-dim), which may meet device tensors; with a size it is an array.
def test_a_tensor_of_one_random_number_is_zero_dim():
    src = """
    import numpy as np
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    actor = nn.Linear(4, 2).to(device)
    state = torch.randn(8, 4, device=device)
    actions = actor(state) + torch.clamp(torch.tensor(np.random.normal({args})), -0.5, 0.5)
    """
    assert _lines(src.format(args="scale=0.2"), "GL116") == []
    assert _lines(src.format(args="scale=0.2, size=(8, 2)"), "GL116") == [(9, "GL116")]


# PRECISION32 A2 (segan_pytorch's SincConv): `cuda = x.is_cuda`, then `if cuda:` moving the
# filters, is the same device test as `if x.is_cuda:`.
def test_an_is_cuda_flag_in_a_local_is_a_device_test():
    src = """
    import torch
    import torch.nn as nn


    class Filt(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(4))

        def forward(self, x):
            cuda = {flag}
            filters = torch.zeros(4)
            if cuda:
                filters = filters.to("cuda")
            filters = filters + self.w
            return x * filters


    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Filt().to(device)
    print(model(torch.randn(2, 4).to(device)).sum())
    """
    assert _lines(src.format(flag="x.is_cuda"), "GL105") == []
    assert _lines(src.format(flag="x.sum() > 0"), "GL105") == [(13, "GL105")]


# F22-2 (TSD#6's ERM, minimal): a module class whose method moves its input and runs a container
# of its own freshly built layers, on an instance never moved: GL112 at the method's call.
ERM = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ERM(nn.Module):
    def __init__(self):
        super().__init__()
        self.featurizer = nn.Linear(4, 4)
        self.classifier = nn.Linear(4, 2)
        self.network = nn.Sequential(self.featurizer, self.classifier)

    def update(self, x):
        x = x.to(device)
        return self.network(x)


algorithm = ERM(){move}
print(algorithm.update(torch.randn(2, 4)))
"""


def test_a_never_moved_instance_runs_its_own_container_on_the_host():
    assert _lines(ERM.format(move=""), "GL112", "GL116") == [(21, "GL112")]
    assert _lines(ERM.format(move=".to(device)"), "GL112", "GL116") == []


# E32-3b (Deeprank-GNN#70): `self.task = "class" if target in [...] else "reg"` of the string the
# only construction passes decides the branch `if self.task == "class":` takes.
def test_a_membership_test_of_constants_is_decided():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    class Trainer:
        def __init__(self, target):
            self.task = "class" if target in ["bin_class", "class"] else "reg"
            self.model = nn.Linear(4, 2).to(device)

        def step(self, x, y):
            pred = self.model(x.to(device))
            if self.task == "class":
                y = y.long()
            else:
                y = y.to(device)
            return nn.functional.mse_loss(pred, y)


    Trainer({target}).step(torch.randn(3, 4), torch.randn(3, 2))
    """
    assert _lines(src.format(target='"class"'), "GL116") == [(19, "GL116")]
    assert _lines(src.format(target='"reg"'), "GL116") == []


# E42-1 (pytorch-AGNN#5): `Variable(torch.zeros(1), requires_grad=False)` is the tensor itself, a
# plain attribute left on the CPU by the module's move (GL106), like `torch.zeros(1)`.
def test_a_variable_attribute_is_a_plain_tensor():
    src = """
    import torch
    import torch.nn as nn
    from torch.autograd import Variable


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.beta = {value}

        def forward(self, x):
            return self.beta * x


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Layer().to(device)
    out = model(torch.randn(4, 2).to(device))
    """
    assert _lines(src.format(value="Variable(torch.zeros(1), requires_grad=False)"), "GL106") == [(10, "GL106")]
    assert _lines(src.format(value="nn.Parameter(torch.zeros(1), requires_grad=False)"), "GL106") == []


# PRECISION31 A6 (YOLO-Family's evaluator, one file): the model's forward returns what a
# `@torch.no_grad()` method gives when it is not trainable: it picks its grad mode itself (GL403
# silent); without the decorator the evaluation loop records a graph (reported).
YOLO = """
import torch
import torch.nn as nn


class YOLO(nn.Module):
    def __init__(self, trainable=False):
        super().__init__()
        self.trainable = trainable
        self.pred = nn.Conv2d(3, 2, 1)

    {decorator}
    def inference_single_image(self, x):
        return self.pred(x).sigmoid()

    def forward(self, x):
        if not self.trainable:
            return self.inference_single_image(x)
        return self.pred(x)


class Evaluator:
    def evaluate(self, net):
        net.eval()
        outs = []
        for i in range(4):
            outs.append(net(torch.randn(1, 3, 8, 8)))
        return outs


model = YOLO(trainable=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.randn(2, 3, 8, 8)).mean().backward()
    opt.step()
    model.trainable = False
    Evaluator().evaluate(model)
"""


def test_a_forward_returning_a_no_grad_method_picks_its_grad_mode():
    assert _lines(YOLO.format(decorator="@torch.no_grad()"), "GL403") == []
    assert _lines(YOLO.format(decorator=""), "GL403") != []


# pix2pix-style GANLoss: `tensor=torch.FloatTensor` as a constructor default, `self.Tensor =
# tensor`, targets built with `self.Tensor(input.size()).fill_(...)`: a host target beside a
# prediction on the device when the script leaves the default (GL116 at the loss); silent when it
# passes the availability choice of tensor type.
GAN = """
import torch
import torch.nn as nn


class GANLoss(nn.Module):
    def __init__(self, use_lsgan=True, tensor=torch.FloatTensor):
        super().__init__()
        self.real_label_var = None
        self.Tensor = tensor
        self.loss = nn.MSELoss() if use_lsgan else nn.BCELoss()

    def get_target_tensor(self, input, target_is_real):
        if self.real_label_var is None or self.real_label_var.numel() != input.numel():
            self.real_label_var = self.Tensor(input.size()).fill_(1.0)
        return self.real_label_var

    def __call__(self, input, target_is_real):
        target_tensor = self.get_target_tensor(input, target_is_real)
        return self.loss(input, target_tensor)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
D = nn.Linear(4, 1).to(device)
criterionGAN = GANLoss({args})
loss = criterionGAN(D(torch.randn(8, 4).to(device)), True)
"""


def test_a_legacy_tensor_type_default_makes_host_targets():
    assert _lines(GAN.format(args="use_lsgan=True"), "GL116") == [(20, "GL116")]
    chosen = "tensor=torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor"
    assert _lines(GAN.format(args=chosen), "GL116") == []


# lightning-bolts#30 (BasicGAN): labels made without a device in a LightningModule's steps meet
# the discriminator's outputs in the module's `adversarial_loss(y_hat, y)` helper. GL105 reads a
# LightningModule without `forward` too, reports each step's factory (the helper's one operation
# fails through two calls), and fixes them with `device=self.device` (the helper's parameter is
# not visible in the step).
PLGAN = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import pytorch_lightning as pl


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.generator = nn.Linear(8, 4)
        self.discriminator = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())

    def adversarial_loss(self, y_hat, y):
        return F.binary_cross_entropy(y_hat, y)

    def generator_step(self, x):
        valid = torch.ones(x.size(0), 1){dev}
        return self.adversarial_loss(self.discriminator(x), valid)

    def discriminator_step(self, x):
        fake = torch.zeros(x.size(0), 1){dev}
        return self.adversarial_loss(self.discriminator(x), fake)

    def training_step(self, batch, batch_idx, optimizer_idx):
        if optimizer_idx == 0:
            return self.generator_step(batch)
        return self.discriminator_step(batch)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""


def test_a_lightning_step_factory_meeting_a_helper_is_reported_each():
    src = PLGAN.format(dev="")
    assert _lines(src, "GL105") == [(18, "GL105"), (22, "GL105")]
    rules = [Registry.load().by_code("GL105")()]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    assert all("device=self.device" in d.message and d.fix is not None for d in diags)
    assert _lines(PLGAN.format(dev=".type_as(x)"), "GL105") == []


# Modern-CV's autoencoder notebooks (found by this session's corpus comparison): a dataset built
# with a transform that moves each sample (`transforms.Lambda(lambda x: x.to(device))`) gives
# samples of unknown place; with a transform that does not move, they are on the host.
MNISTDS = """
import torch
import torch.nn as nn
from torchvision import transforms
from torchvision.datasets import MNIST

device = "cuda" if torch.cuda.is_available() else "cpu"
tf = transforms.Compose([transforms.ToTensor(){move}])
val_ds = MNIST("/tmp/mnist", transform=tf, train=False, download=True)
model = nn.Conv2d(1, 4, 3).to(device)
im, _ = val_ds[0]
out = model(im[None])
"""


def test_a_dataset_transform_that_moves_its_samples():
    assert _lines(MNISTDS.format(move=", transforms.Lambda(lambda x: x.to(device))"), "GL116") == []
    assert _lines(MNISTDS.format(move=""), "GL116") == [(12, "GL116")]
