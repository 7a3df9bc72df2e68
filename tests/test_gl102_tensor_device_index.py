"""GL102 and a tensor's own device: `if not tensor.is_cuda:` is not a CUDA flag of the file (G53-4),
and `.cuda(<the GPU index of a tensor>)` (`t.get_device()`, or a helper of the file returning it,
as allennlp's `util.get_device_of`) is a hard-coded site whose fix is `.to(t.device)` (G53-2).
Source: https://github.com/lyutyuh/gazetteer-NER-acl19/issues/5. Hard negatives: a flag the file
names `is_cuda` itself, `.cuda(args.gpu)` / `.cuda(local_rank)` (a device the user chose), a helper
that returns something else, a site under `if x.is_cuda:`, and a file with an availability test."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HELPER = """
import torch
import torch.nn as nn


def get_device_of(tensor):
    if not tensor.is_cuda:
        return -1
    return tensor.get_device()


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.bias = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return self.lin(x) + BIAS


model = M().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(3, 4).cuda()
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(get_device_of(x))
"""


def _src(bias="self.bias"):
    return textwrap.dedent(HELPER.replace("BIAS", bias))


def _found(src):
    return [(d.line, d.message) for d in check(src, ["GL102"]) if d.code == "GL102"]


def test_tensor_is_cuda_in_a_helper_is_not_a_cuda_flag():
    found = _found(_src())
    assert [line for line, _ in found] == [22]
    assert "also hard-coded on line 25" in found[0][1]


def test_cuda_of_a_helper_returning_a_tensor_gpu_index_is_a_site():
    found = _found(_src("self.bias.cuda(get_device_of(x))"))
    assert [line for line, _ in found] == [19]
    assert "lines 22, 25" in found[0][1]


def test_cuda_of_get_device_is_a_site_and_the_fix_follows_the_tensor():
    src = _src("self.bias.cuda(x.get_device())")
    assert [line for line, _ in _found(src)] == [19]
    out = fix(src, ["GL102"], unsafe=True).text
    assert "return self.lin(x) + self.bias.to(x.device)" in out
    assert "model = M().to(device)" in out
    assert _found(out) == []


def test_the_fix_of_a_helper_index_names_the_helper_argument():
    out = fix(_src("self.bias.cuda(get_device_of(x))"), ["GL102"], unsafe=True).text
    assert "self.bias.to(x.device)" in out


def test_a_static_method_helper_read_off_its_class():
    src = _src("self.bias.cuda(util.get_device_of(x))").replace(
        "def get_device_of(tensor):", "class util:\n    @staticmethod\n    def get_device_of(tensor):"
    ).replace("    if not tensor.is_cuda:\n        return -1\n    return tensor.get_device()",
              "        if not tensor.is_cuda:\n            return -1\n        return tensor.get_device()"
              ).replace("print(get_device_of(x))", "print(util.get_device_of(x))")
    assert [line for line, _ in _found(src)] == [21]


def test_a_flag_the_file_calls_is_cuda_stays_a_flag():
    src = _src().replace("model = M().cuda()", "is_cuda = len(__import__('sys').argv) > 1\nif is_cuda:\n    model = M().cuda()\nelse:\n    model = M()")
    assert _found(src) == []
    src = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Runner:
        def __init__(self, cuda):
            self.is_cuda = cuda
            self.model = nn.Linear(4, 2)
            if self.is_cuda:
                self.model = self.model.cuda()


    r = Runner(True)
    opt = torch.optim.SGD(r.model.parameters(), lr=0.1)
    for step in range(2):
        x = torch.randn(3, 4).cuda()
        loss = r.model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert _found(src) == []


def test_cuda_of_a_user_chosen_index_is_not_a_site():
    for idx in ("args.gpu", "local_rank", "int(os.environ['LOCAL_RANK'])", "rank_of(x)"):
        src = textwrap.dedent(f"""
        import os
        import argparse
        import torch
        import torch.nn as nn

        p = argparse.ArgumentParser()
        p.add_argument("--gpu", type=int, default=0)
        args = p.parse_args()
        local_rank = int(os.environ.get("LOCAL_RANK", 0))


        def rank_of(t):
            return int(os.environ.get("LOCAL_RANK", 0))


        model = nn.Linear(4, 2).cuda({idx.replace('x', 'torch.zeros(1)') if idx == 'rank_of(x)' else idx})
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            loss = model(torch.randn(3, 4).cuda({idx.replace('x', 'torch.zeros(1)') if idx == 'rank_of(x)' else idx})).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """)
        assert _found(src) == [], idx


def test_cuda_of_get_device_under_an_is_cuda_test_is_silent():
    src = textwrap.dedent("""
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 2)
    bias = torch.zeros(2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        x = torch.randn(3, 4)
        b = bias.cuda(x.get_device()) if x.is_cuda else bias
        loss = (model(x) + b).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert _found(src) == []


def test_cuda_of_get_device_in_a_file_with_an_availability_test_is_silent():
    src = _src("self.bias.cuda(x.get_device())").replace(
        "model = M().cuda()", "model = M().cuda() if torch.cuda.is_available() else M()"
    ).replace("x = torch.randn(3, 4).cuda()", "x = torch.randn(3, 4).to(next(model.parameters()).device)")
    assert _found(src) == []


OPERAND = """
import torch
import torch.nn as nn


class FocalLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = torch.ones(5, 1)

    def forward(self, inputs, targets):
        BODY
        p = inputs.softmax(1).gather(1, targets.view(-1, 1))
        return -(self.alpha[targets] * p.log()).mean()


net = nn.Linear(4, 5)
crit = FocalLoss()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(2):
    loss = crit(net(torch.randn(8, 4)), torch.randint(0, 5, (8,)))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_cuda_under_one_operand_of_an_and_is_silent():
    # andy-yun/pytorch-0.4-yolov3 focal_loss.py (corpus33): G53-4 made the file's `.is_cuda`
    # test no flag; the site follows the data
    body = "if inputs.is_cuda and not self.alpha.is_cuda:\n            self.alpha = self.alpha.cuda()"
    assert _found(textwrap.dedent(OPERAND.replace("BODY", body))) == []


def test_cuda_in_the_else_of_a_negated_operand_test_is_silent():
    # hansen7/OcCo chamfer_distance.py (corpus39): `if not xyz1.is_cuda: cpu kernel else: .cuda()`
    body = "if not inputs.is_cuda:\n            pass\n        else:\n            self.alpha = self.alpha.cuda()"
    assert _found(textwrap.dedent(OPERAND.replace("BODY", body))) == []


def test_cuda_in_the_body_of_a_negated_operand_test_is_a_site():
    body = "if not inputs.is_cuda:\n            self.alpha = self.alpha.cuda()"
    assert [line for line, _ in _found(textwrap.dedent(OPERAND.replace("BODY", body)))] == [13]
