"""Engine and rule items, thirty-fourth session (each test checked to fail on f0874ac5 unless it says
it is a control that already passed there). The items are described in
tests/fixtures_pending/README.md, section "Thirty-fourth session (lead)"."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str, unsafe: bool = False):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


def _fixes(src: str, *codes: str) -> list:
    return [d for d in _run(src, *codes).diagnostics if d.fix is not None]


# ER67-1: GL111's optimizer source through a name bound twice, both bindings inside a `with` block
WITH_RESTORE = """
import tempfile
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
with tempfile.TemporaryDirectory() as tmp:
    model = nn.Linear(4, 1)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    torch.save({"m": model.state_dict(), "o": optimizer.state_dict()}, "ck.pth")

    checkpoint = torch.load("ck.pth", map_location="cpu")
    model = nn.Linear(4, 1)
    model.load_state_dict(checkpoint["m"])
    optimizer = torch.optim.AdamW(model.parameters())
    optimizer.load_state_dict(checkpoint["o"])
    model.to(device)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4, device=device)).sum().backward()
        optimizer.step()
"""


def test_er67_1_restore_inside_with_gets_the_fix():
    found = _run(WITH_RESTORE, "GL111").diagnostics
    assert [(d.line, d.code) for d in found] == [(17, "GL111")]
    assert found[0].fix is not None


def test_er67_1_suppress_block_is_not_straight_line():
    # control (passes on the base too): a `with contextlib.suppress(...)` body may stop half-way
    src = WITH_RESTORE.replace("import tempfile", "import tempfile, contextlib").replace(
        "with tempfile.TemporaryDirectory() as tmp:", "with contextlib.suppress(RuntimeError):")
    found = _run(src, "GL111").diagnostics
    assert all(d.fix is None for d in found)


# F:G69-1 (coqui-ai/TTS#1816): `self.w = w` in `__init__`, every construction passing a tensor and the
# parent loss's `__init__` passing a host one, the parent moved: GL106 at the attribute (GL116 leaves
# the use to it). Redone from the thirty-third session's reverted version with two conditions: an
# instance is moved, and the host tensor is built by a module's `__init__` (not handed in by the script).
GIVEN_TENSOR = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Weighted(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x, y):
        return F.binary_cross_entropy_with_logits(x, y, pos_weight=self.w)


class Total(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bce = Weighted(torch.tensor([c])) if c else None

    def forward(self, x, y):
        return self.bce(x, y)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
crit = Total(10.0).to(device)
x = torch.randn(4, 1, device=device)
print(crit(x, torch.ones(4, 1, device=device)))
"""


def test_g69_1_attribute_given_a_host_tensor_by_the_parent_init_is_gl106():
    found = _run(GIVEN_TENSOR, "GL106", "GL116").diagnostics
    assert [(d.line, d.code) for d in found] == [(10, "GL106")]
    assert found[0].fix is not None


def test_g69_1_given_a_device_tensor_is_fine():
    src = GIVEN_TENSOR.replace("Weighted(torch.tensor([c]))", "Weighted(torch.tensor([c], device='cuda'))")
    assert [c for _, c in _lines(src, "GL106")] == []


def test_g69_1_parent_never_moved_is_not_gl106():
    # control: no instance is moved, so "`.to(device)` leaves it behind" is false
    src = GIVEN_TENSOR.replace("crit = Total(10.0).to(device)", "crit = Total(10.0)")
    assert [c for _, c in _lines(src, "GL106")] == []


def test_g69_1_tensor_handed_in_by_the_script_stays_gl116():
    # control (BasicTS STGCN's `gso`): the script builds the host tensor and hands it to the model;
    # the use in forward is GL116's report, as before
    src = GIVEN_TENSOR.replace("def __init__(self, c):", "def __init__(self, t):").replace(
        "self.bce = Weighted(torch.tensor([c])) if c else None", "self.bce = Weighted(t)").replace(
        "crit = Total(10.0).to(device)", "crit = Total(torch.tensor([10.0])).to(device)")
    assert _lines(src, "GL106", "GL116") == [(13, "GL116")]


# F:E69-1 (microsoft/ProDA#49): an instance of a plain class of the file whose `__init__` makes a host
# tensor attribute, replaced by a moved tensor on one branch of an `if` whose test is not about devices:
# on the other path (the one a GPU run takes by default) the host tensor meets device features
ONE_BRANCH = """
import sys
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Holder:
    def __init__(self):
        self.proto = torch.zeros(3, 8)

    def dist(self, feat):
        return feat - self.proto[0]


h = Holder()
if len(sys.argv) > 1:
    h.proto = torch.randn(3, 8).to(device)
h.dist(torch.randn(4, 8, device=device))
"""


def test_e69_1_attribute_replaced_on_one_branch_only():
    assert _lines(ONE_BRANCH, "GL116") == [(13, "GL116")]


def test_e69_1_loaded_and_moved_on_one_branch_of_a_function():
    src = ONE_BRANCH.replace("h = Holder()\nif len(sys.argv) > 1:\n    h.proto = torch.randn(3, 8).to(device)\n"
                             "h.dist(torch.randn(4, 8, device=device))\n",
                             "def main(path=None):\n    h = Holder()\n    if path is not None:\n"
                             "        h.proto = torch.load(path).to(device)\n"
                             "    h.dist(torch.randn(4, 8, device=device))\n\n\nmain()\n")
    assert _lines(src, "GL116") == [(13, "GL116")]


def test_e69_1_controls_stay_silent():
    # controls (silent on the base too): a move under an availability test, a move on every path,
    # both branches moving
    for new in ("if torch.cuda.is_available():\n    h.proto = h.proto.cuda()",
                "h.proto = torch.randn(3, 8).to(device)",
                "if len(sys.argv) > 1:\n    h.proto = torch.randn(3, 8).to(device)\nelse:\n    h.proto = h.proto.to(device)"):
        src = ONE_BRANCH.replace("if len(sys.argv) > 1:\n    h.proto = torch.randn(3, 8).to(device)", new)
        assert _lines(src, "GL116") == [], new


# F:E69-5 (nerfstudio PR#1061): a comprehension over `.items()` of a dict whose keys the engine knows
# visits each key's value; `{k: v if k in exclude else v.to(d) ...}` keeps each key's device; a
# condition decided on the key skips it; `"mask" in batch` of a dict known to hold the key is true
PER_KEY = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = torch.rand(4, 8, 8, 3)
masks = torch.rand(4, 8, 8) > 0.5


def to_device(b, exclude=("image",)):
    return {k: v if k in exclude else v.to(device) for k, v in b.items()}


def gather(batch):
    if "mask" in batch:
        idx = torch.nonzero(batch["mask"])
    else:
        idx = torch.zeros(5, 3, dtype=torch.long)
    c, y, x = idx[:, 0], idx[:, 1], idx[:, 2]
    return {k: v[c, y, x] for k, v in batch.items()}


out = gather(to_device({"image": images, "mask": masks}))
"""


def test_e69_5_host_entry_met_in_a_comprehension_over_items():
    assert _lines(PER_KEY, "GL116") == [(18, "GL116")]


def test_e69_5_key_skipped_by_the_condition_or_every_key_moved():
    # controls: the host key skipped by the comprehension's condition; no key excluded from the move
    assert _lines(PER_KEY.replace("for k, v in batch.items()}", 'for k, v in batch.items() if k != "image"}'),
                  "GL116") == []
    assert _lines(PER_KEY.replace('exclude=("image",)', "exclude=()"), "GL116") == []


# `x in t` of two tensors (eriklindernoren/PyTorch-YOLOv3's evaluation, the yolov3-multigpu pending
# fixture's line 107): `Tensor.__contains__` compares the element with every entry; `t if c else []`
# is where `t` lives (the empty list has no device)
CONTAINS = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
preds = torch.randn(5, device=device)
annotations = torch.randn(3, 2)
target_labels = annotations[:, 0] if len(annotations) else []
for p in preds:
    if p not in target_labels:
        continue
"""


def test_contains_of_a_device_element_in_a_host_tensor():
    assert _lines(CONTAINS, "GL116") == [(8, "GL116")]


def test_contains_controls():
    # controls: both on the device; a Python list of numbers
    assert _lines(CONTAINS.replace("torch.randn(3, 2)", "torch.randn(3, 2, device=device)"), "GL116") == []
    assert _lines(CONTAINS.replace("annotations[:, 0] if len(annotations) else []", "[1.0, 2.0]"), "GL116") == []


# Q:E69-1 (probes: texar's chain moved into `main()`): a summary computed at the depth bound (the
# module-level `main()` call runs main as a summary, one level deeper than its recorded pass) is not
# cached, so the recorded pass of `main()` analyses the model's forward chain to the end. The classes
# are the committed texar fixture's (tests/fixtures/GL116), its script replaced.
def _texar(script: str) -> str:
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "GL116" / "texar_dynamic_rnn_default_sequence_length_on_host.py").read_text()
    head = text[:text.index("device = torch.device(")]
    return head + script


MAIN = """
def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Classifier().to(device)
    print(model(torch.randn(4, 7, 6).to(device)))


main()
"""


def test_q_e69_1_chain_of_calls_from_main():
    found = _run(_texar(MAIN), "GL116").diagnostics
    assert [(d.line, d.code) for d in found] == [(21, "GL116")]


def test_q_e69_1_control_chain_at_module_level():
    # control (reported on the base too): the same three statements at module level
    src = _texar(MAIN.replace("def main():\n    device", "if True:\n    device").replace("\n\nmain()\n", "\n"))
    found = _run(src, "GL116").diagnostics
    assert [(d.line, d.code) for d in found] == [(21, "GL116")]


# A70-P1 (pytorch/tutorials PR#1535, the chatbot tutorial after its fix): a wrapper module of the file
# hands host pack lengths and device inputs to its encoder; its forward, followed with the call's
# arguments, shows they never meet (was GL116 with a SAFE fix that broke the script)
WRAPPER_LENGTHS = """
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 8)
        self.gru = nn.GRU(8, 8)

    def forward(self, input_seq, input_lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(input_seq), input_lengths)
        outputs, hidden = self.gru(packed)
        return hidden


class Searcher(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_seq, input_length):
        return self.encoder(input_seq, input_length)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = Encoder().to(device)
searcher = Searcher(encoder)
input_batch = torch.LongTensor([[1], [2], [3]]).to(device)
lengths = torch.tensor([3])
hidden = searcher(input_batch, lengths)
"""


def test_a70_p1_wrapper_passing_host_pack_lengths_is_fine():
    assert _lines(WRAPPER_LENGTHS, "GL105", "GL116") == []


def test_a70_p1_control_lengths_on_the_device_still_reported():
    # control (reported on the base too): device lengths reach pack_padded_sequence
    src = WRAPPER_LENGTHS.replace("lengths = torch.tensor([3])", "lengths = torch.tensor([3]).to(device)")
    assert [c for _, c in _lines(src, "GL116")] == ["GL116"]


# P55-1 (speedyspeech's guided-attention loss): a weightless loss module of the file called with device
# attention weights and host lengths computes its grid from the lengths on the host and moves the result
WEIGHTLESS_LOSS = """
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GuidedAttentionLoss(nn.Module):
    def forward(self, att, len_rows):
        B, T, N = att.shape
        y = torch.as_tensor(np.mgrid[0:T, 0:N][0]).float()
        t = torch.as_tensor(len_rows).float()
        penalty = (y[None] / t[:, None, None]).to(att.device)
        return (penalty * att).mean()


criterion = GuidedAttentionLoss()
att = torch.rand(3, 4, 5, device=device)
slen = torch.tensor([4, 3, 2])
print(criterion(att, slen))
"""


def test_p55_1_weightless_loss_with_host_lengths_is_fine():
    assert _lines(WEIGHTLESS_LOSS, "GL105", "GL116") == []


def test_p55_1_control_host_factory_meeting_the_device_input_still_reported():
    # control (reported on the base too): the penalty is not moved
    src = WEIGHTLESS_LOSS.replace("(y[None] / t[:, None, None]).to(att.device)", "y[None] / t[:, None, None]")
    assert [c for _, c in _lines(src, "GL105", "GL116")] != []


# P55-2 (mozilla/TTS TacotronLoss): a host zero made on the path where `self.stopnet` is false, added
# only under `if ... and self.stopnet:`
STOPNET = """
import torch
import torch.nn as nn


class TacotronLoss(nn.Module):
    def __init__(self, stopnet, separate):
        super().__init__()
        self.stopnet = stopnet
        self.separate = separate
        self.criterion = nn.L1Loss()
        self.criterion_st = nn.BCEWithLogitsLoss()

    def forward(self, out, mel, stop_out, stop):
        loss = self.criterion(out, mel)
        stop_loss = self.criterion_st(stop_out, stop) if self.stopnet else torch.zeros(1)
        if not self.separate and self.stopnet:
            loss += stop_loss
        return loss, stop_loss
"""


def test_p55_2_factory_on_the_path_an_enclosing_if_excludes():
    assert _lines(STOPNET, "GL105", "GL116") == []


def test_p55_2_control_without_the_condition_still_reported():
    src = STOPNET.replace("if not self.separate and self.stopnet:", "if not self.separate:")
    assert [c for _, c in _lines(src, "GL105", "GL116")] == ["GL105"]


# P55-4 (FastSpeech2's utils/stft.py): a module the file builds and never moves keeps its buffers on
# the host; `transform` convolves on the GPU and brings the result back with `.cpu()`
STFT = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class STFT(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("fwd", torch.randn(6, 1, 8))
        self.register_buffer("inv", torch.randn(6, 1, 8))

    def transform(self, x):
        return F.conv1d(x.unsqueeze(1).to(device), self.fwd.to(device), stride=4).cpu()

    def forward(self, x):
        mag = self.transform(x)
        return F.conv_transpose1d(mag * 2, self.inv, stride=4)


stft = STFT()
print(stft(torch.randn(2, 64)))
"""


def test_p55_4_never_moved_module_keeps_its_buffers_on_the_host():
    assert _lines(STFT, "GL116") == []


def test_p55_4_control_an_instance_handed_on_is_still_reported():
    # control (reported on the base too): an instance handed to another call may be moved there
    src = STFT.replace("stft = STFT()", "stft = STFT()\nwrapped = nn.Sequential(stft)")
    assert [c for _, c in _lines(src, "GL116")] == ["GL116"]


# P55-5 (speedyspeech's DurationExtractor.generate_naive): `x = torch.as_tensor(x)` of a parameter
# that may already be a device tensor returns it where it is
AS_TENSOR = """
import torch
import torch.nn as nn


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12, 4)

    def forward(self, x):
        return self.emb(x)


class M(nn.Module):
    def __init__(self, device="cuda" if torch.cuda.is_available() else "cpu"):
        super().__init__()
        self.enc = Enc()
        self.to(device)

    def forward(self, phonemes):
        return self.enc(phonemes)

    def generate(self, phonemes):
        phonemes = torch.as_tensor(phonemes)
        return self.enc(phonemes)


model = M()
gen = getattr(model, "generate")
print(gen(torch.randint(0, 12, (2, 5))))
"""


def test_p55_5_as_tensor_of_a_parameter_rebound_in_the_statement():
    assert _lines(AS_TENSOR, "GL116") == []


# A70-E1 (LEGCN#1): a tensor built from a name bound to a NumPy array (also through `.T`, arithmetic
# and NumPy functions of arrays) is a host tensor with dimensions
NUMPY_NAMED = """
import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, P):
        return torch.mm(P, self.lin(x))


pv = np.zeros((8, 3))
arr = pv.T / np.maximum(pv.T.sum(1, keepdims=True), 1.0)
features = torch.randn(8, 4).cuda()
P = torch.FloatTensor(arr)
model = Net()
model.cuda()
out = model(features, P)
"""


def test_a70_e1_tensor_of_a_named_numpy_array_is_on_the_host():
    assert _lines(NUMPY_NAMED, "GL116") == [(22, "GL116")]


def test_a70_e1_control_moved_projection_is_fine():
    assert _lines(NUMPY_NAMED.replace("P = torch.FloatTensor(arr)", "P = torch.FloatTensor(arr).cuda()"), "GL116") == []


# A70-E2 (PufferDrive PR#405): `"cpu" if config["cpu_offload"] else device` with the flag a literal
FLAGGED_DEVICE = """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
config = {"cpu_offload": True}
obs_device = "cpu" if config["cpu_offload"] else device
obs = torch.zeros(64, 4, device=obs_device)
idx = torch.randperm(64, device=device)[:16]
mb = obs[idx]
"""


def test_a70_e2_literal_flag_decides_the_device():
    assert _lines(FLAGGED_DEVICE, "GL116") == [(9, "GL116")]
    assert _lines(FLAGGED_DEVICE.replace("True}", "False}"), "GL116") == []


# B70-E1 (speechbrain PR#615's `Brain.fit_batch`): a call in an `if` statement's test runs before its
# body, so a clip helper called in the test may follow the scaled backward and precede `scaler.step`
def _brain(check: str) -> str:
    return f"""
import torch
import torch.nn as nn


class Brain:
    def __init__(self):
        self.modules = nn.Linear(4, 2).cuda()
        self.optimizer = torch.optim.SGD(self.modules.parameters(), lr=0.1)
        self.scaler = torch.amp.GradScaler("cuda")

    def fit_batch(self, x):
        self.optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = self.modules(x).sum()
        self.scaler.scale(loss).backward()
{check}
        self.scaler.update()

    def check_gradients(self):
        torch.nn.utils.clip_grad_norm_(self.modules.parameters(), 1.0)
        return True
"""


def test_b70_e1_clip_helper_called_in_the_step_condition():
    src = _brain("        if self.check_gradients():\n            self.scaler.step(self.optimizer)")
    assert _lines(src, "GL202") == [(22, "GL202")]


def test_b70_e1_control_unscaled_first_is_fine():
    # control (silent on the base too)
    src = _brain("        self.scaler.unscale_(self.optimizer)\n        if self.check_gradients():\n"
                 "            self.scaler.step(self.optimizer)")
    assert _lines(src, "GL202") == []


# B70-E2 (2U1/Qwen-VL-Series-Finetune#136): `self.training_step(x)` in a base trainer's loop reaches the
# subclass's override (the instance is the subclass)
TEMPLATE = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 2).cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def training_step(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss

    def train(self, data):
        for x in data:
            self.training_step(x)
            self.opt.step()
            self.opt.zero_grad()


class MyTrainer(Trainer):
    def training_step(self, x):
        torch.cuda.empty_cache()
        return super().training_step(x)

    def save(self):
        torch.cuda.empty_cache()


MyTrainer().train([torch.randn(3, 4).cuda()])
"""


def test_b70_e2_override_called_from_the_base_loop():
    assert _lines(TEMPLATE, "GL505") == [(25, "GL505")]


# A70-P2 (rgb-footprint-extract's inference Tester): `self.model.eval()` in `__init__` after the
# attribute's last rebinding, no method training it again: the evaluation loop in `test()` runs in
# eval mode (was GL404 with a SAFE fix inserting eval()/train() around it)
TESTER = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Tester:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))
        self.model = self.model.to(device)
        self.model.eval()

    def test(self, batches):
        for x in batches:
            with torch.no_grad():
                out = self.model(x.to(device))
        return out


def train_and_save():
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(3, 4, device=device)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


train_and_save()
Tester().test([torch.randn(3, 4)])
"""


def test_a70_p2_eval_in_init_after_the_rebinding():
    assert _lines(TESTER, "GL404") == []


def test_a70_p2_control_a_method_that_trains_again():
    # control: another method puts the model back in training mode
    src = TESTER.replace("    def test(self, batches):",
                         "    def tune(self):\n        self.model.train()\n\n    def test(self, batches):")
    assert [c for _, c in _lines(src, "GL404")] == ["GL404"]


# probe (classify of tests/fixtures/GL120/device_context_loop.py): the shuffling loader kept on the
# trainer (`self.loader`) and iterated in `run()` inside `with torch.device(self.device):` (rule)
CONTEXT_LOOP = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        X = torch.randn(256, 6)
        self.loader = DataLoader(TensorDataset(X, X.sum(dim=1, keepdim=True)), batch_size=32, shuffle=True)

    def run(self):
        with torch.device(self.device):
            model = nn.Linear(6, 1)
            for x, y in self.loader:
                nn.functional.mse_loss(model(x.to(self.device)), y.to(self.device)).backward()


Trainer().run()
"""


def test_probe_gl120_loader_on_self_iterated_in_the_device_context():
    assert _lines(CONTEXT_LOOP, "GL120") == [(14, "GL120")]


def test_probe_gl120_control_loader_iterated_outside_the_context():
    # control (silent on the base too): the loop is outside the `with` block
    src = CONTEXT_LOOP.replace("            for x, y in self.loader:\n                nn",
                               "            pass\n        for x, y in self.loader:\n            nn")
    assert _lines(src, "GL120") == []


# probe (classify of tests/fixtures/GL114/to_cuda_transform_in_compose.py): the transforms reach the
# Dataset through `self.transform` of the trainer that builds both (rule)
TRANSFORM_ON_SELF = """
import torch
from torch.utils.data import DataLoader, Dataset


class ToCuda:
    def __call__(self, tensor):
        return tensor.cuda()


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class DS(Dataset):
    def __init__(self, transform):
        self.items = [[0.0] * 4] * 8
        self.transform = transform

    def __getitem__(self, i):
        return self.transform(torch.tensor(self.items[i]))

    def __len__(self):
        return 8


class Trainer:
    def __init__(self):
        self.transform = Compose([ToCuda()])
        self.dataset = DS(self.transform)
        self.loader = DataLoader(self.dataset, batch_size=4, num_workers=1)

    def run(self):
        for x in self.loader:
            print(x.sum())


Trainer().run()
"""


def test_probe_gl114_transform_handed_through_self():
    assert _lines(TRANSFORM_ON_SELF, "GL114") == [(8, "GL114")]


def test_probe_gl114_control_without_workers():
    # control (silent on the base too)
    assert _lines(TRANSFORM_ON_SELF.replace(", num_workers=1", ""), "GL114") == []


# probe (classify of the seq2seq GL106 fixture): `self.model = nn.DataParallel(self.model)` in a
# trainer wraps the class `self.model` was built as (rule GL106's DataParallel branch)
DP_ON_SELF = """
import torch
import torch.nn as nn


class Attn(nn.Module):
    def __init__(self, d, device):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.scale = torch.sqrt(torch.FloatTensor([d])).to(device)

    def forward(self, x):
        return self.fc(x) / self.scale


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = Attn(8, self.device).to(self.device)
        if torch.cuda.device_count() > 1:
            self.model = nn.DataParallel(self.model, device_ids=[0, 1])

    def run(self):
        print(self.model(torch.randn(4, 8, device=self.device)))


Trainer().run()
"""


def test_probe_gl106_data_parallel_of_a_self_attribute():
    assert _lines(DP_ON_SELF, "GL106") == [(10, "GL106")]


def test_probe_gl106_control_without_data_parallel():
    # control (silent on the base too)
    src = DP_ON_SELF.replace("            self.model = nn.DataParallel(self.model, device_ids=[0, 1])", "            pass")
    assert _lines(src, "GL106") == []


def test_p55_2_the_excluded_factory_does_not_flow_on():
    # control (silent on the base too: this reduced form does not carry the zero on through `loss`,
    # mozilla/TTS's real TacotronLoss does, where the flow-on fix was checked on corpus55): more
    # terms added to `loss` after the guarded `+=` stay silent
    src = STOPNET.replace("        return loss, stop_loss",
                          "        loss += 0.5 * self.criterion(out, mel)\n        return loss, stop_loss")
    assert _lines(src, "GL105", "GL116") == []
