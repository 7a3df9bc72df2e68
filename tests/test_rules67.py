"""rules67 (thirty-third session): rule-side gap items left by the thirty-second session
(G68-5, G68-3, G67-2, G67-3, G67-1, GL101's fallback device name, G68-4; see the README section
"rules67 (thirty-third session)" in tests/fixtures_pending/README.md)."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix


def _diags(src: str, code: str):
    return [d for d in check(textwrap.dedent(src), {code}) if d.code == code]


def _fixed(src: str, codes: set[str], unsafe: bool = True) -> str:
    return fix(textwrap.dedent(src), codes, unsafe).text


# ------------------------------------------------------------------------------------- G68-5
# GL403: a test step in one branch of an if/else inside a training loop whose other branch trains
# (pytorch/pytorch#4050)

TEST_BRANCH = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
y = torch.zeros(8, dtype=torch.long, device=device)
i = 1
while i < 200:
    x = torch.randn(8, 4, device=device)
    if i % 100 == 0:
        out = model(x)
        print(out.argmax(1))
    else:
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    i = i + 1
"""


def test_gl403_test_branch_of_a_training_loop_is_reported():
    d = _diags(TEST_BRANCH, "GL403")
    assert [x.line for x in d] == [14]  # 60dfa2fd: nothing
    assert "test branch of the `if` at line 13" in d[0].message


def test_gl403_test_branch_fix_wraps_the_branch():
    out = _fixed(TEST_BRANCH, {"GL403"}, unsafe=False)
    assert ("    if i % 100 == 0:\n        with torch.no_grad():\n            out = model(x)\n"
            "            print(out.argmax(1))\n    else:\n") in out
    assert not _diags(out, "GL403")


def test_gl403_test_branch_in_the_else_and_an_eval_flag():
    src = TEST_BRANCH.replace("if i % 100 == 0:", "if not do_eval:").replace(
        "i = 1\n", "i = 1\ndo_eval = False\n")
    # swap the branches: training first, the test step in the `else`
    src = src.replace("""        out = model(x)
        print(out.argmax(1))
    else:
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
""", """        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    else:
        out = model(x)
        print(out.argmax(1))
""")
    assert [x.line for x in _diags(src, "GL403")] == [21]


def test_gl403_test_branch_accumulating_items_still_reported():
    src = TEST_BRANCH.replace("        print(out.argmax(1))\n",
                              "        correct += (out.argmax(1) == y).sum().item()\n        total_out += out.sum().item()\n")
    src = src.replace("i = 1\n", "i = 1\ncorrect = 0\ntotal_out = 0.0\n")
    assert [x.line for x in _diags(src, "GL403")] == [16]


def test_gl403_test_branch_under_no_grad_silent():
    src = TEST_BRANCH.replace("        out = model(x)\n        print(out.argmax(1))\n",
                              "        with torch.no_grad():\n            out = model(x)\n            print(out.argmax(1))\n")
    assert not _diags(src, "GL403")


def test_gl403_rollout_collected_in_one_branch_trained_in_the_other_silent():
    # REINFORCE-like: the branch that does not train keeps its outputs for the one that does
    src = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
rollout = []
for t in range(1, 100):
    if t % 10 != 0:
        logp = model(torch.randn(2, 4))
        rollout.append(logp)
    else:
        loss = -torch.cat(rollout).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        rollout = []
"""
    assert not _diags(src, "GL403")


def test_gl403_test_branch_output_read_by_the_training_branch_silent():
    src = TEST_BRANCH.replace("        out = model(x)\n        print(out.argmax(1))\n",
                              "        ref = model(x)\n        print(ref.argmax(1))\n").replace(
        "        loss = F.cross_entropy(out, y)\n", "        loss = F.cross_entropy(out, y) + ref.sum()\n").replace(
        "i = 1\n", "i = 1\nref = torch.zeros(8, 3, device=device)\n")
    assert not _diags(src, "GL403")


def test_gl403_test_branch_output_read_after_the_if_silent():
    src = TEST_BRANCH.replace("    i = i + 1\n", "    print(out.shape)\n    i = i + 1\n")
    assert not _diags(src, "GL403")


def test_gl403_test_branch_output_read_after_the_loop_silent():
    src = TEST_BRANCH.replace("        out = model(x)\n        print(out.argmax(1))\n",
                              "        last_test = model(x)\n").rstrip() + "\nprint(last_test)\n"
    assert not _diags(src, "GL403")


def test_gl403_test_branch_stores_into_a_container_silent():
    src = TEST_BRANCH.replace("        print(out.argmax(1))\n", "        outs[i] = out\n").replace(
        "i = 1\n", "i = 1\nouts = {}\n")
    assert not _diags(src, "GL403")


def test_gl403_data_dependent_init_branch_silent():
    # `if i == 0:` is not a periodic test nor an evaluation: the first batch initialising the model
    src = TEST_BRANCH.replace("if i % 100 == 0:", "if i == 1:")
    assert not _diags(src, "GL403")


def test_gl403_both_branches_train_silent():
    src = TEST_BRANCH.replace("        out = model(x)\n        print(out.argmax(1))\n",
                              "        out = model(x)\n        out.sum().backward()\n        opt.step()\n")
    assert not _diags(src, "GL403")


def test_gl403_elif_chain_silent():
    src = TEST_BRANCH.replace("    if i % 100 == 0:\n", "    if i % 100 == 0:\n        pass\n    elif i % 50 == 0:\n")
    assert not _diags(src, "GL403")


def test_gl403_test_branch_model_not_trained_by_the_other_branch_silent():
    src = TEST_BRANCH.replace("        out = model(x)\n        print(out.argmax(1))\n",
                              "        out = teacher(x)\n        print(out.argmax(1))\n").replace(
        "opt = torch", "teacher = nn.Linear(4, 3).to(device)\nopt = torch")
    assert not _diags(src, "GL403")


# ------------------------------------------------------------------------------------- G68-3
# GL501: `nn.Transformer.generate_square_subsequent_mask(n).to(d)` in forward (pytorch PR #85609)

MASK = """
import torch
import torch.nn as nn
from torch.nn import Transformer


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tf = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1)

    def forward(self, src, tgt):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)
        return self.tf(src, tgt, tgt_mask=tgt_mask)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = LM().to(device)
for step in range(3):
    model(torch.randn(4, 2, 8, device=device), torch.randn(5, 2, 8, device=device))
"""


def test_gl501_transformer_mask_moved_in_forward():
    d = _diags(MASK, "GL501")
    assert [x.line for x in d] == [13]  # 60dfa2fd: nothing
    assert "`nn.Transformer.generate_square_subsequent_mask(...)` builds the tensor" in d[0].message
    assert "pass `device=tgt.device`" in d[0].message


def test_gl501_transformer_mask_fix_is_safe_and_passes_device():
    out = _fixed(MASK, {"GL501"}, unsafe=False)
    assert "nn.Transformer.generate_square_subsequent_mask(tgt.size(0), device=tgt.device)\n" in out
    assert not _diags(out, "GL501")


def test_gl501_transformer_mask_through_the_instance_and_imported_class():
    src = MASK.replace("nn.Transformer.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)",
                       "self.tf.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)")
    assert [x.line for x in _diags(src, "GL501")] == [13]
    assert "self.tf.generate_square_subsequent_mask(tgt.size(0), device=tgt.device)" in _fixed(src, {"GL501"}, False)
    src = MASK.replace("nn.Transformer.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)",
                       "Transformer.generate_square_subsequent_mask(tgt.size(0)).cuda()")
    assert 'Transformer.generate_square_subsequent_mask(tgt.size(0), device="cuda")' in _fixed(src, {"GL501"}, False)


def test_gl501_transformer_mask_with_device_silent():
    src = MASK.replace("generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)",
                       "generate_square_subsequent_mask(tgt.size(0), device=tgt.device)")
    assert not _diags(src, "GL501")


def test_gl501_own_mask_method_silent():
    # the old tutorial's own `generate_square_subsequent_mask` method: not torch's, no `device=`
    src = MASK.replace("nn.Transformer.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)",
                       "self.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)").replace(
        "    def forward(self, src, tgt):",
        "    def generate_square_subsequent_mask(self, sz):\n"
        "        return torch.triu(torch.full((sz, sz), float('-inf')), diagonal=1)\n\n"
        "    def forward(self, src, tgt):")
    assert not _diags(src, "GL501")


def test_gl501_transformer_mask_built_once_silent():
    src = MASK.replace("        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0)).to(tgt.device)\n"
                       "        return self.tf(src, tgt, tgt_mask=tgt_mask)",
                       "        return self.tf(src, tgt, tgt_mask=self.mask)").replace(
        "model = LM().to(device)\n",
        "model = LM().to(device)\nmodel.mask = nn.Transformer.generate_square_subsequent_mask(5).to(device)\n")
    assert not _diags(src, "GL501")


# ------------------------------------------------------------------------------------- G67-3
# GL302's fix when the sampler is a local of a helper that returns the loader in a tuple
# (nanoVLM PR#124)

HELPER_LOADERS = """
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def get_dataloaders(bs):
    train_ds = TensorDataset(torch.randn(32, 4))
    val_ds = TensorDataset(torch.randn(8, 4))
    train_sampler = DistributedSampler(train_ds, rank=0, num_replicas=1)
    train_loader = DataLoader(train_ds, batch_size=bs, sampler=train_sampler)
    val_loader = DataLoader(val_ds, batch_size=bs, shuffle=False)
    return train_loader, val_loader


def train(epochs):
    train_loader, val_loader = get_dataloaders(4)
    for epoch in range(epochs):
        for (x,) in train_loader:
            print(x.sum())


train(3)
"""


def test_gl302_helper_tuple_loader_gets_a_guarded_fix():
    d = _diags(HELPER_LOADERS, "GL302")
    assert [x.line for x in d] == [9]
    assert d[0].fix is not None  # 60dfa2fd: no fix
    out = _fixed(HELPER_LOADERS, {"GL302"}, unsafe=False)
    assert ("    for epoch in range(epochs):\n"
            "        if isinstance(train_loader.sampler, DistributedSampler):\n"
            "            train_loader.sampler.set_epoch(epoch)\n"
            "        for (x,) in train_loader:\n") in out
    assert not _diags(out, "GL302")


def test_gl302_helper_tuple_loader_rebound_gets_no_fix():
    # the name is bound twice in the training function: which loader the loop sees is not one call's
    src = HELPER_LOADERS.replace("    for epoch in range(epochs):\n",
                                 "    if epochs > 5:\n        train_loader, val_loader = get_dataloaders(8)\n"
                                 "    for epoch in range(epochs):\n")
    d = _diags(src, "GL302")
    assert [x.line for x in d] == [9] and d[0].fix is None


# ------------------------------------------------------------------------------------- G67-1
# GL304: the wrapper's state_dict packed by a static method / function of the file
# (deepspeech.pytorch#475)

PACKAGE = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    @staticmethod
    def serialize(model, epoch=None):
        return {"state_dict": model.state_dict(), "epoch": epoch}


dist.init_process_group("gloo")
model = DistributedDataParallel(Net())
torch.save(Net.serialize(model, epoch=1), "net.pth")
"""


def test_gl304_state_dict_packed_by_a_static_method():
    d = _diags(PACKAGE, "GL304")
    assert [x.line for x in d] == [23]  # 60dfa2fd: nothing
    assert "`Net.serialize(...)` packs `model.state_dict()`" in d[0].message
    out = _fixed(PACKAGE, {"GL304"})
    assert 'torch.save(Net.serialize(getattr(model, "module", model), epoch=1), "net.pth")' in out
    assert not _diags(out, "GL304")


def test_gl304_state_dict_packed_by_a_module_function():
    src = PACKAGE.replace("    @staticmethod\n    def serialize(model, epoch=None):\n"
                          "        return {\"state_dict\": model.state_dict(), \"epoch\": epoch}\n", "").replace(
        "dist.init_process_group", "def serialize(model, epoch=None):\n"
        "    return {\"state_dict\": model.state_dict(), \"epoch\": epoch}\n\n\ndist.init_process_group").replace(
        "Net.serialize(model", "serialize(model")
    d = _diags(src, "GL304")
    assert len(d) == 1 and "`serialize(...)` packs" in d[0].message


def test_gl304_helper_that_unwraps_its_parameter_silent():
    src = PACKAGE.replace("        return {\"state_dict\": model.state_dict(), \"epoch\": epoch}",
                          "        model = model.module if hasattr(model, \"module\") else model\n"
                          "        return {\"state_dict\": model.state_dict(), \"epoch\": epoch}")
    assert not _diags(src, "GL304")
    src = PACKAGE.replace("        return {\"state_dict\": model.state_dict(), \"epoch\": epoch}",
                          "        if isinstance(model, DistributedDataParallel):\n"
                          "            return {\"state_dict\": model.module.state_dict(), \"epoch\": epoch}\n"
                          "        return {\"state_dict\": model.state_dict(), \"epoch\": epoch}")
    assert not _diags(src, "GL304")


def test_gl304_helper_given_the_unwrapped_model_silent():
    src = PACKAGE.replace("Net.serialize(model, epoch=1)", "Net.serialize(model.module, epoch=1)")
    assert not _diags(src, "GL304")
    src = PACKAGE.replace("model = DistributedDataParallel(Net())", "net = Net()\nmodel = DistributedDataParallel(net)").replace(
        "Net.serialize(model, epoch=1)", "Net.serialize(net, epoch=1)")
    assert not _diags(src, "GL304")


def test_gl304_helper_when_the_file_loads_back_into_the_wrapper_silent():
    src = PACKAGE + 'model.load_state_dict(torch.load("net.pth")["state_dict"])\n'
    assert not _diags(src, "GL304")


# ------------------------------------------------------------------------ GL101 fallback device
# GL101's suggested line named a `device` the file may not have when the model was moved with no
# device expression (`model.cuda()` under `if torch.cuda.is_available():`)

CUDA_IF_AVAILABLE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset


def main():
    model = nn.Linear(4, 2)
    if torch.cuda.is_available():
        model.cuda()
    loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=4)
    with torch.no_grad():
        for images, labels in loader:
            outputs = model(Variable(images))
            print(outputs.argmax(1))


main()
"""


def test_gl101_no_device_expression_names_the_models_parameters():
    d = _diags(CUDA_IF_AVAILABLE, "GL101")
    assert [x.line for x in d] == [16]
    # 60dfa2fd: "`Variable(images).to(device)`", and the file has no `device`
    assert d[0].message.endswith("move it first: `Variable(images).to(next(model.parameters()).device)`")
    assert ".to(device)" not in d[0].message


def test_gl101_no_device_expression_loss_operand_names_the_models_parameters():
    src = CUDA_IF_AVAILABLE.replace("""    with torch.no_grad():
        for images, labels in loader:
            outputs = model(Variable(images))
            print(outputs.argmax(1))
""", """    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = F.cross_entropy(model(x.cuda()), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
    d = _diags(src, "GL101")
    assert [x.line for x in d] == [16]
    assert d[0].message.endswith("move it first: `y = y.to(next(model.parameters()).device)`")  # 60dfa2fd: `y.to(device)`


def test_gl101_no_nameable_device_says_it_in_words():
    src = CUDA_IF_AVAILABLE.replace("""    with torch.no_grad():
        for images, labels in loader:
            outputs = model(Variable(images))
            print(outputs.argmax(1))
""", """    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        outs = [model(x.cuda())]
        loss = F.cross_entropy(outs[0], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
    d = _diags(src, "GL101")
    assert [x.line for x in d] == [17]
    assert d[0].message.endswith("unmoved; move it to the model's device first")  # 60dfa2fd: `y = y.to(device)`


def test_gl101_device_name_in_scope_still_used():
    src = CUDA_IF_AVAILABLE.replace("    if torch.cuda.is_available():\n        model.cuda()\n",
                                    "    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
                                    "    model.to(device)\n")
    d = _diags(src, "GL101")
    assert [x.line for x in d] == [16]
    assert d[0].message.endswith("move it first: `Variable(images).to(device)`")


# ------------------------------------------------------------------------------------- G68-4
# GL505: `torch.cuda.empty_cache()` in a module's forward (or what it calls) run every training
# step (fredzzhang/pocket#10)

FORWARD_EMPTY_CACHE = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        out = self.fc(x)
        torch.cuda.empty_cache()
        return out


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 4)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_gl505_empty_cache_in_forward_run_every_step():
    d = _diags(FORWARD_EMPTY_CACHE, "GL505")
    assert [x.line for x in d] == [14]  # 60dfa2fd: nothing
    assert "in `forward()` runs in the model's forward pass" in d[0].message
    assert "(the model call on line 22)" in d[0].message


NESTED = """
import torch
import torch.nn as nn


def pool(features, chunk=2):
    out = []
    for i in range(0, len(features), chunk):
        out.append(features[i:i + chunk].mean(1))
        torch.cuda.empty_cache()
    return torch.cat(out)


class Pool(nn.Module):
    def forward(self, x):
        return pool(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.pool = Pool()

    def forward(self, x):
        return self.pool(self.fc(x))


class Engine:
    def __init__(self, net):
        self.net = net
        self.opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def step(self, x):
        self.opt.zero_grad()
        loss = self.net(x).pow(2).mean()
        loss.backward()
        self.opt.step()

    def run(self, batches):
        for x in batches:
            self.step(x)


Engine(Head()).run([torch.randn(6, 4) for _ in range(3)])
"""


def test_gl505_empty_cache_in_a_helper_of_a_submodules_forward():
    d = _diags(NESTED, "GL505")
    assert [x.line for x in d] == [10]  # 60dfa2fd: nothing
    assert "in `pool()`" in d[0].message


def test_gl505_forward_under_a_training_test_silent():
    src = FORWARD_EMPTY_CACHE.replace("        torch.cuda.empty_cache()\n",
                                      "        if not self.training:\n            torch.cuda.empty_cache()\n")
    assert not _diags(src, "GL505")


def test_gl505_empty_cache_in_init_or_a_one_off_method_silent():
    src = FORWARD_EMPTY_CACHE.replace("        torch.cuda.empty_cache()\n", "").replace(
        "        self.fc = nn.Linear(4, 1)\n",
        "        self.fc = nn.Linear(4, 1)\n        torch.cuda.empty_cache()\n\n"
        "    def release(self):\n        self.cpu()\n        torch.cuda.empty_cache()\n").rstrip() + "\nmodel.release()\n"
    assert not _diags(src, "GL505")


def test_gl505_forward_of_a_module_only_evaluated_silent():
    src = FORWARD_EMPTY_CACHE.replace("model = Net()\n", "model = nn.Linear(4, 1)\nprobe = Net()\n").rstrip() + (
        "\n    if step % 10 == 0:\n        with torch.no_grad():\n            probe(x)\n")
    assert not _diags(src, "GL505")


def test_gl505_forward_in_an_inference_script_silent():
    src = FORWARD_EMPTY_CACHE.split("opt = torch.optim")[0] + (
        "with torch.no_grad():\n    for step in range(100):\n        print(model(torch.randn(8, 4)))\n")
    assert not _diags(src, "GL505")


def test_gl505_forward_called_in_an_evaluation_function_each_epoch_silent():
    src = FORWARD_EMPTY_CACHE.replace("model = Net()\n", "model = nn.Linear(4, 1)\nprobe = Net()\n\n\n"
                                      "def evaluate(m):\n    with torch.no_grad():\n        return m(torch.randn(8, 4))\n\n\n")
    src = src.replace("for step in range(100):", "for epoch in range(3):\n  evaluate(probe)\n  for step in range(100):")
    src = src.replace("\n    x = ", "\n    x = ")  # (indentation of the inner loop stays valid: 2 + 4)
    assert not _diags(src, "GL505")
