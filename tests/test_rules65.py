"""rules65 (thirty-first session): G64-2 (GL116's message when the host operand also feeds a model
left on the host; the accelerator operand written once), G64-3 (GL116 names the operand a host value
was computed from, not a module-level constant it was normalised with), E63-5 (GL102: an unguarded
`.cuda()` on the run without the file's off-by-default `--cuda` flag, GFM PR#5), P50-9 (GL116: a
tuple of integer coordinate tensors handed to a model whose forward the file does not show, BasicSR
inference_dfdnet.py)."""

from __future__ import annotations

import textwrap

from fixture_support import check


def _diags(src: str, code: str):
    return [d for d in check(textwrap.dedent(src), {code}) if d.code == code]


# ------------------------------------------------------------------------------------- G64-2

GENERATE = """
import numpy as np
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, 8)
        self.head = nn.Linear(8, vocab)

    def forward(self, ids, labels=None):
        return self.head(self.emb(ids))


def generate(model, device):
    with torch.no_grad():
        cur_ids = torch.tensor([1, 2, 3]).unsqueeze(0).to("cpu")
        for _ in range(5):
            logits = model(cur_ids, labels=cur_ids)
            tok = int(torch.softmax(logits[0, -1], 0).argmax())
            cur_ids = torch.cat([cur_ids, torch.ones((1, 1)).long().to(device) * tok], dim=1)
    return cur_ids


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = LM(){move}
    generate(model, device)
"""


def test_operand_feeding_a_host_model_names_the_other_operand():
    # TextAugmentation-GPT2#8: `cur_ids` feeds the never-moved model; moving it to the token's
    # device moves the crash to the model call
    d = _diags(GENERATE.replace("{move}", ""), "GL116")
    assert [x.line for x in d] == [23]
    msg = d[0].message
    assert "`cur_ids` also feeds `model` on line 21, which is on the CPU" in msg
    assert "`.to(cur_ids.device)`" in msg
    assert "device=(torch.ones" not in msg  # not "make `cur_ids` on the token's device"
    assert msg.count("torch.ones((1, 1)).long().to(device) * tok") == 1  # said once (the operand itself)


HELPER = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def step(net, w):
    x = torch.zeros(2, 4)
    h = net(x)
    return h.sum() + (x * w).sum()


if __name__ == "__main__":
    net = nn.Linear(4, 4){move}
    w = torch.randn(2, 4, device=device)
    step(net, w)
"""


def test_no_safe_factory_fix_when_the_factory_feeds_a_host_model():
    # `device=w.device` on `torch.zeros` would break `net(x)` with `net` on the CPU
    d = _diags(HELPER.replace("{move}", ""), "GL116")
    assert [x.line for x in d] == [11]
    assert d[0].fix is None
    assert "`x` also feeds `net` on line 10" in d[0].message


def test_factory_fix_kept_when_the_model_is_moved():
    # control: the model is moved, `x` feeds no host module: the safe `device=w.device` fix stays
    d = _diags(HELPER.replace("{move}", ".to(device)"), "GL116")
    assert [x.line for x in d] == [11]
    assert d[0].fix is not None and "also feeds" not in d[0].message


def test_complex_accelerator_operand_written_once():
    # the model is moved here: `cur_ids` feeds no host module, and the long operand is named once
    src = GENERATE.replace("{move}", ".to(device)").replace(
        'cur_ids = torch.tensor([1, 2, 3]).unsqueeze(0).to("cpu")', "cur_ids = make_ids()").replace(
        "def generate(", 'def make_ids():\n    return torch.tensor([1, 2, 3]).unsqueeze(0).to("cpu")\n\n\ndef generate(')
    d = [x for x in _diags(src, "GL116") if "torch.cat" in textwrap.dedent(src).splitlines()[x.line - 1]]
    for x in d:
        assert x.message.count("torch.ones((1, 1)).long().to(device) * tok") <= 2  # the operand, and `.to(...)` once
        assert "or `.to((torch.ones" not in x.message


# ------------------------------------------------------------------------------------- G64-3

NORMALISE = """
import torch
import torch.nn as nn

MEAN = torch.tensor([0.5, 0.5, 0.5]).view(3, 1, 1)
STD = torch.tensor([0.2, 0.2, 0.2]).view(3, 1, 1)


class Runner:
    def __init__(self, device):
        self.device = device
        self.model = nn.Conv2d(3, 4, 3).to(device)

    def inference(self, image):
        image = (image - MEAN) / STD
        image = image.unsqueeze(0)
        return self.model(image)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    Runner(device).inference(torch.rand(3, 8, 8))
"""


def test_normalised_input_names_the_input_not_the_constant():
    d = _diags(NORMALISE, "GL116")
    assert [x.line for x in d] == [17]
    msg = d[0].message
    assert "computed on line 15 from `image`" in msg
    assert "on line 5" not in msg and "on line 6" not in msg  # not MEAN's / STD's factory


def test_arithmetic_of_constants_only_keeps_the_factory():
    # control: only module-level constants take part, so the first one says where it came from
    src = NORMALISE.replace("image = (image - MEAN) / STD", "image = MEAN * STD")
    d = _diags(src, "GL116")
    assert [x.line for x in d] == [17]
    assert "made by `torch.tensor(...)` on line 5" in d[0].message


# ------------------------------------------------------------------------------------- E63-5

FLAG = """
import argparse

import torch
import torch.nn as nn


def infer(args, model, x):
    {site}
    return model(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true"{default})
    args = parser.parse_args([])
    model = nn.Linear(3, 2)
    if args.cuda:
        model = model.cuda()
    {extra}
    print(infer(args, model, torch.randn(1, 3)))


if __name__ == "__main__":
    main()
"""


def _flag(site="x = x.cuda()", default="", extra="pass"):
    src = FLAG.replace("{site}", site).replace("{default}", default).replace("{extra}", extra)
    return [(d.line, d.message) for d in _diags(src, "GL102")]


def test_unguarded_cuda_on_the_flag_off_run_is_reported():
    got = _flag()
    assert [line for line, _ in got] == [9]
    assert "on a run without `--cuda`" in got[0][1] and "`if args.cuda:` (line 19)" in got[0][1]
    assert got[0][1].startswith("hard-coded `x.cuda()`")


def test_site_guarded_by_the_flag_is_silent():
    # GFM's PR: the image is moved only `if args.cuda:` (the committed GL116/ok_gfm_... shape)
    assert _flag(site="if args.cuda:\n        x = x.cuda()") == []


def test_conditional_expression_on_the_flag_is_silent():
    assert _flag(site="x = x.cuda() if args.cuda else x") == []


def test_flag_on_by_default_is_silent():
    assert _flag(default=", default=True") == []


def test_flag_set_by_the_file_is_silent():
    assert _flag(extra="args.cuda = True") == []


def test_cuda_only_api_is_silent():
    # the file needs CUDA anyway (`torch.cuda.synchronize()`): CUDA-only by design, as before
    assert _flag(extra="torch.cuda.synchronize()") == []


def test_another_cuda_flag_test_is_silent():
    # a second switch the file reads (`if use_gpu:`): which run is the default is not plain
    assert _flag(extra="use_gpu = args.cuda\n    if use_gpu:\n        print('gpu')") == []


def test_site_in_a_function_called_only_under_the_flag_is_silent():
    src = FLAG.replace("{site}", "x = x.cuda()").replace("{default}", "").replace("{extra}", "pass").replace(
        "print(infer(args, model, torch.randn(1, 3)))",
        "if args.cuda:\n        print(infer(args, model, torch.randn(1, 3)))")
    assert _diags(src, "GL102") == []


# ------------------------------------------------------------------------------------- P50-9

DFDNET = """
import numpy as np
import torch

from facenets.dfdnet import DFDNet


def get_part_location(landmarks):
    mean_eye = np.mean(landmarks[0:6], 0)
    loc_eye = np.hstack((mean_eye - 8 + 1, mean_eye + 8)).astype({dtype})
    loc_eye = torch.from_numpy(loc_eye).unsqueeze(0)
    mean_nose = np.mean(landmarks[6:9], 0)
    loc_nose = np.hstack((mean_nose - 8 + 1, mean_nose + 8)).astype({dtype})
    loc_nose = torch.from_numpy(loc_nose).unsqueeze(0)
    mean_mouth = np.mean(landmarks[9:20], 0)
    loc_mouth = np.hstack((mean_mouth - 8 + 1, mean_mouth + 8)).astype({dtype})
    loc_mouth = torch.from_numpy(loc_mouth).unsqueeze(0)
    return loc_eye, loc_nose, loc_mouth


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = DFDNet(64, dict_path="dict.pth").to(device)
    net.load_state_dict(torch.load("dfdnet.pth", map_location="cpu")["params"])
    net.eval()
    for landmarks in [np.random.rand(68, 2) * 256]:
        part_locations = get_part_location(landmarks)
        face = torch.randn(1, 3, 256, 256).to(device)
        try:
            with torch.no_grad():
                output = net(face, part_locations)
        except Exception as e:
            print(e)
"""


def test_integer_coordinates_to_an_unseen_model_are_silent():
    assert _diags(DFDNET.replace("{dtype}", "int"), "GL116") == []


def test_integer_coordinates_numpy_dtype_are_silent():
    assert _diags(DFDNET.replace("{dtype}", "np.int64"), "GL116") == []


def test_float_items_to_an_unseen_model_are_reported():
    # control: float tensors handed to the model are inputs, not slice bounds
    assert [d.line for d in _diags(DFDNET.replace("{dtype}", "np.float32"), "GL116")] == [31]


def test_integer_items_converted_to_float_are_reported():
    src = DFDNET.replace("{dtype}", "int").replace(
        "loc_mouth = torch.from_numpy(loc_mouth).unsqueeze(0)", "loc_mouth = torch.from_numpy(loc_mouth).float()")
    assert [d.line for d in _diags(src, "GL116")] == [31]


def test_integer_items_to_a_model_of_the_file_are_reported():
    # control: the file shows the model's class (here a stand-in with the same name): not P50-9's case
    src = DFDNET.replace("{dtype}", "int").replace(
        "from facenets.dfdnet import DFDNet\n",
        "import torch.nn as nn\n\n\nclass DFDNet(nn.Module):\n    def __init__(self, n, dict_path=None):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(3, n, 3)\n\n"
        "    def forward(self, x, locs):\n        return self.conv(x), [l.float() * self.conv.weight.mean() for l in locs]\n")
    lines = [d.line for d in _diags(src, "GL116")]
    assert lines, "expected the engine's report for a model of the file"


# ------------------------------------------------------------------------------------- E63-4

LAZY = """
import torch
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.anchor_vec = torch.ones(4)

    def forward(self, x):
        if self.anchor_vec.device != x.device:
            self.anchor_vec = self.anchor_vec.to(x.device)
        return self.fc(x) * self.anchor_vec


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Layer().to(device)
{wrap}
y = model(torch.randn(8, 4, device=device))
{read}
t = torch.randn(8, 4, device=device) / anchors
"""


def _lazy(wrap="model = nn.DataParallel(model)", read="anchors = model.module.anchor_vec"):
    src = LAZY.replace("{wrap}", wrap).replace("{read}", read)
    return [(d.line, d.fix is not None) for d in _diags(src, "GL106")]


def test_lazily_moved_attribute_read_through_data_parallel_is_reported():
    assert _lazy() == [(10, True)]


def test_read_moved_by_the_reader_is_silent():
    # the thread's fix (the committed GL116/ok_yolov4_... shape)
    assert _lazy(read="anchors = model.module.anchor_vec\nanchors = anchors.to(device)") == []


def test_read_converted_at_the_read_is_silent():
    assert _lazy(read="anchors = model.module.anchor_vec.to(device)") == []


def test_no_data_parallel_is_silent():
    # forward runs on the module itself: its lazy move reaches the attribute
    assert _lazy(wrap="pass", read="anchors = model.anchor_vec") == []


def test_read_not_through_module_is_silent():
    assert _lazy(read="anchors = torch.ones(4, device=device)") == []


def test_read_through_an_own_module_attribute_is_silent():
    # `self.module.anchor_vec` in a class of the file (an EMA copy keeps `self.module`): no wrapper known
    src = LAZY.replace("{wrap}", "model = nn.DataParallel(model)").replace(
        "{read}", "class Ema:\n    def __init__(self, m):\n        self.module = m\n\n    def anchors(self):\n"
                  "        return self.module.anchor_vec\n\n\nanchors = Ema(Layer()).anchors()")
    assert _diags(src, "GL106") == []
