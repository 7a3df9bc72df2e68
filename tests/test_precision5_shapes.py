"""Fifth precision pass (benchmarks/PRECISION5.md): the true shapes next to each hard negative
still report. Each test checks a positive and the negative it must be told apart from."""

from __future__ import annotations

from fixture_support import check


def codes(text, code):
    return [(d.code, d.line) for d in check(text, {code}) if d.code == code]


GL105_LOSS = '''import torch
import torch.nn as nn


class Loss(nn.Module):
    def forward(self, scores):
        BRANCH
        return (w * scores).sum()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(3, 3).to(device)
loss = Loss()(net(torch.randn(2, 3, device=device)))
'''


def test_gl105_factory_on_the_cuda_branch_or_outside_a_branch_still_reports():
    on_cuda_branch = "if torch.cuda.is_available():\n            w = torch.ones(scores.shape)\n        else:\n            w = torch.ones(scores.shape)"
    assert codes(GL105_LOSS.replace("BRANCH", on_cuda_branch), "GL105") == [("GL105", 8)]
    plain = "w = torch.ones(scores.shape)"
    assert codes(GL105_LOSS.replace("BRANCH", plain), "GL105") == [("GL105", 7)]
    other_test = "w = torch.ones(scores.shape)\n        if scores.dim() > 1:\n            w = w.cuda()"
    assert codes(GL105_LOSS.replace("BRANCH", other_test), "GL105") == [("GL105", 7)]


def test_gl105_cpu_branch_and_moved_under_availability_are_silent():
    cpu_branch = "if torch.cuda.is_available():\n            w = torch.ones(scores.shape).cuda()\n        else:\n            w = torch.ones(scores.shape)"
    assert codes(GL105_LOSS.replace("BRANCH", cpu_branch), "GL105") == []
    moved = "w = torch.ones(scores.shape)\n        if torch.cuda.is_available():\n            w = w.cuda()"
    assert codes(GL105_LOSS.replace("BRANCH", moved), "GL105") == []


GL403_EVAL = '''import torch
import torch.nn as nn

net = nn.Linear(3, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x in [torch.randn(2, 3)]:
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
FREEZE
net.eval()
outs = []
for x in [torch.randn(2, 3) for _ in range(3)]:
    outs.append(net(x))
'''


def test_gl403_frozen_model_is_silent_unfrozen_or_other_model_reports():
    assert codes(GL403_EVAL.replace("FREEZE", "net.requires_grad_(False)"), "GL403") == []
    assert codes(GL403_EVAL.replace("FREEZE", "net.requires_grad_(False)\nnet.requires_grad_(True)"), "GL403") == [("GL403", 15)]
    assert codes(GL403_EVAL.replace("FREEZE", "other = nn.Linear(3, 1).requires_grad_(False)"), "GL403") == [("GL403", 14)]
    assert codes(GL403_EVAL.replace("FREEZE", "pass"), "GL403") == [("GL403", 14)]


GL110_LOAD = '''import torch
import torch.nn as nn
PRELUDE
for _ in range(2):
    model = nn.Linear(3, 1)
if torch.cuda.is_available():
    model.load_state_dict(torch.load(path))
    model = model.cuda()
else:
    model.load_state_dict(torch.load(path))
'''


def test_gl110_cuda_branch_silent_cpu_branch_and_multi_process_report():
    one = GL110_LOAD.replace("PRELUDE", "path = 'weights.pt'")
    assert codes(one, "GL110") == [("GL110", 10)]
    ddp = GL110_LOAD.replace("PRELUDE", "import torch.distributed as dist\ndist.init_process_group('nccl')\npath = 'weights.pt'")
    assert codes(ddp, "GL110") == [("GL110", 9), ("GL110", 12)]


GL110_RELOAD = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1).to(device)
for _ in range(2):
    model(torch.randn(1, 3, device=device))


def fit():
    with open("best.pt", "wb") as f:
        torch.save(model.state_dict(), f)


BODY
'''


def test_gl110_reload_after_the_saving_function_ran_is_silent_other_branch_reports():
    after = "fit()\nwith open(\"best.pt\", 'rb') as f:\n    model.load_state_dict(torch.load(f))"
    assert codes(GL110_RELOAD.replace("BODY", after), "GL110") == []
    other_branch = "import os\nif not os.path.exists('best.pt'):\n    fit()\nelse:\n    model.load_state_dict(torch.load(\"best.pt\"))"
    assert codes(GL110_RELOAD.replace("BODY", other_branch), "GL110") == [("GL110", 19)]
    other_path = "fit()\nmodel.load_state_dict(torch.load('last.pt'))"
    assert codes(GL110_RELOAD.replace("BODY", other_path), "GL110") == [("GL110", 16)]


GL102_CMP = '''import torch
import torch.nn as nn

LINE
'''


def test_gl102_device_in_a_comparison_silent_placement_reports():
    cmp = "dev = torch.device('cpu')\nif dev == torch.device('cuda'):\n    raise SystemExit\nnet = nn.Linear(2, 2).to(dev)\nfor _ in range(2):\n    net(torch.randn(1, 2))"
    assert codes(GL102_CMP.replace("LINE", cmp), "GL102") == []
    placed = "net = nn.Linear(2, 2).to(torch.device('cuda'))\nfor _ in range(2):\n    net(torch.randn(1, 2))"
    assert codes(GL102_CMP.replace("LINE", placed), "GL102") == [("GL102", 4)]


GL401_STEP = '''import torch
import torch.nn as nn

x = torch.randn(4, 3)


def step(model, OPTARG):
    model(x).sum().backward()
    BUILD
    optimizer.step()


model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(5):
    step(model, CALLARG)
'''


def test_gl401_step_function_with_its_own_optimizer_silent_passed_optimizer_reports():
    own = GL401_STEP.replace("OPTARG", "lr").replace("BUILD", "optimizer = torch.optim.SGD(model.parameters(), lr=lr)").replace("CALLARG", "0.1")
    assert codes(own, "GL401") == []
    passed = GL401_STEP.replace("OPTARG", "optimizer").replace("BUILD", "pass").replace("CALLARG", "opt")
    assert codes(passed, "GL401") == [("GL401", 10)]


GL110_GPU_NONE = '''import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=None)
args = parser.parse_args()
model = nn.Linear(3, 1).cuda(args.gpu) if torch.cuda.is_available() else nn.Linear(3, 1)
x = torch.randn(2, 3).to(args.gpu)
for _ in range(2):
    model(x)
if args.gpu is None:
    checkpoint = torch.load("ckpt.pt")
else:
    checkpoint = torch.load("ckpt.pt", map_location="cuda:{}".format(args.gpu))
other = torch.load("other.pt")
'''


def test_gl110_no_map_location_to_a_name_known_none_on_that_branch():
    """moco's `if args.gpu is None: torch.load(p)`: `map_location=args.gpu` would be None there."""
    from fixture_support import fix

    out = fix(GL110_GPU_NONE, {"GL110"}, unsafe=True).text
    assert 'checkpoint = torch.load("ckpt.pt")\n' in out  # no fix offered on the None branch
    # elsewhere the flag is an int (`type=int`): `map_location=<int>` raises "'int' object is not
    # callable" in torch.load, so no fix is offered there either (fixes13)
    assert 'other = torch.load("other.pt")\n' in out
