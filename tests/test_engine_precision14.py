"""Engine-rooted false positives of benchmarks/PRECISION14.md (E1-E3), each with its positive twin."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL105", "GL106", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("model.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


_ARCFACE = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class SphereProduct(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))

    def forward(self, input, label):
        cos_theta = F.linear(F.normalize(input), F.normalize(self.weight))
        one_hot = torch.zeros(cos_theta.size())
        {move}
        one_hot.scatter_(1, label.view(-1, 1), 1)
        return one_hot * cos_theta
"""


def test_e1_conditional_expression_on_a_device_test():
    # arcface-pytorch models/metrics.py: `one_hot.cuda() if cos_theta.is_cuda else one_hot`
    assert findings(_ARCFACE.format(move="one_hot = one_hot.cuda() if cos_theta.is_cuda else one_hot")) == []
    assert findings(_ARCFACE.format(move="one_hot = one_hot.cuda() if torch.cuda.is_available() else one_hot")) == []
    # the twin without the move, and a test that has nothing to do with devices: still reported
    assert findings(_ARCFACE.format(move="pass")) == [("GL105", 14)]
    assert findings(_ARCFACE.format(move="one_hot = one_hot.float() if label.dim() > 1 else one_hot")) == [("GL105", 14)]


_YOLO = """
import torch
import torch.nn as nn


class YOLOLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)

    def forward(self, xin):
        output = self.conv(xin)
        {dtype}
        tgt_mask = torch.zeros(output.shape).type(dtype)
        return output * tgt_mask
"""


def test_e2_tensor_type_chosen_on_a_device_test():
    # DeNA PyTorch_YOLOv3 models/yolo_layer.py
    assert findings(_YOLO.format(dtype="dtype = torch.cuda.FloatTensor if xin.is_cuda else torch.FloatTensor")) == []
    assert findings(_YOLO.format(dtype="dtype = torch.cuda.FloatTensor")) == []
    assert findings(_YOLO.format(dtype="dtype = torch.FloatTensor")) == [("GL105", 14)]


def test_e3_cuda_override_moves_the_plain_state():
    # CloserLookFewShot methods/matchingnet.py: the classes' own cuda() overrides move `self.c_0`
    # (the hard negative fixture is that file's shape); without the override GL116 reports the cell
    import pathlib

    path = pathlib.Path(__file__).parent / "fixtures" / "GL116" / "ok_matchingnet_cuda_override_moves_initial_state.py"
    src = path.read_text(encoding="utf-8")
    assert findings(src, ("GL116",)) == []
    start = src.index("    def cuda(self):\n        super().cuda()\n        self.c_0")
    end = src.index("return self\n", start) + len("return self\n")
    assert findings(src[:start] + src[end:], ("GL116",)) == [("GL116", 34)]


_WRAPPER = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Wrapper:
    def __init__(self):
        self.model = nn.Linear(4, 2)

    def predict(self, x):
        return self.model(x)


w = Wrapper()
{move}
print(w.predict(torch.randn(3, 4).to(device)))
"""


def test_attribute_moved_from_outside_the_class_is_not_the_host():
    # fixtures18 item E (DeepForest: `m.model.to("cuda")` by the caller): the wrapper's own methods
    # never move `self.model`, the script does; the engine said "host" in `predict` (GL112 false
    # positive); now where it is is unknown there
    sel = ("GL112", "GL116", "GL101")
    assert findings(_WRAPPER.format(move="w.model.to(device)"), sel) == []
    assert findings(_WRAPPER.format(move="w.model = w.model.to(device)"), sel) == []
    # nobody moves it: the model stays on the host while its input is moved (GL112)
    assert findings(_WRAPPER.format(move="pass"), sel) == [("GL112", 13)]


_CONVS = """
import torch
import torch.nn as nn


class CLSTM(nn.Module):
    def __init__(self, cuda):
        super().__init__()
        self.convs = [nn.Conv2d(1, 8, (3, 8), padding=(1, 0)) for _ in range(2)]
{move}
        self.lstm = nn.LSTM(8, 8)

    def forward(self, x):
        h = torch.cat([conv(x.unsqueeze(1)).squeeze(3) for conv in self.convs], 0)
        h = torch.transpose(h, 1, 2)
        out, _ = self.lstm(h)
        return out


use_cuda = torch.cuda.is_available()
model = CLSTM(use_cuda)
if use_cuda is True:
    model = model.cuda()
x = torch.randn(2, 5, 8)
if use_cuda is True:
    x = x.cuda()
print(model(x).device)
"""


def test_modules_of_a_plain_list_moved_by_a_loop():
    # PRECISION15 E1 (bamtercelboo's CLSTM models): `for conv in self.convs1: conv = conv.cuda()`
    # moves every conv in place (Module.cuda()), so their outputs are on the GPU with the LSTM
    moved = "        if cuda is True:\n            for conv in self.convs:\n                conv = conv.cuda()"
    assert findings(_CONVS.format(move=moved), ("GL116",)) == []
    assert findings(_CONVS.format(move=moved.replace("conv = conv.cuda()", "conv.cuda()")), ("GL116",)) == []
    # never moved: the list is not registered, `model.cuda()` leaves the convs on the host; the
    # run fails at the first conv, which GL107 reports (the twenty-second session's E34-2: the
    # failed call's output is no "CPU tensor" for a second GL116 at the LSTM downstream)
    assert findings(_CONVS.format(move=""), ("GL116", "GL107")) == [("GL107", 9)]



_LM_PACKED = 'import torch\nimport torch.nn as nn\n\n\nclass RNNLM(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.emb = nn.Embedding(10, 8)\n        self.rnn = nn.LSTM(8, 8, batch_first=True)\n        self.out = nn.Linear(8, 10)\n\n    def forward(self, x, lens, hidden=None):\n        emb_x = self.emb(x)\n        packed = nn.utils.rnn.pack_padded_sequence(emb_x, lens, batch_first=True, enforce_sorted=False)\n        outputs, hidden = self.rnn(packed, hidden)\n        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)\n        return self.out(outputs), hidden\n\n\nclass Decoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.lm = RNNLM()\n\n    def forward(self, prev_token):\n        lm_input = prev_token.unsqueeze(1)\n        lm_output, lm_state = self.lm(lm_input, torch.ones([prev_token.size(0)]))\n        return lm_output\n\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\ndec = Decoder().to(device)\nprint(dec(torch.zeros(3, dtype=torch.long, device=device)).shape)\n'
_LM_PLAIN = 'import torch\nimport torch.nn as nn\n\n\nclass RNNLM(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.emb = nn.Embedding(10, 8)\n        self.rnn = nn.LSTM(8, 8, batch_first=True)\n        self.out = nn.Linear(8, 10)\n\n    def forward(self, x, lens, hidden=None):\n        emb_x = self.emb(x)\n        outputs, hidden = self.rnn(emb_x * lens[:, None, None], hidden)\n        return self.out(outputs), hidden\n\n\nclass Decoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.lm = RNNLM()\n\n    def forward(self, prev_token):\n        lm_input = prev_token.unsqueeze(1)\n        lm_output, lm_state = self.lm(lm_input, torch.ones([prev_token.size(0)]))\n        return lm_output\n\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\ndec = Decoder().to(device)\nprint(dec(torch.zeros(3, dtype=torch.long, device=device)).shape)\n'


def test_lengths_handed_to_a_submodule_that_packs_them_stay_on_the_host():
    # PRECISION15 E2 (End-to-end-ASR-Pytorch decode.py): `torch.ones([batch])` handed to an RNN
    # language model as the lengths it packs with: they must stay on the CPU; GL105's safe
    # `device=` fix made it crash ("'lengths' argument should be a 1D CPU int64 tensor")
    assert findings(_LM_PACKED, ("GL105", "GL116")) == []
    # the same argument used as a device operand in the submodule: reported
    assert findings(_LM_PLAIN, ("GL105",)) == [("GL105", 25)]
