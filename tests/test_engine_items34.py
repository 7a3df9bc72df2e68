"""Engine items, twenty-seventh session (each test checked to fail on 60d1e4e)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str, fix: bool = False):
    rules = [Registry.load().by_code(c)() for c in codes]
    opts = Options(fix=True, unsafe_fixes=True, write=False) if fix else Options()
    return run_text("train.py", textwrap.dedent(src), rules, opts)


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# P43-1 (DeepOD's deviation loss): a host factory met only through full reductions, 0-dim tensors
# that PyTorch combines with tensors on any device, is no GL105 bug; the same factory reduced over a
# dimension, or met whole, still is.
DEV_LOSS = """
import torch
import torch.nn as nn


class DevLoss(nn.Module):
    def forward(self, y_true, y_pred):
        ref = torch.randn(5000)
        dev = (y_pred - {mean}) / {std}
        return (dev.abs() * (1 - y_true)).mean()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 1).to(device)
x, y = torch.randn(8, 4).to(device), torch.ones(8, 1).to(device)
print(DevLoss()(y, net(x)))
"""


def test_full_reductions_of_a_host_factory_are_no_gl105():
    for mean, std in (("torch.mean(ref)", "torch.std(ref)"), ("ref.mean()", "ref.std()"),
                      ("torch.mean(ref, dtype=torch.float32)", "ref.std(unbiased=False)")):
        assert _lines(DEV_LOSS.format(mean=mean, std=std), "GL105") == [], (mean, std)


def test_reductions_over_a_dimension_or_the_whole_tensor_still_meet():
    for mean, std in (("torch.mean(ref, 0)", "1.0"), ("ref.mean(dim=0)", "1.0"), ("ref", "1.0"),
                      ("torch.max(ref, y_true)", "1.0")):
        assert _lines(DEV_LOSS.format(mean=mean, std=std), "GL105") == [(8, "GL105")], mean


# P43-2 (pyod's SO_GAAL): a class whose base the engine cannot read, with nothing of a module (no
# `forward`), which builds a network in `fit` and trains it on host batches: where the network is
# is unknown, so no GL101; the same class with a `forward` (a module after all) keeps its
# submodules wherever the module is.
DETECTOR = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from .base import BaseDetector


class Discriminator(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layer1 = nn.Linear(n, 1)

    def forward(self, x):
        return torch.sigmoid(self.layer1(x))


class SO_GAAL(BaseDetector):
    def fit(self, X):
        self.discriminator = Discriminator(X.shape[1])
        loader = DataLoader(TensorDataset(torch.tensor(X, dtype=torch.float32)), batch_size=32)
        for data_batch in loader:
            data_batch = data_batch[0]
            out = self.discriminator(data_batch)
        return self
{extra}
"""


def test_detector_with_unreadable_base_and_no_forward_is_not_a_module():
    assert _lines(DETECTOR.format(extra=""), "GL101", "GL116") == []


def test_class_with_unreadable_base_and_a_forward_stays_a_module():
    extra = "\n    def forward(self, x):\n        return self.discriminator(x)\n"
    assert _lines(DETECTOR.format(extra=extra), "GL101", "GL116") == [(24, "GL101")]


# E54-1 (DPR#173): the fields of a `collections.namedtuple` record built in the file are what the
# construction gave them, so a host tensor read back as `batch.ids` reaching a module on the
# accelerator is a mismatch; a record of moved tensors, or one built from `*args`, is not.
RECORD = """
import collections

import torch
import torch.nn as nn

Batch = {decl}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, ids):
        return self.emb(ids).sum()


def create_input(rows, device):
    return {build}


class Trainer:
    def __init__(self, device):
        self.device = device
        self.model = Net()
        self.model.to(device)

    def validate(self):
        batch = create_input([[1, 2], [3, 4]], self.device)
        ids = batch.ids
        return self.model(ids)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(Trainer(device).validate())
"""


def test_namedtuple_fields_are_what_the_construction_gave():
    for decl in ('collections.namedtuple("Batch", ["ids", "labels"])', 'collections.namedtuple("Batch", "ids labels")',
                 'collections.namedtuple("Batch", "ids, labels")'):
        for build in ("Batch(torch.tensor(rows), [0])", "Batch(labels=[0], ids=torch.tensor(rows))"):
            got = _lines(RECORD.format(decl=decl, build=build), "GL116")
            assert got == [(32, "GL116")], (decl, build)


def test_namedtuple_of_moved_or_unknown_fields_is_silent():
    decl = 'collections.namedtuple("Batch", ["ids", "labels"])'
    for build in ("Batch(torch.tensor(rows).to(device), [0])", "Batch(*[torch.tensor(rows), [0]])",
                  "Batch(torch.tensor(rows, device=device), [0])"):
        assert _lines(RECORD.format(decl=decl, build=build), "GL116") == [], build


# E54-3 (lassonet#71): `isinstance(X, np.ndarray)` of a list the engine knows (a display, or an
# array's `.tolist()`, slices of an array staying arrays) is False, so only the `else` path runs and
# the device tensor reaches `np.asarray`; given the array itself, the host copy runs and all is well.
PREDICT = """
import numpy as np
import torch
import torch.nn as nn


def to_np(y_pred):
    return np.asarray(y_pred, dtype=np.float64)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
A = np.zeros((8, 4), dtype=np.float32)
X = {x}
with torch.no_grad():
    ans = model(torch.as_tensor(X).to(device))
if isinstance(X, np.ndarray):
    ans = ans.cpu().numpy()
print(to_np(ans))
"""


def test_isinstance_of_a_known_list_is_false():
    for x in ("[[0.0, 1.0, 2.0, 3.0]]", "A[2:].tolist()", "A[:, :].tolist()"):
        assert _lines(PREDICT.format(x=x), "GL109") == [(8, "GL109")], x


def test_isinstance_of_an_array_or_unknown_value_keeps_the_host_copy():
    for x in ("A", "A[2:]", "A.astype(np.float32)", "np.load('x.npy')", "A[0].tolist()"):
        assert _lines(PREDICT.format(x=x), "GL109") == [], x


# E56-1 (the A2C vector-envs tutorial): a submodule an nn.Module class moves itself in `__init__`
# (`self.actor = nn.Linear(4, 2).to(self.device)`) stays where that move put it in the class's
# other methods, so the action a method returns is on the accelerator; an instance moved back to the
# CPU, or a method that copies to the host, is silent.
AGENT = """
import numpy as np
import torch
import torch.nn as nn


class Agent(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.actor = nn.Linear(4, 2).to(self.device)

    def select_action(self, x):
        x = torch.Tensor(x).to(self.device)
        return self.actor(x).argmax(-1){tail}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
agent = Agent(device){after}
actions = agent.select_action(np.zeros((3, 4), dtype=np.float32))
print(actions.numpy())
"""


def test_submodule_moved_by_its_own_class_stays_there():
    assert _lines(AGENT.format(tail="", after=""), "GL109") == [(21, "GL109")]


def test_submodule_moved_by_its_class_then_copied_or_moved_back_is_silent():
    assert _lines(AGENT.format(tail=".cpu()", after=""), "GL109") == []
    assert _lines(AGENT.format(tail="", after="\nagent.cpu()"), "GL109") == []


# E56-4 a (the vocoder STFT loss): a tensor passed positionally after non-tensor parameters
# (`torch.stft(x, n_fft, hop, win, window)`) is an operand, named by its position in the signature
# (the knowledge base's `slots`); in place of a non-tensor parameter nothing is taken for one.
STFT = """
import torch
import torch.nn as nn


class Helper:
    def __init__(self, n):
        self.window = torch.hann_window(n){move}

    def __call__(self, x):
        return torch.stft(x, 8, 2, 8, self.window, return_complex=True).abs()


class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.helper = Helper(8)

    def forward(self, y_hat, y):
        return (self.helper(y_hat) - self.helper(y)).abs().mean()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 8).to(device)
criterion = Loss().to(device)
x = torch.randn(4, 8, device=device)
print(criterion(model(x), x))
"""


def test_positional_tensor_after_other_parameters_is_an_operand():
    assert _lines(STFT.format(move=""), "GL116") == [(11, "GL116")]
    assert _lines(STFT.format(move=".to(device)"), "GL116") == []


def test_knowledge_base_places_tensor_parameters_by_position():
    from gpulint import flowkb
    assert flowkb.function("torch.stft").slots == ("input", None, None, None, "window")
    assert flowkb.function("torch.gather").slots == ("self", None, "index")
    assert flowkb.function("torch.nn.functional.layer_norm").slots == ("input", None, "weight", "bias")
    assert flowkb.function("torch.cat").slots == ()  # its tensors come first


# P46-1 (cmatch's CTC aligner): `.to(device)` of a helper parameter left to its default None moves
# nothing, so lengths made by `np2tensor(array)` stay on the host next to a host `torch.arange`; the
# same helper given the run's device still moves them there.
NP2TENSOR = """
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def np2tensor(array, device=None):
    return torch.from_numpy(array).to({target})


def lengths_mask(ys):
    lens = np2tensor(np.array([len(y) for y in ys], dtype=np.int64){given})
    return torch.arange(int(lens.max())).unsqueeze(0) < lens.unsqueeze(1)


print(lengths_mask([[1, 2], [3]]))
"""


def test_to_none_default_is_no_move():
    assert _lines(NP2TENSOR.format(target="device", given=""), "GL116") == []
    assert _lines(NP2TENSOR.format(target="device=device", given=""), "GL116") == []


def test_helper_given_the_device_still_moves():
    assert _lines(NP2TENSOR.format(target="device", given=", device"), "GL116") == [(14, "GL116")]


# P44-4 (openmixup's `assert_equal`): `isinstance(x, T) and isinstance(y, T)` of two known tensors
# holds, so only its branch runs (which moves `y` to `x.device`); one operand unknown keeps the
# branches joined, and a test that fails for a known tensor decides the other way.
ASSERT_EQUAL = """
import torch


def assert_equal(x, y):
    if {test}:
        torch.testing.assert_close(x, y.to(x.device))
    elif isinstance(x, str) and isinstance(y, str):
        assert x == y
    else:
        assert (x == y).all()


w = torch.randn(3)
if torch.cuda.is_available():
    assert_equal(w, w.cuda())
"""


def test_and_of_decided_type_tests_picks_its_branch():
    test = "isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)"
    assert _lines(ASSERT_EQUAL.format(test=test), "GL116") == []
    test = "isinstance(x, torch.Tensor) or isinstance(y, str)"
    assert _lines(ASSERT_EQUAL.format(test=test), "GL116") == []


def test_and_with_a_failing_type_test_takes_the_other_branches():
    test = "isinstance(x, str) and isinstance(y, torch.Tensor)"
    assert _lines(ASSERT_EQUAL.format(test=test), "GL116") == [(11, "GL116")]
