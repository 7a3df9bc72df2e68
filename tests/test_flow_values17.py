"""Flow engine shapes from the thirteenth precision pass and the seventeenth real-bug batch."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL105", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_self_device_set_to_cpu_literal_is_the_host():
    # wvangansbeke/Unsupervised-Classification utils/memory.py: a memory bank keeps its tensors and
    # `self.device = 'cpu'` together and moves both in its own `to()`; `.to(self.device)` in a
    # method recorded before `to()` is the host, like the bank's tensors (precision12 #2)
    src = """
    import torch


    class MemoryBank(object):
        def __init__(self, n, dim, k):
            self.features = torch.FloatTensor(n, dim)
            self.targets = torch.LongTensor(n)
            self.device = 'cpu'
            self.K = k

        def weighted_knn(self, predictions):
            one_hot = torch.zeros(self.K, 10).to(self.device)
            corr = torch.matmul(predictions, self.features.t())
            yd, yi = corr.topk(self.K, dim=1)
            cand = self.targets.view(1, -1).expand(predictions.shape[0], -1)
            got = torch.gather(cand, 1, yi)
            one_hot.scatter_(1, got.view(-1, 1), 1)
            return one_hot

        def to(self, device):
            self.features = self.features.to(device)
            self.targets = self.targets.to(device)
            self.device = device

        def cuda(self):
            self.to('cuda:0')
    """
    assert findings(src) == []


def test_self_device_set_to_cuda_literal_is_still_the_accelerator():
    src = """
    import torch


    class Bank:
        def __init__(self):
            self.device = 'cuda'
            self.table = torch.ones(8)

        def lookup(self, idx):
            buf = torch.zeros(8).to(self.device)
            return buf + self.table
    """
    assert findings(src) == [("GL116", 12)]


EMA_SRC = """
import copy
import torch
import torch.nn as nn


class Ema:
    def __init__(self, model, decay=0.99):
        self.shadow = copy.deepcopy(model)
        self.params = [p for p in model.parameters()]
        self.decay = decay


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 2).to(device)
ema = Ema(model)
x = torch.randn(4, 3)
y = model(x)
"""


def test_constructor_that_only_copies_the_model_leaves_it_where_it_is():
    # pytorch-image-models#2127's EMA helper shape: `ModelEma(model)` deep-copies the live model;
    # the live model stays on the device (before, any construction taking it forgot where it was)
    assert findings(EMA_SRC) == [("GL116", 18)]


def test_constructor_that_keeps_the_model_forgets_where_it_is():
    # `self.net = nn.DataParallel(model)` then `self.net.cuda()` in a method: the instance may move
    # the model it was given, so where `model` is afterwards is unknown
    src = """
    import torch
    import torch.nn as nn


    class Trainer:
        def __init__(self, model):
            self.net = nn.DataParallel(model)

        def fit(self):
            self.net.cuda()


    model = nn.Linear(3, 2)
    trainer = Trainer(model)
    trainer.fit()
    x = torch.randn(4, 3).cuda()
    y = model(x)
    """
    assert findings(src) == []
    stored = src.replace("self.net = nn.DataParallel(model)", "self.net = model")
    assert findings(stored) == []
    part = src.replace("self.net = nn.DataParallel(model)", "self.net = model.weight")
    assert findings(part) == []


def test_torch_cat_of_batch_parts_is_still_the_batch():
    # unit8co/darts#449: the validation batch's parts are concatenated in a helper before the model
    # call; the concatenation is still the DataLoader's batch, so GL101 (not GL116) reports it
    src = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(3, 1).to(device)
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)


    def produce(parts):
        a, b = parts
        return model(torch.cat([a, b], dim=1))


    for batch in loader:
        out = produce(batch)
    """
    assert findings(src, ("GL101", "GL116")) == [("GL101", 13)]


EMA_DEVICE = """
import copy
import torch
import torch.nn as nn


class ModelEma(nn.Module):
    def __init__(self, model, device=None):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.device = device
        if self.device is not None:
            self.module.to(device=device)

    @torch.no_grad()
    def update(self, model):
        for e, m in zip(self.module.state_dict().values(), model.state_dict().values()):
            e.lerp_(m, 0.1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 2).to(device)
ema = ModelEma(model, DEVICE_ARG)
ema.update(model)
"""


def test_is_not_none_of_a_value_never_none_runs_only_its_branch():
    # pytorch-image-models#2127: `ModelEma(model, device="cpu")` keeps the average on the host
    # (`if self.device is not None: self.module.to(device=device)` runs); the lerp with the live
    # model's device weights is GL116
    assert findings(EMA_DEVICE.replace("DEVICE_ARG", 'device="cpu"')) == [("GL116", 18)]


def test_is_not_none_of_a_value_none_on_some_path_decides_nothing():
    # one construction passes no device (None), another "cpu": either may hold, silent
    src = EMA_DEVICE.replace("DEVICE_ARG", 'device="cpu"') + "ema2 = ModelEma(model)\nema2.update(model)\n"
    assert findings(src) == []
    assert findings(EMA_DEVICE.replace("DEVICE_ARG", "None")) == []


S2S_SRC = """
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class S2S(nn.Module):
    def __init__(self, enc, dec):
        super().__init__()
        STORE


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dec = Dec()
model = S2S(nn.Linear(4, 4), dec).to(device)
x = torch.randn(2, 4)
y = dec(x)
"""


def test_module_registered_by_a_moved_container_moves_with_it():
    # IBM/pytorch-seq2seq#123: the decoder handed to `Seq2seq(encoder, decoder)` is moved by
    # `seq2seq.to(device)`; the beam search later calls the decoder itself with host tensors
    assert findings(S2S_SRC.replace("STORE", "self.enc, self.dec = enc, dec")) == [("GL116", 25)]
    assert findings(S2S_SRC.replace("STORE", "self.enc = enc\n        self.dec = dec")) == [("GL116", 26)]


def test_module_kept_in_a_plain_list_of_a_container_is_not_known_moved():
    # a plain list does not register its modules: where `dec` is after the move is unknown (GL107's)
    assert findings(S2S_SRC.replace("STORE", "self.parts = [enc, dec]")) == []


def test_one_argument_where_gives_index_tensors_on_the_condition_device():
    # Lightning-AI/pytorch-lightning#2304: `torch.where(cond)[0]` padded with a host tensor in cat
    src = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pred = torch.randn(8).to(device)
    idx = torch.where(pred[1:] - pred[:-1])[0]
    out = torch.cat([idx, torch.tensor([7])])
    """
    assert findings(src) == [("GL116", 7)]


def test_cat_with_an_operand_of_unknown_device_is_not_the_host():
    # an element the engine cannot place keeps the result's device unknown: no report downstream
    src = """
    import torch
    from somewhere import make_indices

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(8).to(device)
    idx = torch.cat([make_indices(), torch.tensor([7])])
    y = x[:2] + idx
    """
    assert findings(src) == []


def test_tensor_of_a_numpy_array_has_a_dimension():
    # MatthewWilletts/algostability#2: one-hot rows from np.eye, repeated, times a device parameter
    src = """
    import numpy as np
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    mu = torch.randn(3, 4).to(device)
    y = torch.tensor(np.eye(3, dtype=np.float32)).repeat_interleave(2, dim=0)
    loc = y @ mu
    """
    assert findings(src) == [("GL116", 8)]


FLAG_SRC = """
import torch


class Sampler:
    def __init__(self, device):
        self.mu = torch.randn(4, 3).to(device)

    def sample(self, n, per_comp=False):
        if per_comp:
            y = torch.eye(3)
        else:
            y = torch.ones(n, 3).to(self.mu.device)
        return y @ self.mu.t()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
s = Sampler(device)
CALLS
"""


def test_flag_every_call_sets_decides_its_branch():
    # algostability#2: `if per_comp:` with the only call passing `per_comp=True`
    assert findings(FLAG_SRC.replace("CALLS", "out = s.sample(5, per_comp=True)")) == [("GL116", 14)]


def test_flag_left_at_its_default_decides_the_other_branch():
    assert findings(FLAG_SRC.replace("CALLS", "out = s.sample(5)")) == []
    assert findings(FLAG_SRC.replace("CALLS", "out = s.sample(5, per_comp=False)")) == []
    # with both calls, the one passing True still crashes (found with that call's arguments)
    calls = "out = s.sample(5, per_comp=True)\nout2 = s.sample(5)"
    assert findings(FLAG_SRC.replace("CALLS", calls)) == [("GL116", 14)]


KWARGS_SRC = """
import torch


class Miner:
    def sample(self, features, labels, **kwargs):
        return self._sample(features, labels, **kwargs)

    def _sample(self, features, labels, mask=None):
        if mask is None:
            mask = torch.zeros(len(labels), dtype=torch.bool, device=features.device)
        ids = torch.arange(len(labels))[torch.logical_not(mask)]
        return ids


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
feats = torch.randn(4, 3).to(device)
labels = torch.arange(4).to(device)
CALL
"""


def test_arguments_named_beside_a_forwarded_kwargs_mapping_are_known():
    # OML-Team/open-metric-learning#372: sample() hands its tensors on with **kwargs, which every
    # call leaves empty, so `mask` takes its default and is made on the features' device
    assert findings(KWARGS_SRC.replace("CALL", "ids = Miner().sample(feats, labels)")) == [("GL116", 12)]


def test_a_parameter_the_kwargs_mapping_may_fill_is_unknown():
    # a call that passes the mask through the mapping: `_sample` gets that (host) mask, so the
    # host table is indexed on the host (before the mapping was followed, the mask was unknown)
    call = "ids = Miner().sample(feats, labels, mask=torch.ones(4, dtype=torch.bool))"
    assert findings(KWARGS_SRC.replace("CALL", call)) == []
