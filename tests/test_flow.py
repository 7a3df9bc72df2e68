"""The flow engine (gpulint/flow.py): abstract values per expression, through the ScriptModel."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.model import Kind, ScriptModel


def model_of(src: str) -> ScriptModel:
    src = textwrap.dedent(src)
    return ScriptModel(cst.parse_module(src), src)


def node(m: ScriptModel, code: str, nth: int = 0):
    """The nth expression node (in source order) whose code is exactly `code`."""
    found = [n for n in m.nodes if isinstance(n, cst.BaseExpression) and m.module.code_for_node(n) == code]
    return found[nth]


def where(m, code, nth=0):
    d = m.value_of(node(m, code, nth)).dev
    return None if d is None else d.where


HEAD = """
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


def test_factories_methods_and_moves():
    m = model_of(HEAD + """
x = torch.zeros(4, 3)
y = x.unsqueeze(0).float()
z = y.to(device)
w = z.cpu()
n = z.item()
e = torch.ones(2, device=device)
""")
    assert m.value_of(node(m, "x", 0)).kind == "tensor"
    assert where(m, "y") == "host"
    assert where(m, "z") == "acc"
    assert where(m, "w") == "host"
    assert m.value_of(node(m, "n")).kind == "hostval"
    assert where(m, "e") == "acc"
    # the device expression is kept as written, for fixes
    d = m.device_of(node(m, "z"))
    assert isinstance(d.expr, cst.Name) and d.expr.value == "device"


def test_torch_functions_follow_their_tensor_operands():
    m = model_of(HEAD + """
a = torch.randn(3).to(device)
b = torch.cat([a, a])
c = torch.softmax(a, dim=0)
h = torch.randn(3)
s = torch.where(h > 0, h, h)
""")
    assert where(m, "b") == "acc"
    assert where(m, "c") == "acc"
    assert where(m, "s") == "host"


def test_branch_join_is_either_and_unknown_to_rules():
    m = model_of(HEAD + """
import random
t = torch.zeros(3)
if random.random() > 0.5:
    t = t.to(device)
u = t
""")
    assert where(m, "u") == "either"
    assert m.device_of(node(m, "u")) is None  # rules see "unknown"


def test_loop_rebinding_reaches_a_fixed_point():
    m = model_of(HEAD + """
x = torch.zeros(3)
for i in range(3):
    y = x
    x = x.to(device)
z = x
""")
    assert where(m, "y", 0) == "either"  # host on the first iteration, device after
    assert where(m, "z") == "either"  # zero iterations keep it on the host


def test_summaries_of_the_files_functions():
    m = model_of(HEAD + """
def make(n):
    return torch.arange(n)

def place(t, dev):
    return t.to(dev)

a = make(5)
b = place(a, device)
""")
    assert where(m, "a") == "host"
    assert where(m, "b") == "acc"


def test_self_attributes_across_methods_and_parameters_from_call_sites():
    m = model_of(HEAD + """
class Trainer:
    def __init__(self, model):
        self.model = model
        self.device = device
        self.model.to(self.device)
        self._cpu_device = torch.device("cpu")

    def step(self, x):
        out = self.model(x.to(self.device))
        back = out.to(self._cpu_device)
        return back

t = Trainer(nn.Linear(3, 3))
t.step(torch.zeros(2, 3))
""")
    assert m.value_of(node(m, "self.model", 2)).kind == "module"
    assert where(m, "out") == "acc"
    assert where(m, "back") == "host"


def test_kinds_from_the_knowledge_base_mro():
    m = model_of("""
import torch
from torch.optim.swa_utils import AveragedModel
net = torch.nn.Linear(2, 2)
ema = AveragedModel(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
""")
    assert m.kind_of(node(m, "ema", 0)) is Kind.MODULE
    assert m.kind_of(node(m, "opt", 0)) is Kind.OPTIMIZER


def test_tensor_through_unknown_callables_by_tensor_only_methods():
    m = model_of(HEAD + """
img = transform(raw).unsqueeze(0)
arr = other(raw).reshape(3)
""")
    assert m.value_of(node(m, "img")).kind == "tensor"
    assert m.value_of(node(m, "arr")).kind is None  # numpy arrays have reshape too


def test_no_grad_regions_including_exit_stack():
    m = model_of(HEAD + """
import contextlib
net = nn.Linear(2, 2)
with torch.no_grad():
    a = net(torch.zeros(1, 2))
with contextlib.ExitStack() as stack:
    stack.enter_context(torch.no_grad())
    b = net(torch.zeros(1, 2))
c = net(torch.zeros(1, 2))
""")
    assert m.value_of(node(m, "a")).nograd
    assert m.value_of(node(m, "b")).nograd
    assert not m.value_of(node(m, "c")).nograd


def test_half_module_across_functions():
    m = model_of("""
import torch
def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

def main():
    model = torch.nn.Linear(2, 2)
    model.half()
    train(model)

main()
""")
    v = m.value_of(node(m, "model", 1))  # the parameter read in train()
    assert v.kind == "module" and v.half and v.half_at is not None


def test_mismatch_query_index_and_binary_and_scalar_exemption():
    m = model_of(HEAD + """
table = torch.linspace(0, 1, 10)
idx = torch.randint(0, 10, (4,), device=device)
a = table[idx]
b = idx.float() * torch.tensor(2.0)
c = idx.float() + torch.ones(4)
ok = idx[torch.arange(2)]
""")
    ops = {(mm.op, m.module.code_for_node(mm.node)) for mm in m.mismatches()}
    assert ("index", "table[idx]") in ops
    assert ("binary", "idx.float() + torch.ones(4)") in ops
    assert not any("torch.tensor(2.0)" in code for _, code in ops)  # 0-dim CPU tensors may meet device tensors
    assert not any(code == "idx[torch.arange(2)]" for _, code in ops)  # CPU indices into a device tensor


def test_bounded_on_deep_recursion_and_mutual_calls():
    m = model_of("""
import torch
def f(x, n):
    return g(x, n - 1) if n else x
def g(x, n):
    return f(x, n)
y = f(torch.zeros(2), 50)
""")
    assert m.value_of(node(m, "y")) is not None  # terminates; the value may be unknown


def test_module_api_kept():
    m = model_of(HEAD + """
model = nn.Linear(2, 2)
model.to(device)
""")
    assert m.kind_of(node(m, "model", 1)) is Kind.MODULE
    assert m.moves_of(node(m, "model", 1))


def test_method_receiver_comes_from_its_call_sites():
    m = model_of(HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def probe(self, x):
        return self(x)

    def fit(self):
        self.to(device)
        self.probe(torch.randn(2, 3))

Net().fit()
""")
    # the only call of `probe` runs after `self.to(device)`: self is on the accelerator there
    assert where(m, "self", 3) == "acc"
    assert any(mm.op == "module-call" for mm in m.mismatches())


def test_receiver_moved_on_some_calls_only_is_unknown():
    m = model_of(HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def probe(self, x):
        return self(x)

    def fit(self):
        self.probe(torch.randn(2, 3))
        self.to(device)
        self.probe(torch.randn(2, 3).to(device))

Net().fit()
""")
    assert not m.mismatches()


def test_list_append_none_init_and_named_results():
    m = model_of(HEAD + """
feats = []
for i in range(3):
    feats.append(torch.randn(2).to(device))
allf = torch.cat(feats)
bank = None
if allf.sum() > 0:
    bank = allf.cpu()
best = allf.max(dim=0).values
kept = bank
""")
    assert where(m, "allf", 0) == "acc"
    # None on the other path: where it lives when it is a tensor at all
    assert where(m, "kept") == "host"
    assert where(m, "best") == "acc"


def test_generator_functions_and_dataset_samples():
    m = model_of(HEAD + """
from torch.utils.data import TensorDataset
def batches():
    for _ in range(3):
        yield torch.randn(4, 3), torch.randn(4)
for x, y in batches():
    pass
ds = TensorDataset(torch.randn(8, 3), torch.randn(8))
sample = ds[0][0]
""")
    assert m.value_of(node(m, "x", 0)).kind == "tensor" and where(m, "x", 0) == "host"
    assert where(m, "sample") == "host"


def test_legacy_typed_constructors():
    m = model_of(HEAD + """
a = torch.FloatTensor([1.0, 2.0])
b = torch.cuda.LongTensor([1])
""")
    assert where(m, "a") == "host" and m.value_of(node(m, "a")).nonscalar
    assert where(m, "b") == "acc"


def test_instance_called_through_dunder_call_takes_call_site_arguments():
    m = model_of(HEAD + """
class Loss:
    def __call__(self, preds, target):
        table = torch.arange(4)
        return table[target]

loss_fn = Loss()
out = loss_fn(torch.randn(2).to(device), torch.tensor([0, 1]).to(device))
""")
    assert where(m, "target", 1) == "acc"
    assert any(mm.op == "index" for mm in m.mismatches())


# functions used as values, collate functions, tokenizers, Dataset classes ----------------------

def test_function_used_as_a_value_gets_its_call_sites_arguments():
    m = model_of(HEAD + """
def metric(pred, target):
    return pred.numpy()

class Runner:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x.to(device), x)

loss_fn = metric
Runner(metric).run(torch.randn(3))
loss_fn(torch.randn(2).to(device), None)
""")
    assert where(m, "pred", 1) == "acc"  # the parameter, from both calls (via self.fn and loss_fn)
    # each call through a value is a call site: one of them passing a host tensor makes the
    # parameter's placement a join, no longer "acc"
    m2 = model_of(HEAD + """
def metric(pred, target):
    return pred.numpy()

class Runner:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x.to(device), x)

loss_fn = metric
Runner(metric).run(torch.randn(3))
loss_fn(torch.randn(2), None)
""")
    assert where(m2, "pred", 1) != "acc"
    m3 = model_of(HEAD + """
def metric(pred, target):
    return pred.numpy()

class Runner:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x, x)

loss_fn = metric
Runner(metric).run(torch.randn(3))
loss_fn(torch.randn(2).to(device), None)
""")
    assert where(m3, "pred", 1) != "acc"


def test_function_stored_but_never_called_adds_no_call_site():
    m = model_of(HEAD + """
def metric(pred):
    return pred

metric(torch.randn(2).to(device))
hooks = [metric]
""")
    # a name used as a value that is never called here does not add call sites: the one direct
    # call still gives the parameter its value
    assert where(m, "pred", 1) == "acc"


def test_collate_fn_is_called_with_the_dataset_samples():
    m = model_of(HEAD + """
from torch.utils.data import DataLoader, TensorDataset

def collate(batch):
    y = torch.stack([b[1] for b in batch])
    return y

ds = TensorDataset(torch.randn(8, 2), torch.randn(8))
loader = DataLoader(ds, batch_size=4, collate_fn=collate)
""")
    assert where(m, "y", 0) == "host"
    # the loader's batches are what the collate function returns
    elem = m.value_of(node(m, "loader", 0)).elem
    assert elem.kind == "tensor" and elem.dev.is_host


def test_collate_fn_that_moves_its_batch():
    m = model_of(HEAD + """
from torch.utils.data import DataLoader, TensorDataset

def to_device(batch):
    return torch.stack([b[0] for b in batch]).to(device)

loader = DataLoader(TensorDataset(torch.randn(8, 2)), collate_fn=to_device)
unknown = DataLoader(TensorDataset(torch.randn(8, 2)), collate_fn=lambda b: b)
""")
    assert m.value_of(node(m, "loader", 0)).elem.dev.is_acc
    assert m.value_of(node(m, "unknown", 0)).elem.dev is None


def test_tokenizer_tensors_and_pretrained_models():
    m = model_of(HEAD + """
from transformers import AutoModel, AutoTokenizer
tok = AutoTokenizer.from_pretrained("x")
model = AutoModel.from_pretrained("x")
placed = AutoModel.from_pretrained("x", device_map="auto")
enc = tok(["a"], return_tensors="pt")
ids = tok.encode("a", return_tensors="pt")
plain = tok(["a"])
moved = tok(["a"], return_tensors="pt").to(device)
""")
    assert m.value_of(node(m, "model", 0)).kind == "module"
    assert where(m, "model", 0) == "host"
    assert where(m, "placed", 0) is None
    assert m.value_of(node(m, "enc", 0)).kind == "batch" and where(m, "enc", 0) == "host"
    assert m.value_of(node(m, "ids", 0)).kind == "tensor" and where(m, "ids", 0) == "host"
    assert m.value_of(node(m, "plain", 0)).kind is None  # lists of ids, not tensors
    assert where(m, "moved", 0) == "acc"


def test_double_star_batch_meets_the_model_and_in_place_batch_move():
    m = model_of(HEAD + """
from transformers import AutoModel, AutoTokenizer
tok = AutoTokenizer.from_pretrained("x")
model = AutoModel.from_pretrained("x").to(device)
a = tok(["a"], return_tensors="pt")
model(**a)
b = tok(["b"], return_tensors="pt")
b.to(device)
model(**b)
""")
    bad = [mm for mm in m.mismatches()]
    assert len(bad) == 1 and m.module.code_for_node(bad[0].host) == "a"


def test_dataset_class_of_the_file_gives_host_batches_unless_it_moves_them():
    m = model_of(HEAD + """
from torch.utils.data import DataLoader, Dataset

class Pairs(Dataset):
    def __init__(self):
        self.x = torch.randn(8, 2)
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return {"features": self.x[i]}

class OnDevice(Dataset):
    def __init__(self, data):
        self.data = data
    def __getitem__(self, i):
        return self.data[i].to(device)

for batch in DataLoader(Pairs()):
    first = batch["features"]
for batch2 in DataLoader(OnDevice(load())):
    second = batch2
""")
    assert where(m, "first", 0) == "host"
    assert where(m, "second", 0) is None


def test_module_function_call_sites_are_not_method_calls_of_the_same_name():
    # `model.train()` inside `train()` is not a call of the module-level train(): its one call
    # site still gives the parameters their values
    m = model_of(HEAD + """
def train(model, x):
    model.train()
    return model(x)

net = nn.Linear(2, 2).to(device)
train(net, torch.randn(3, 2))
""")
    assert [mm.op for mm in m.mismatches()] == ["module-call"]


def test_lengths_for_packing_may_stay_on_the_host():
    m = model_of(HEAD + """
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.rnn = nn.LSTM(4, 4, batch_first=True)

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(ids), lengths, batch_first=True)
        return self.rnn(packed)

class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, ids, lengths):
        return self.emb(ids) * lengths[:, None, None]

a = Tagger().to(device)
b = Scaled().to(device)
ids = torch.randint(0, 10, (2, 5)).to(device)
lengths = torch.tensor([5, 3])
a(ids, lengths)
b(ids, lengths)
""")
    bad = m.mismatches()
    assert len(bad) == 1 and m.module.code_for_node(bad[0].node.func) == "b"


def test_dicts_of_tensors_read_back_by_key_and_items():
    m = model_of(HEAD + """
train = {"X": torch.randn(10, 3), "w": torch.rand(10)}
part = {k: v[0:5] for k, v in train.items()}
w = part["w"]
for key in train:
    key_name = key
""")
    assert where(m, "w", 0) == "host"
    assert m.value_of(node(m, "key_name", 0)).kind is None  # iterating a dict gives its keys


def test_parameterless_module_of_the_file_computes_where_its_inputs_are():
    m = model_of(HEAD + """
class Charbonnier(nn.Module):
    def __init__(self, eps=1e-3):
        super().__init__()
        self.eps = eps

    def forward(self, x, y):
        return torch.mean(torch.sqrt((x - y) ** 2 + self.eps))

crit = Charbonnier()
outs = [torch.randn(2).to(device), torch.randn(2).to(device)]
t = torch.randn(2).to(device)
loss = crit(outs[0], t)
each = [crit(outs[j], t) for j in range(2)]
""")
    assert where(m, "loss", 0) == "acc"
    assert m.mismatches() == []


def test_reductions_over_a_later_dim_keep_a_dimension():
    m = model_of(HEAD + """
p = torch.randn(4, 3)
a = p.argmax(dim=1)
b = p.sum(1)
c = p.sum()
d = p.argmax(0)
e = torch.argmax(p, 1)
f = p.mean(dim=0, keepdim=True)
g = p.norm(2)
""")
    ns = {k: m.value_of(node(m, k, 0)).nonscalar for k in "abcdefg"}
    # `p.argmax(0)` of a (4, 3) tensor keeps one dimension too (E40-3: over one dimension of two)
    assert ns == {"a": True, "b": True, "c": False, "d": True, "e": True, "f": True, "g": False}


def test_images_read_and_transformed_stay_on_the_host():
    m = model_of(HEAD + """
import numpy as np
import torchvision
from torchvision import transforms
from PIL import Image
model = torchvision.models.resnet18().to(device)
pre = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])
img = Image.open("a.jpg").convert("RGB")
x = pre(img).unsqueeze(0)
y = pre(img).unsqueeze(0).to(device)
t = pre(torch.rand(3, 8, 8).to(device))
u = pre(load_somehow())
model(x)
model(y)
""")
    assert where(m, "x", 0) == "host" and where(m, "y", 0) == "acc" and where(m, "t", 0) == "acc"
    assert where(m, "u", 0) is None
    assert [m.module.code_for_node(mm.host) for mm in m.mismatches()] == ["x"]


def test_containers_built_from_a_modules_children_live_where_it_is():
    m = model_of(HEAD + """
import torchvision
moved = torchvision.models.resnet18().to(device)
fe = nn.Sequential(*list(moved.children())[:-1])
host = nn.Sequential(*list(torchvision.models.resnet18().children())[:-1])
blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
""")
    assert where(m, "fe", 0) == "acc"
    assert where(m, "host", 0) == "host"
    assert where(m, "blocks", 0) == "host"


def test_inherited_method_reads_the_subclass_attributes_and_batch_elements():
    m = model_of(HEAD + """
class Base:
    def __init__(self):
        self.schedulers = []

    def update(self):
        for scheduler in self.schedulers:
            scheduler.step()

class Model(Base):
    def __init__(self, opt):
        super().__init__()
        self.schedulers.append(torch.optim.lr_scheduler.StepLR(opt, 1))

model = Model(torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1))
model.update()

from torch.utils.data import DataLoader, TensorDataset
for data in DataLoader(TensorDataset(torch.randn(4, 2), torch.randn(4, 2))):
    moved = [t.to(device) for t in data]
    x, y = moved
""")
    assert m.value_of(node(m, "scheduler", 0)).kind == "scheduler"
    assert where(m, "x", 0) == "acc"


def _guard_of(src: str, code: str, nth: int = 0):
    from gpulint.flow import gpu_guard

    m = model_of(src)
    return gpu_guard(m, node(m, code, nth))


def test_command_line_flags_read_as_the_gpu_path():
    src = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true", default=torch.cuda.is_available())
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--use_gpu", action="store_true")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    if args.cuda: pass
    if args.no_cuda: pass
    if not args.no_cuda: pass
    if args.use_gpu: pass
    if use_cuda: pass
    if args.verbose: pass
    if args.lr: pass
    if args.unknown: pass
    """
    assert _guard_of(src, "args.cuda") is True  # default=torch.cuda.is_available()
    assert _guard_of(src, "args.no_cuda", 1) is False  # a GPU run leaves --no-cuda off
    assert _guard_of(src, "not args.no_cuda", 1) is True
    assert _guard_of(src, "args.use_gpu") is True  # the user asks for the GPU
    assert _guard_of(src, "use_cuda", 1) is True  # a name bound to and-ed GPU tests
    assert _guard_of(src, "args.verbose") is None  # any other flag says nothing
    assert _guard_of(src, "args.lr") is None
    assert _guard_of(src, "args.unknown") is None


def test_an_attribute_assigned_from_gpu_tests_and_conflicting_assignments():
    src = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true", default=False)
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    opts = parser.parse_args()
    opts.gpu_ok = torch.cuda.is_available()
    opts.gpu_ok = False
    if args.cuda: pass
    if opts.gpu_ok: pass
    """
    assert _guard_of(src, "args.cuda", 1) is True
    assert _guard_of(src, "opts.gpu_ok", 2) is None  # assigned True on a GPU once and False once


def test_a_branch_a_gpu_run_skips_is_not_taken():
    from gpulint.flow import runs_on_gpu

    src = """
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", default=True, type=bool)
    args = parser.parse_args()
    if args.cuda:
        a = 1
    if not args.cuda:
        b = 2
    else:
        c = 3
    d = 4 if torch.cuda.is_available() else 5
    """
    m = model_of(src)
    on = {k: runs_on_gpu(m, node(m, k)) for k in ("1", "2", "3", "4", "5")}
    assert on == {"1": True, "2": False, "3": True, "4": True, "5": False}


def test_values_and_indices_pairs_unpack_where_their_input_is():
    m = model_of(HEAD + """
out = torch.randn(4, 3).to(device)
_, predicted = torch.max(out, 1)
vals, idx = out.topk(2)
a, b = torch.max(out, torch.zeros(4, 3))
rows0, rows1 = out.max()
""")
    assert where(m, "predicted") == "acc"
    assert m.value_of(node(m, "predicted")).nonscalar
    assert where(m, "idx") == "acc"
    assert m.value_of(node(m, "a")).kind != "tensor"  # elementwise max of two tensors: not a pair
    assert not m.value_of(node(m, "rows1")).nonscalar  # max() without a dimension: one value, no pair


def test_gl116_input_move_fix_only_where_the_input_is_used_once():
    from fixture_support import check

    src = textwrap.dedent("""
    import torch
    import torch.nn as nn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 4).to(device)

    def once(x):
        x = torch.randn(2, 4)
        return model(x)

    def twice(x):
        x = torch.randn(2, 4)
        y = model(x)
        return torch.cat([x, y])
    """)
    diags = [d for d in check(src, {"GL116"}) if d.code == "GL116"]
    fixable = {d.line: d.fix is not None for d in diags}
    assert fixable.get(9) is True  # moved at its only use
    assert fixable.get(13) is False  # `x` is read again on the next line: a move at the call would not fix it


def test_dict_displays_keep_a_value_per_constant_key():
    m = model_of(HEAD + """
model = nn.Linear(3, 1).to(device)
d = {"out": model(torch.randn(2, 3).to(device)), "label": torch.zeros(4)}
a = d["out"]
b = d["label"]
c = d.get("out")
d["label"] = d["label"].to(device)
e = d["label"]
""")
    assert where(m, 'd["out"]') == "acc"
    assert where(m, 'd["label"]') == "host"
    assert where(m, 'd.get("out")') == "acc"
    assert where(m, "e") == "acc"  # the key re-bound to its moved value


def test_dict_changed_in_place_is_not_read_from_its_display():
    m = model_of(HEAD + """
import utils

def move(batch):
    for k, v in batch.items():
        batch[k] = v.to(device)

def show(batch):
    print(len(batch))

b1 = {"x": torch.randn(4, 3)}
for k in b1:
    b1[k] = b1[k].to(device)
x1 = b1["x"]
b2 = {"x": torch.randn(4, 3)}
move(b2)
x2 = b2["x"]
b3 = {"x": torch.randn(4, 3)}
utils.to_device(b3)
x3 = b3["x"]
b4 = {"x": torch.randn(4, 3)}
b4.update(extra=1)
x4 = b4["x"]
b5 = {"x": torch.randn(4, 3)}
show(b5)
x5 = b5["x"]
""")
    assert where(m, "x1") in (None, "either")  # moved on the paths through the loop's body only
    assert where(m, "x2") is None  # a helper of the file stores into its items
    assert where(m, "x3") is None  # unknown code may change it
    assert where(m, "x4") is None
    assert where(m, "x5") == "host"  # a helper that only reads it


def test_keyword_inputs_from_a_dict_meet_the_model():
    m = model_of(HEAD + """
model = nn.Linear(3, 1).to(device)
ids = torch.randint(0, 3, (2, 3))
mask = torch.ones_like(ids)
bad = {"input": ids.to(device), "mask": mask}
out = model(**bad)
good = {"input": ids.to(device), "mask": mask.to(device)}
out2 = model(**good)
""")
    nodes = [mm.node for mm in m.flow.mismatches]
    assert [m.module.code_for_node(n) for n in nodes] == ["model(**bad)"]


def test_operands_on_two_gpus_named_by_index():
    m = model_of(HEAD + """
model = nn.Linear(3, 1).cuda(2)
a = model(torch.randn(2, 3).cuda())
b = model(torch.randn(2, 3).to("cuda:2"))
c = torch.randn(2).to("cuda:1") + torch.randn(2).to("cuda:0")
d = model(torch.randn(2, 3).to(device))
""")
    found = [m.module.code_for_node(mm.node) for mm in m.gpu_mismatches()]
    assert found == ['model(torch.randn(2, 3).cuda())', 'torch.randn(2).to("cuda:1") + torch.randn(2).to("cuda:0")']
    assert not m.mismatches()


def test_current_gpu_is_unknown_once_the_file_selects_one():
    m = model_of(HEAD + """
torch.cuda.set_device(2)
model = nn.Linear(3, 1).cuda(2)
a = model(torch.randn(2, 3).cuda())
""")
    assert not m.gpu_mismatches()


def test_a_module_moved_in_place_is_moved_for_its_aliases():
    m = model_of(HEAD + """
class Trainer:
    def __init__(self, model):
        self.model = model

    def fit(self, x):
        return self.model(x.to(device))

model = nn.Linear(3, 1)
net = model
trainer = Trainer(model)
model.to(device)
a = net(torch.randn(2, 3).to(device))
other = nn.Linear(3, 1)
b = other(torch.randn(2, 3))
""")
    assert where(m, "net", 1) is None  # the same module, moved by `model.to(device)`
    assert where(m, "self.model", 1) is None  # the trainer's reference to it too
    assert where(m, "other", 1) == "host"  # another module is not affected


def test_a_callable_instance_in_a_self_attribute_is_called():
    m = model_of(HEAD + """
class DetLoss:
    def __call__(self, pred, target):
        return (pred - target).pow(2).mean(), torch.zeros(3)

class Trainer:
    def __init__(self, model):
        self.model = model.to(device)
        self.loss_fn = DetLoss()

    def step(self):
        loss, parts = self.loss_fn(torch.randn(4, 3), torch.randn(4, 3))
        return loss
""")
    assert m.value_of(node(m, "loss", 1)).kind == "tensor"
    assert m.value_of(node(m, "parts")).kind == "tensor"


def test_iterating_a_list_of_known_items_gives_them():
    m = model_of(HEAD + """
def accuracy(y_pred, y_true):
    return y_pred

model = nn.Linear(3, 2).to(device)
metrics = [{"name": "accuracy", "function": accuracy}]
out = model(torch.randn(4, 3).to(device))
for metric in metrics:
    score = metric["function"](out, out)
""")
    assert m.value_of(node(m, 'metric["function"]')).kind == "function"
    assert where(m, "score") == "acc"


def test_deepcopy_is_a_snapshot_where_the_original_is_now():
    # an EMA/target network copied before the model moves stays on the host (timm ModelEmaV2's
    # documented pitfall); copied after, it is on the accelerator
    m = model_of(HEAD + """
import copy
model = nn.Linear(3, 2)
early = copy.deepcopy(model)
model.to(device)
late = copy.deepcopy(model)
t = copy.deepcopy(torch.zeros(3).to(device))
for ema_p, p in zip(early.parameters(), model.parameters()):
    ema_p.mul_(0.99).add_(p, alpha=0.01)
""")
    assert where(m, "early") == "host"
    assert where(m, "model", 2) == "acc"
    assert where(m, "late") == "acc"
    assert where(m, "t") == "acc"
    # an in-place method keeps its receiver's shape: the host parameter meets the device one
    assert m.value_of(node(m, "ema_p.mul_(0.99)")).nonscalar
    assert [m.module.code_for_node(x.node) for x in m.mismatches()] == ["ema_p.mul_(0.99).add_(p, alpha=0.01)"]


def test_deepcopy_of_a_moved_model_then_move_of_the_original_back_is_independent():
    m = model_of(HEAD + """
from copy import deepcopy
model = nn.Linear(3, 2).to(device)
ema = deepcopy(model)
model.cpu()
y = ema(torch.randn(2, 3).to(device))
""")
    assert where(m, "ema", 1) == "acc"
    assert m.mismatches() == []


def test_state_dict_values_are_where_the_module_is_and_augassign_is_checked():
    # yolov5's ModelEMA update shape, with the EMA copied before the model moved
    m = model_of(HEAD + """
import copy
model = nn.Linear(3, 2)
ema = copy.deepcopy(model)
model.to(device)
msd = model.state_dict()
for k, v in ema.state_dict().items():
    v *= 0.99
    v += 0.01 * msd[k].detach()
""")
    assert where(m, "msd[k]") == "acc"
    assert where(m, "v", 1) == "host"
    found = [m.module.code_for_node(x.node) for x in m.mismatches()]
    assert found == ["v += 0.01 * msd[k].detach()"]


def test_augassign_into_a_host_scalar_fails_same_device_is_silent():
    # the target of `+=` is the operation's output: a 0-dim host tensor cannot take a device
    # result (LCCNet#4; "Expected all tensors to be on the same device" on CUDA and under the
    # emulator), while `total = total + out.sum()` would be fine
    m = model_of(HEAD + """
model = nn.Linear(3, 2).to(device)
total = torch.zeros(())
acc = torch.zeros(2, device=device)
for step in range(3):
    out = model(torch.randn(4, 3).to(device))
    total += out.sum()
    acc += out.sum(0)
""")
    found = m.mismatches()
    assert len(found) == 1 and type(found[0].node) is cst.AugAssign
    assert m.module.code_for_node(found[0].node.target) == "total"


def test_a_lambda_passed_as_an_argument_runs_with_the_call_arguments():
    m = model_of(HEAD + """
def blend(a, b, fn):
    return fn(a, b)

def update(a, b, fn):
    a.copy_(fn(a, b))

host = torch.randn(4, 3)
dev = torch.randn(4, 3).to(device)
same = blend(dev, dev, lambda x, y: x * 0.9 + y * 0.1)
update(host, dev, lambda e, m: e * 0.9 + m * 0.1)
""")
    assert where(m, "same") == "acc"
    # the lambda's body, run in update's recorded pass with its one call's arguments
    found = [m.module.code_for_node(x.node) for x in m.mismatches()]
    assert found == ["e * 0.9 + m * 0.1"]



def test_a_device_returned_by_unknown_code_for_a_tensor_is_not_the_accelerator():
    # asteroid's separate.py: `input_device = get_device(wav)`, then `out.to(input_device)`
    m = model_of(HEAD + """
from mylib import get_device

def separate(wav):
    input_device = get_device(wav)
    out = (wav * 2).to(input_device)
    return out

out = separate(torch.from_numpy(arr))
moved = torch.randn(3).to(device)
""")
    assert where(m, "out", 1) != "acc"
    assert where(m, "moved") == "acc"


def test_torch_brought_by_a_star_import_is_torch():
    # pytorch-deeplab-xception's train.py gets torch only through `from modeling.deeplab import *`
    m = model_of("""
from utils import *
model = nn.Linear(4, 2).cuda()
x = torch.randn(8, 4)
""")
    assert m.qualname(node(m, "torch.randn")) == "torch.randn"
    assert where(m, "model") == "acc" and where(m, "x") == "host"
    bound = model_of("""
from utils import *
import numpy as torch
x = torch.zeros(3)
""")
    assert bound.qualname(node(bound, "torch.zeros")) == "numpy.zeros"


def test_a_dict_of_loaders_indexed_by_the_phase_gives_its_loaders():
    # PyTorch's transfer-learning tutorial: `dataloaders[phase]` in `for phase in ["train", "val"]`
    # (pytorch-classification-uncertainty#18: a host `torch.eye(n)` indexed with device labels)
    m = model_of(HEAD + """
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 4), torch.randint(0, 4, (8,)))
dataloaders = {"train": DataLoader(ds, batch_size=4), "val": DataLoader(ds, batch_size=4)}
comp = {x: DataLoader(ds, batch_size=4) for x in ["train", "val"]}
eye = torch.eye(4)
for phase in ["train", "val"]:
    for inputs, labels in dataloaders[phase]:
        labels = labels.to(device)
        a = eye[labels]
    for inputs2, labels2 in comp[phase]:
        b = eye[labels2.to(device)]
""")
    assert m.value_of(node(m, "dataloaders[phase]")).kind == "loader"
    assert m.value_of(node(m, "comp[phase]")).kind == "loader"
    assert where(m, "inputs") == "host"
    found = sorted(m.module.code_for_node(x.node) for x in m.mismatches())
    assert found == ["eye[labels2.to(device)]", "eye[labels]"]


def test_a_dict_comprehension_over_computed_keys_is_not_a_display():
    m = model_of(HEAD + """
from torch.utils.data import DataLoader
comp = {x: DataLoader(sets[x]) for x in names}
cond = {x: DataLoader(sets[x]) for x in ["train", "val"] if x in sets}
""")
    assert m.value_of(node(m, "comp")).kind is None
    assert m.value_of(node(m, "cond")).kind is None


def test_a_key_of_a_batch_dict_moved_in_place_is_moved_in_the_model():
    # m-bain/frozen-in-time@51325de: the trainer moves data["video"] and hands the dict to a model
    # whose forward passes data["video"] on to one of its methods
    m = model_of(HEAD + """
from torch.utils.data import DataLoader

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def compute_video(self, v):
        return self.lin(v)

    def forward(self, data):
        return self.compute_video(data["video"])

class Pairs(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"video": torch.randn(4), "meta": i}

model = Net().to(device)
for data in DataLoader(Pairs(), batch_size=4):
    data["video"] = data["video"].to(device)
    out = model(data)
""")
    assert where(m, "v") != "host"
    assert where(m, 'data["video"]', 0) != "host"  # in forward
    assert m.mismatches() == []


def test_a_move_under_a_none_default_the_construction_leaves_does_not_place_the_instance():
    # timm's ModelEmaV2(model, decay, device=None): `if self.device is not None: self.module.to(...)`
    m = model_of(HEAD + """
from copy import deepcopy

class ModelEma(nn.Module):
    def __init__(self, model, decay=0.9, device=None):
        super().__init__()
        self.module = deepcopy(model)
        self.device = device
        if self.device is not None:
            self.module.to(device=device)

model = nn.Linear(3, 2)
plain = ModelEma(model)
placed = ModelEma(model, device=device)
""")
    assert where(m, "plain") == "host"
    assert where(m, "placed") == "acc"  # (made with `device=`)


def test_submodules_of_an_instance_never_moved_stay_where_they_were_made():
    m = model_of(HEAD + """
class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 2)

    def run(self, x):
        return self.inner(x)

w = Wrapper()
out = w.run(torch.randn(4, 3).to(device))
""")
    assert [m.module.code_for_node(x.node) for x in m.mismatches()] == ["self.inner(x)"]
    moved = model_of(HEAD + """
class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 2)

    def run(self, x):
        return self.inner(x)

w = Wrapper()
w.to(device)
out = w.run(torch.randn(4, 3).to(device))
""")
    assert moved.mismatches() == []


def test_map_of_a_lambda_gives_what_it_returns_and_unpacks():
    # app_deep_learning (precision7): `x, y = map(lambda t: t.to(device), (x, y))` before a TensorDataset
    m = model_of(HEAD + """
from torch.utils.data import DataLoader, TensorDataset
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
x, y = map(lambda t: t.to(device), (x, y))
for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4):
    pass
a, b = map(lambda t: t * 2, (torch.randn(3), torch.randn(3)))
""")
    assert where(m, "x", 1) == "acc"  # the target of the map
    assert where(m, "xb") == "acc"
    assert where(m, "a") == "host"


def test_a_tensor_dataset_of_tensors_the_engine_cannot_place_is_not_on_the_host():
    m = model_of(HEAD + """
from torch.utils.data import DataLoader, TensorDataset
from helpers import prepare
x, y = prepare(torch.randn(16, 4), torch.randint(0, 2, (16,)))
for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4):
    pass
for xh, yh in DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16)), batch_size=4):
    pass
""")
    assert where(m, "xb") != "host"
    assert where(m, "xh") == "host"


def test_a_parameter_no_call_passes_takes_its_constant_default():
    # diffusers' DiffusionPolicy(device="cpu"): the file builds it with the default only, so
    # `obs.to(self.device)` is on the host (a name that says "device" is otherwise taken for a GPU)
    m = model_of(HEAD + """
class Policy:
    def __init__(self, device="cpu"):
        self.device = device

    def run(self, obs):
        obs = obs.to(self.device)
        return obs

class GpuPolicy:
    def __init__(self, device="cuda"):
        self.device = device

    def run(self, obs):
        obs = obs.to(self.device)
        return obs

class Passed:
    def __init__(self, device="cpu"):
        self.device = device

    def run(self, obs):
        obs = obs.to(self.device)
        return obs

p = Policy()
p.run(torch.zeros(2))
g = GpuPolicy()
g.run(torch.zeros(2))
q = Passed(device)
q.run(torch.zeros(2))
""")
    # `self.device` as read in each class's run(): the 2nd, 4th and 6th occurrences
    assert where(m, "self.device", 1) == "host"
    assert where(m, "obs.to(self.device)", 0) == "host"
    assert m.device_of(node(m, "self.device", 3)).key == "cuda"
    assert where(m, "self.device", 5) == "acc"  # the call passes the script's device


def test_shape_only_operands_do_not_meet_the_receiver():
    # `pred.eq(target.view_as(pred))` (the MNIST example's accuracy): view_as takes only the shape
    # of its operand; the comparison is where the devices meet
    m = model_of(HEAD + """
pred = torch.zeros(4, 1).to(device)
target = torch.zeros(4)
same = target.view_as(pred)
bad = pred.eq(target.view_as(pred))
""")
    ops = [m.module.code_for_node(mm.node) for mm in m.mismatches()]
    assert ops == ["pred.eq(target.view_as(pred))"]
    assert where(m, "same") == "host" and m.value_of(node(m, "same")).nonscalar


def test_a_module_that_moves_itself_in_init_is_where_its_construction_puts_it():
    # IL-Datasets' BC method: `self.device = device or torch.device(...)`, then `self.to(self.device)`
    m = model_of(HEAD + """
class BC(nn.Module):
    def __init__(self, n, device=None):
        super().__init__()
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.policy = nn.Linear(n, 2)
        self.to(self.device)

    def forward(self, x):
        return self.policy(x)

class Maybe(nn.Module):
    def __init__(self, n, device=None):
        super().__init__()
        self.policy = nn.Linear(n, 2)
        if device is not None:
            self.to(device)

    def forward(self, x):
        return self.policy(x)

bc = BC(4)
on_cpu = BC(4, "cpu")
maybe = Maybe(4, device)
""")
    assert where(m, "bc") == "acc"
    assert where(m, "on_cpu") == "host"
    assert where(m, "maybe") is None  # moved under an `if`: not known
    one = model_of(HEAD + """
def pick(device=None):
    return device or torch.device("cuda" if torch.cuda.is_available() else "cpu")

d = pick()
""")
    assert where(one, 'device or torch.device("cuda" if torch.cuda.is_available() else "cpu")') == "acc"


def test_one_line_bodies_are_interpreted():
    # yassouali/pytorch-segmentation ENet: `if torch.cuda.is_available(): extras = extras.cuda()`
    m = model_of(HEAD + """
def pad(identity):
    extras = torch.zeros(identity.size(0), 2)
    if torch.cuda.is_available(): extras = extras.cuda()
    return torch.cat((identity, extras), dim=1)

def moved(x): return x.to(device)

out = pad(torch.randn(3, 2).to(device))
y = moved(torch.zeros(3))
for i in range(2): z = torch.zeros(2).to(device)
""")
    assert m.mismatches() == []
    assert where(m, "extras", 3) == "acc"  # read in torch.cat, after the one-line if
    assert where(m, "y") == "acc"
    assert where(m, "z") == "acc"


def test_a_function_given_out_returns_that_buffer():
    # NVIDIA/flowtron get_mask_from_lengths: `torch.arange(0, n, out=torch.cuda.LongTensor(n))`
    m = model_of(HEAD + """
lengths = torch.tensor([3, 4]).to(device)
ids = torch.arange(0, 4, out=torch.cuda.LongTensor(4))
mask = ids < lengths.unsqueeze(1)
buf = torch.empty(4)
host_ids = torch.arange(0, 4, out=buf)
bad = host_ids < lengths.unsqueeze(1)
""")
    assert where(m, "ids", 0) == "acc"
    assert [m.module.code_for_node(mm.node) for mm in m.mismatches()] == ["host_ids < lengths.unsqueeze(1)"]


def test_a_modules_own_device_attribute_is_a_device_expression():
    # IL-Datasets' BC look-alike: `bc.to(bc.device)`, `self.device` set in `__init__`
    m = model_of(HEAD + """
class BC(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.policy = nn.Linear(4, 3)

    def forward(self, x):
        return self.policy(x)

bc = BC()
bc.to(bc.device)
out = bc(torch.randn(2, 4).to(bc.device))
""")
    assert where(m, "bc.device", 0) == "acc"
    assert where(m, "bc", 3) == "acc"  # the call, after the move
    assert m.mismatches() == []


def test_attributes_of_a_plain_data_holder_are_what_its_constructions_gave():
    # harvardnlp/annotated-transformer#25: `Batch(src, tgt)` objects built from host tensors
    src = HEAD + """
import numpy as np

class Batch:
    def __init__(self, src, pad=0):
        self.src = src
        self.src_mask = (src != pad).unsqueeze(-2)

class Moved:
    def __init__(self, src):
        self.src = src

    def to(self, device):
        self.src = self.src.to(device)
        return self

model = nn.Embedding(11, 4).to(device)
batch = Batch(torch.from_numpy(np.random.randint(1, 5, size=(4, 6))))
y = model(batch.src)
other = Moved(torch.zeros(4, 6, dtype=torch.long))
z = model(other.src)
moved = Moved(torch.zeros(4, 6, dtype=torch.long))
moved.to(device)
w = model(moved.src)
"""
    m = model_of(src)
    assert where(m, "batch.src") == "host"
    assert where(m, "other.src") is None  # another method sets it too: not taken from __init__
    # (twentieth session) the instance that method ran on holds what it left there
    assert where(m, "moved.src") == "acc"
    assert [m.module.code_for_node(mm.node) for mm in m.mismatches()] == ["model(batch.src)"]


def test_a_function_every_call_of_which_mismatched_is_reported_at_the_calls_only():
    m = model_of(HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(4, 4)

    def forward(self, x):
        return self.emb(x)

net = Net().to(device)
out = net.forward(torch.randn(2, 4))
""")
    assert [m.module.code_for_node(mm.node) for mm in m.mismatches()] == ["net.forward(torch.randn(2, 4))"]


def test_a_conditional_unwrap_keeps_the_wrapper_its_other_branch_always_is():
    # DataDAM#9: `base = net.module if torch.cuda.device_count() > 1 else net` with `net` always a
    # DataParallel: on one GPU `base` is the wrapper
    src = HEAD + """
net = nn.DataParallel(nn.Linear(2, 2))
base = net.module if torch.cuda.device_count() > 1 else net
same = net.module if hasattr(net, "module") else net
maybe = nn.Linear(2, 2)
if torch.cuda.device_count() > 1:
    maybe = nn.DataParallel(maybe)
other = maybe.module if torch.cuda.device_count() > 1 else maybe
"""
    m = model_of(src)
    from gpulint.flow import UNWRAPPED
    assert isinstance(m.value_of(node(m, "base")).wrap, cst.Call)
    assert not m.value_of(node(m, "base")).scatters  # on some paths only
    assert m.value_of(node(m, "same")).wrap is UNWRAPPED  # the test asks about the wrapper
    assert m.value_of(node(m, "other")).wrap is UNWRAPPED  # wrapped on the same condition only


def test_a_pretrained_model_loaded_in_float16_holds_float16_weights():
    # Jaykef/ai-algorithms#4 (GRPO): `from_pretrained(name, torch_dtype=torch.float16)` then a GradScaler
    m = model_of(HEAD + """
from transformers import AutoModelForCausalLM
half = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.float16)
new = AutoModelForCausalLM.from_pretrained("m", dtype=torch.float16)
full = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.float32)
plain = AutoModelForCausalLM.from_pretrained("m")
""")
    assert m.value_of(node(m, "half")).half
    assert m.value_of(node(m, "new")).half
    assert not m.value_of(node(m, "full")).half
    assert not m.value_of(node(m, "plain")).half


def test_a_name_bound_only_to_the_cpu_string_is_the_host():
    # sthalles/PyTorch-BYOL linear_feature_eval.ipynb: `device = 'cpu'  # 'cuda' if ... else 'cpu'`
    m = model_of("""
import torch
import torch.nn as nn
device = 'cpu'
encoder = nn.Linear(4, 2)
encoder.to(device)
feats = encoder(torch.randn(3, 4))
dev = 'cpu'
if torch.cuda.is_available():
    dev = 'cuda'
net = nn.Linear(4, 2).to(dev)
""")
    assert where(m, "encoder", 2) == "host"
    assert m.mismatches() == []
    assert where(m, "net") == "acc"  # chosen at run time: the configured accelerator


def test_a_module_of_the_file_holding_only_parameter_free_layers_needs_no_move():
    # r9y9/deepvoice3_pytorch train.py: MaskedL1Loss keeps `self.criterion = nn.L1Loss(...)`, built
    # in spec_loss() and called with the model's outputs on the GPU
    m = model_of(HEAD + """
class MaskedL1Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = nn.L1Loss(reduction="sum")

    def forward(self, input, target, mask):
        return self.criterion(input * mask, target * mask) / mask.sum()

class Weighted(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(weight=w)

    def forward(self, x, y):
        return self.criterion(x, y)

def spec_loss(y_hat, y, mask):
    return MaskedL1Loss()(y_hat, y, mask)

def ce(x, y):
    return Weighted(torch.ones(3))(x, y)

out = spec_loss(torch.randn(2, 3).to(device), torch.randn(2, 3).to(device), torch.ones(2, 3).to(device))
bad = ce(torch.randn(2, 3).to(device), torch.tensor([0, 1]).to(device))
""")
    assert [m.module.code_for_node(mm.node) for mm in m.mismatches()] == ["Weighted(torch.ones(3))(x, y)"]


def test_a_quantized_pretrained_load_is_placed_by_the_load():
    # jzhang38/TinyLlama speculative decoding: `from_pretrained(name, load_in_8bit=True)`, no device_map
    m = model_of(HEAD + """
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
q8 = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=True)
q4 = AutoModelForCausalLM.from_pretrained("m", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
plain = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=False)
""")
    assert where(m, "q8") is None
    assert where(m, "q4") is None
    assert where(m, "plain") == "host"


def test_a_module_handed_to_a_lambda_that_does_not_move_it_stays_where_it_is():
    # wengong-jin/hgraph2graph#35: `grad_norm = lambda m: math.sqrt(sum(...m.parameters()...))`
    # called with the model every few steps of the loop
    m = model_of(HEAD + """
import math
model = nn.Linear(4, 2).to(device)
grad_norm = lambda m: math.sqrt(sum([p.grad.norm().item() ** 2 for p in m.parameters() if p.grad is not None]))
mover = lambda m: m.cuda()
other = nn.Linear(4, 2).to(device)
for epoch in range(2):
    a = model(torch.randn(2, 4).to(device))
    print(grad_norm(model))
    b = other(torch.randn(2, 4).to(device))
    mover(other)
""")
    assert where(m, "model", 2) == "acc"  # in the loop, after the first pass
    assert where(m, "other", 1) is None  # handed to a lambda that moves it: not known after
