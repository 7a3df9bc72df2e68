"""Flow engine shapes from the fourteenth session (pending real bugs of the seventeenth batch)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL105", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


_DER = """
import torch
import torch.nn as nn


def _der_update(preds, target, threshold=0.5):
    if isinstance(threshold, {types}):
        threshold = torch.tensor([threshold], dtype=preds.dtype)
    hypothesis = (preds > threshold).float()
    return (hypothesis - target).abs().sum()


class DER:
    def __init__(self, threshold={default}):
        self.threshold = threshold
        self.total = 0.0

    def update(self, preds, target):
        self.total += _der_update(preds, target, threshold=self.threshold).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2).to(device)
    metric = DER()
    x = torch.randn(8, 4).to(device)
    y = torch.rand(8, 2).to(device)
    metric.update(torch.sigmoid(model(x)), y)


main()
"""


def test_isinstance_float_of_a_float_literal_runs_its_branch():
    # pyannote/pyannote-audio#961: a float threshold (the metric's default, handed on through
    # `self.threshold`) becomes `torch.tensor([threshold])` on the host under
    # `isinstance(threshold, float)`, then meets the accelerator predictions
    assert findings(_DER.format(types="float", default="0.5")) == [("GL116", 9)]
    assert findings(_DER.format(types="(int, float)", default="0.5")) == [("GL116", 9)]


def test_isinstance_float_of_an_int_literal_skips_its_branch():
    # an int threshold never passes `isinstance(x, float)`: it stays a number
    assert findings(_DER.format(types="float", default="1")) == []
    # nor does a float pass `isinstance(x, int)`
    assert findings(_DER.format(types="int", default="0.5")) == []


def test_isinstance_of_a_class_not_decided():
    # a class the engine does not decide (a list, a class of the file): nothing is concluded, the
    # number on one path and the host tensor on the other stay unknown (np.ndarray is decided
    # since the twentieth session: a float is no array, `isinstance(0.5, (float, np.ndarray))` holds)
    assert findings(_DER.format(types="(float, list)", default="0.5")) == []


def test_is_tensor_of_a_number_runs_the_conversion():
    src = """
    import torch
    import torch.nn as nn


    def hinge(scores, margin=1.0):
        if not torch.is_tensor(margin):
            margin = torch.full((scores.shape[-1],), margin)
        return torch.clamp(margin - scores, min=0).mean()


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 3).to(device)
        x = torch.randn(8, 4).to(device)
        loss = hinge(model(x))
        loss.backward()


    main()
    """
    assert findings(src) == [("GL116", 9)]


def test_is_tensor_of_a_tensor_argument_decides_nothing():
    # a tensor given by one call and a number by another: which branch runs depends on the call
    src = """
    import torch
    import torch.nn as nn


    def hinge(scores, margin=1.0):
        if not torch.is_tensor(margin):
            margin = torch.full((scores.shape[-1],), margin)
        return torch.clamp(margin - scores, min=0).mean()


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 3).to(device)
        x = torch.randn(8, 4).to(device)
        loss = hinge(model(x), margin=torch.ones(3, device=device))
        loss.backward()


    main()
    """
    assert findings(src) == []


_EPOCH = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def get_loader(bs):
    ds = TensorDataset(torch.randn(64, 4){xdev}, torch.randint(0, 2, (64,)){ydev})
    return DataLoader(ds, batch_size=bs, shuffle=True)


def train_one_epoch(model, loader, optimizer, criterion, dev):
    model.train()
    for batch in loader:
        inputs, targets = batch
        inputs = inputs.to(dev){move}
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2){model_move}
    loader = get_loader(16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_one_epoch(model, loader, opt, nn.CrossEntropyLoss(), device)


main()
"""


def _epoch(xdev="", ydev="", move="", model_move=".to(device)"):
    return _EPOCH.format(xdev=xdev, ydev=ydev, move=move, model_move=model_move)


def test_batch_bound_in_the_callee_reported_there():
    # a training function given the model and the loader: its loop binds the batch and moves the
    # inputs only; the labels meet the model's outputs on the host (found with the call's
    # arguments, reported in the function, with its own device parameter in the fix)
    src = _epoch()
    assert findings(src, ("GL101",)) == [("GL101", 18)]
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL101")()], Options())
    (d,) = res.diagnostics
    assert "targets = targets.to(dev)" in d.message
    assert d.fix is not None and "targets = targets.to(dev)" in d.fix.edits[0].content


def test_batch_bound_in_the_callee_negatives():
    assert findings(_epoch(move="\n        targets = targets.to(dev)"), ("GL101",)) == []
    # the dataset's tensors are on the device already
    assert findings(_epoch(xdev=".to('cuda')", ydev=".to('cuda')"), ("GL101", "GL116")) == []
    # the model stays on the host
    assert findings(_epoch(model_move=""), ("GL101", "GL116")) == []


def test_batch_bound_in_the_callee_with_the_model_from_a_helper():
    # the same, with the model built (and moved) by a helper: the engine finds the mismatch with
    # the arguments of the call (a per-call-site finding); reported in the function all the same
    src = _EPOCH.replace("""    model = nn.Linear(4, 2){model_move}""", """    model = build_model(device)""").replace(
        "def train_one_epoch", '''def build_model(device):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return model.to(device)


def train_one_epoch''').format(xdev="", ydev="", move="")
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL101")()], Options())
    (d,) = res.diagnostics
    assert (d.line, d.code) == (23, "GL101")
    assert d.fix is not None and "targets = targets.to(dev)" in d.fix.edits[0].content


_HEAD = """
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.classifier = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.classifier(self.features(x)))


def main(finetune=True):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Backbone()
{body}
    x = torch.randn(4, 8, device=device)
    out = model(x)
    out.sum().backward()


main()
"""


def _head(body: str) -> list[tuple[str, int]]:
    return findings(_HEAD.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")), ("GL112", "GL116"))


def test_layer_replaced_after_the_move_is_on_the_host():
    # torchvision fine-tuning done in the wrong order (pytorch/pytorch#61704, a comment's Faster
    # R-CNN: the model moved, then `roi_heads.box_predictor = FastRCNNPredictor(...)`): the new
    # layer's weights are on the CPU when the moved model is called
    assert _head("""
        model.to(device)
        model.fc = nn.Linear(4, 3)
    """) == [("GL116", 23)]
    assert _head("""
        model = model.to(device)
        model.classifier[2] = nn.Linear(16, 4)
    """) == [("GL116", 23)]


def test_layer_replaced_after_the_move_fix_uses_the_move_device():
    reg = Registry.load()
    src = _HEAD.format(body="    model.to(device)\n    model.fc = nn.Linear(4, 3)")
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL116")()], Options())
    (d,) = res.diagnostics
    assert d.fix is not None and d.fix.edits[0].content == "nn.Linear(4, 3).to(device)"
    assert "line 21" in d.message


def test_layer_replaced_negatives():
    assert _head("""
        model.fc = nn.Linear(4, 3)
        model.to(device)
    """) == []  # the recipe's order: replace, then move
    assert _head("""
        model.to(device)
        model.fc = nn.Linear(4, 3)
        model = model.to(device)
    """) == []  # moved again
    assert _head("""
        model.to(device)
        model.fc = nn.Linear(4, 3).to(device)
    """) == []
    assert _head("""
        model.to(device)
        model.fc = nn.Identity()
    """) == []  # nothing to move
    assert _head("""
        model.to(device)
        model.fc = nn.Linear(4, 3)
        model.fc.to(device)
    """) == []  # the new layer moved itself
    assert _head("""
        model.to(device)
        model.classifier[2] = nn.Linear(16, 4)
        model.classifier.cuda()
    """) == []  # moved with the container that holds it
    assert _head("""
        model.fc = nn.Linear(4, 3)
    """) == []  # the model stays on the host: no accelerator in the call
    assert _head("""
        model.to(device)
        if torch.rand(1).item() > 0.5:
            model.fc = nn.Linear(4, 3)
    """) == []  # replaced on one path only: not concluded


_PACK = """
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.rnn = nn.GRU(16, 16, batch_first=True)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(x), {arg}, batch_first=True, enforce_sorted=False)
        return self.rnn(packed)[1]


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    enc = Encoder().to(device)
    x = torch.randint(0, 100, (4, 7)).to(device)
    lengths = torch.tensor([7, 5, 3, 2]){move}
    return enc(x, lengths)


main()
"""


def test_pack_padded_sequence_lengths_on_the_accelerator():
    # bentrevett/pytorch-seq2seq#156 and many more since torch 1.7: the lengths must be on the CPU
    src = _PACK.format(arg="lengths", move=".to(device)")
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL116")()], Options())
    (d,) = res.diagnostics
    assert d.line == 13 and "needs its lengths on the CPU" in d.message
    assert d.fix is not None and d.fix.edits[0].content == "lengths.cpu()" and d.fix.applicability == "safe"


def test_pack_padded_sequence_lengths_negatives():
    assert findings(_PACK.format(arg="lengths", move="")) == []  # on the CPU already
    assert findings(_PACK.format(arg="lengths.cpu()", move=".to(device)")) == []
    assert findings(_PACK.format(arg="lengths.tolist()", move=".to(device)")) == []
    # a forward input nobody in the file moves: "on the model's device" is GL105's premise, not a fact
    src = _PACK.format(arg="lengths", move="").replace("    return enc(x, lengths)\n", "    return enc\n")
    assert findings(src) == []


def test_local_of_unknown_kind_moved_to_a_known_accelerator():
    # fixtures18's SATURN (pretrain_saturn): a collate_fn's dict of tuples gives values of unknown
    # kind; `labels.to(device)` with `device` known to be an accelerator is there, and indexes a
    # class-weight table the function built on the host from `.cpu()` parts (torch.cat of them,
    # torch.unique with counts)
    src = """
    import numpy as np
    import torch


    def pretrain(model, loader, device, names):
        all_labels = []
        for batch in loader:
            for k in names:
                (_, labels) = batch[k]
                all_labels.append(labels.cpu())
        all_labels = torch.cat(all_labels)
        unique_labels, counts = torch.unique(all_labels, return_counts=True)
        weights = (1 / (counts / counts.sum()))[unique_labels]
        for batch in loader:
            for k in names:
                (data, labels) = batch[k]
                data, labels = data.to(device), labels.to(device)
                w = weights[labels].to(device)
                (model(data).sum(1) * w).sum().backward()


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)
        loader = [{"a": (torch.randn(3, 4), torch.tensor([0, 1, 1]))}]
        pretrain(model, loader, device, ["a"])


    main()
    """
    assert findings(src) == [("GL116", 19)]


def test_local_of_unknown_kind_device_read_from_a_tensor():
    base = """
    import torch


    def helper(wav, model, device):
        ref = model(wav.to(device))
        dev = {dev}
        out = wav.to(dev)
        return out.numpy()
    """
    # `dev = wav.device`: back where the input was (may be the host): silent
    assert findings(base.format(dev="wav.device"), ("GL109",)) == []
    # a device parameter the file never gives a value: taken for an accelerator, as for a tensor
    # moved with it (and as the retired per-binding analysis did)
    assert findings(base.format(dev="device"), ("GL109",)) == [("GL109", 9)]


def test_numpy_of_a_value_moved_to_a_known_accelerator_without_the_old_analysis():
    # GL109 answers from the flow engine only (DeviceFacts.on_accelerator retired there): a value
    # of unknown kind moved to a device the engine knows is an accelerator has no `.numpy()`
    src = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(3, 2).to(device)


    def to_numpy(wav):
        ref = model(wav.to(device))
        out = wav.to(ref.device)
        return out.numpy()
    """
    assert findings(src, ("GL109",)) == [("GL109", 11)]


_CUDA_HELPER = """
import numpy as np
import torch


def cuda(input_var, cuda_available=True):
    if cuda_available:
        return input_var.cuda()
    return input_var


def mixup(data, alpha):
    lam = max(np.random.beta(alpha, alpha), 0.5)
    lam_t = torch.FloatTensor([lam])
    return data * lam_t


def train(batches, cuda_available):
    for x in batches:
        x = cuda(x, cuda_available)
        x = mixup(x, 0.4)


def main():
    cuda_available = {flag}
    train([torch.randn(4, 3)], cuda_available)


main()
"""


def test_helper_moving_under_a_flag_every_call_binds_to_the_gpu_test():
    # ivadomed#1062: `cuda(x, cuda_available)` with `cuda_available = torch.cuda.is_available()`
    # handed down through `train`: on a GPU run the helper returns `x.cuda()` (the fall-through
    # `return input_var` runs only off the GPU), and the host one-element lambda tensor meets it
    assert findings(_CUDA_HELPER.format(flag="torch.cuda.is_available()")) == [("GL116", 15)]


def test_helper_moving_under_a_flag_negatives():
    # a flag the engine cannot tie to the GPU test: host on one path, device on the other: silent
    assert findings(_CUDA_HELPER.format(flag="len(__import__('sys').argv) > 1")) == []
    # the user's --cpu style flag set to the negation: the helper never moves
    assert findings(_CUDA_HELPER.format(flag="not torch.cuda.is_available()")) == []


def test_numpy_array_constructors_are_host_arrays():
    # fixtures18 item H (DeepForest's _predict_image_): `torch.tensor(image)` of a NumPy array the
    # caller made with np.zeros is on the host; the model it is fed to is on the device
    src = """
    import numpy as np
    import torch
    import torch.nn as nn


    def predict(model, image):
        x = torch.tensor(image).permute(2, 0, 1) / 255
        return model(x.unsqueeze(0))


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = nn.Conv2d(3, 4, 3).to(device)
        return predict(net, {image})


    main()
    """
    assert findings(src.format(image="np.zeros((8, 8, 3), dtype=np.float32)")) == [("GL116", 9)]
    # a tensor of unknown placement handed in: torch.tensor(t) stays where t is: silent
    assert findings(src.format(image="__import__('pickle').load(open('x', 'rb'))")) == []


def test_deepcopy_of_a_file_class_instance_keeps_its_attributes():
    # fixtures18 item C (diffusers#8528, SD3's `noise_scheduler_copy = copy.deepcopy(scheduler)`):
    # the copy's tables are where the original's are
    src = """
    import copy
    import torch


    class Sched:
        def __init__(self, n=1000):
            self.timesteps = torch.linspace(1, n, n)


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sched_copy = copy.deepcopy({arg})
    indices = torch.randint(0, 1000, (4,), device=device)
    t = sched_copy.timesteps[indices]
    """
    assert findings(src.format(arg="Sched()")) == [("GL116", 14)]
    assert findings(src.format(arg="object()")) == []  # not a class of the file: unknown


_ITER = """
import torch
import torch.nn as nn


class Batch:
    def __init__(self, text):
        self.text = text


class It:
    def __init__(self, seqs):
        self.seqs = seqs

    def __iter__(self):
        for i in range(0, len(self.seqs), 4):
            yield Batch(self.seqs[i:i + 4]{move})


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
emb = nn.Embedding(10, 4).to(device)
for b in It(torch.randint(0, 10, (8, 3))):
    out = emb(b.text)
"""


def test_iterator_class_items_are_what_its_generator_yields():
    # fixtures18 item G (VAE-Text-Generation#3): a torchtext-style iterator class of the file
    assert findings(_ITER.format(move="")) == [("GL116", 23)]
    assert findings(_ITER.format(move=".to(device)")) == []


def test_legacy_constructor_from_sizes_has_dimensions():
    # the one-hot helper of old training scripts: `torch.FloatTensor(b, n).zero_()` then
    # `scatter_(1, y.view(-1, 1), 1)` with device labels ("Expected all tensors to be on the same
    # device" in scatter); a legacy constructor from sizes is never a 0-dim tensor
    src = """
    import torch
    import torch.nn as nn


    def one_hot(y, n):
        y_onehot = torch.FloatTensor(y.size(0), n){fill}
        y_onehot.scatter_(1, y.view(-1, 1), 1)
        return y_onehot


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    y = torch.randint(0, 3, (4,), device=device)
    target = one_hot(y, 3)
    """
    assert findings(src.format(fill=".zero_()"), ("GL116",)) == [("GL116", 8)]
    assert findings(src.format(fill=".zero_().to(y.device)"), ("GL116",)) == []


def test_in_place_into_a_zero_dim_host_tensor():
    # LCCNet#4 (fixtures19 J19-1): `total = torch.tensor(0.0); total += err` with `err` on the
    # device: the target of an in-place operation is its output, a 0-dim host tensor included
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 3).to(device)
    out = model(torch.randn(8, 4).to(device))
    total = torch.tensor(0.0{dev})
    {op}
    """
    assert findings(src.format(dev="", op="total += out.norm()"), ("GL116",)) == [("GL116", 9)]
    assert findings(src.format(dev="", op="total.add_(out.sum())"), ("GL116",)) == [("GL116", 9)]
    # not in place: the 0-dim host operand may meet device tensors
    assert findings(src.format(dev="", op="total = total + out.norm()"), ("GL116",)) == []
    assert findings(src.format(dev=", device=device", op="total += out.norm()"), ("GL116",)) == []


def test_static_method_called_through_its_class():
    # SwapNet#47 (fixtures19 J19-3a): `GANLoss.rand_between(low, high)` makes `torch.rand(1)` on the
    # host and combines it with the module's buffer values on the device
    src = """
    import torch
    import torch.nn as nn


    class GANLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("real_label", torch.tensor((0.7, 1.1)))

        @staticmethod
        def rand_between(low, high):
            return torch.rand(1{dev}) * (high - low) + low

        def forward(self, prediction):
            low, high = self.real_label
            noise = GANLoss.rand_between(low, high)
            return ((prediction - noise) ** 2).mean()


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    crit = GANLoss().to(device)
    crit(torch.randn(4, 1, device=device))
    """
    assert findings(src.format(dev="")) == [("GL116", 13)]
    assert findings(src.format(dev=", device=low.device")) == []
