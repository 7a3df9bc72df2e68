"""Recall of issue 10 (misses of the fifth precision pass, benchmarks/PRECISION5.md): each test
checks the real shape that is now caught next to the look-alike that must stay silent."""

from __future__ import annotations

from fixture_support import check


def codes(text, code):
    return [(d.code, d.line) for d in check(text, {code}) if d.code == code]


def messages(text, code):
    return [d.message for d in check(text, {code}) if d.code == code]


# ---------------------------------------------------------------------------------------------
# GL301 / GL303: what DataParallel / DDP wraps is a module by the API's contract
# ---------------------------------------------------------------------------------------------

DP_SCRIPT = '''import torch
from models import *

device = "cuda" if torch.cuda.is_available() else "cpu"
net = WRAPPED
net = torch.nn.DataParallel(net)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    net(torch.randn(2, 3, device=device)).sum().backward()
    optimizer.step()
'''


def test_gl301_wrap_of_a_model_the_file_does_not_define_reports():
    assert codes(DP_SCRIPT.replace("WRAPPED", "SimpleDLA().to(device)"), "GL301") == [("GL301", 6)]
    # a model built by a factory of another module
    assert codes(DP_SCRIPT.replace("WRAPPED", "build_model(cfg).to(device)"), "GL301") == [("GL301", 6)]


def test_gl301_wrap_of_a_value_known_to_be_no_module_is_not_a_model_wrap():
    # GL103's shape: an optimizer handed to DataParallel is not a model to convert
    text = DP_SCRIPT.replace("WRAPPED", "torch.optim.SGD(model.parameters(), lr=0.1)")
    assert codes(text, "GL301") == []


def test_gl301_wrap_only_on_the_cpu_branch_or_in_an_evaluation_script_is_silent():
    both = DP_SCRIPT.replace(
        "net = torch.nn.DataParallel(net)\n",
        "if torch.cuda.is_available():\n    net = torch.nn.DataParallel(net).cuda()\n"
        "else:\n    net = torch.nn.DataParallel(net)\n",
    ).replace("WRAPPED", "SimpleDLA()")
    assert codes(both, "GL301") == [("GL301", 7)]  # the CUDA branch only
    evaluation = (
        "import torch\nfrom models import *\n\nnet = SimpleDLA().cuda()\nnet = torch.nn.DataParallel(net)\n"
        "net.eval()\nwith torch.no_grad():\n    print(net(torch.randn(2, 3).cuda()).argmax(1))\n"
    )
    assert codes(evaluation, "GL301") == []
    # the same wrap in a script that trains reports
    assert codes(evaluation + "net.train()\n", "GL301") == [("GL301", 5)]


DDP_SCRIPT = '''import torch
import torch.distributed as dist
from mypkg import build_model

dist.init_process_group("nccl")
SET_DEVICE
model = build_model().cuda()
model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(2, 3).cuda()).sum().backward()
    opt.step()
'''


def test_gl303_ddp_of_a_model_from_another_module():
    assert codes(DDP_SCRIPT.replace("SET_DEVICE", ""), "GL303") == [("GL303", 8)]
    text = DDP_SCRIPT.replace("SET_DEVICE", "import os\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))")
    assert codes(text, "GL303") == []


# ---------------------------------------------------------------------------------------------
# GL102: a CUDA default tensor type / default device set on every run
# ---------------------------------------------------------------------------------------------

GL102_SCRIPT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train():
    SETUP
    model = torch.nn.Linear(3, 1).to(device)
    return model(torch.randn(2, 3, device=device))


if __name__ == "__main__":
    MAIN
    train()
'''


def gl102(setup="pass", main="pass"):
    return codes(GL102_SCRIPT.replace("SETUP", setup).replace("MAIN", main), "GL102")


def test_gl102_unconditional_cuda_default_reports_in_a_file_that_checks_availability():
    assert gl102(main="torch.set_default_tensor_type('torch.cuda.FloatTensor')") == [("GL102", 13)]
    assert gl102(main="torch.set_default_tensor_type(torch.cuda.HalfTensor)") == [("GL102", 13)]
    assert gl102(main='torch.set_default_device("cuda")') == [("GL102", 13)]
    # in a function the script runs on every path
    assert gl102(setup="torch.set_default_tensor_type('torch.cuda.FloatTensor')") == [("GL102", 7)]


def test_gl102_guarded_or_chosen_cuda_default_is_silent():
    guarded = "if torch.cuda.is_available():\n        torch.set_default_tensor_type('torch.cuda.FloatTensor')"
    assert gl102(main=guarded) == []
    chosen = "torch.set_default_tensor_type('torch.cuda.FloatTensor' if torch.cuda.is_available() else 'torch.FloatTensor')"
    assert gl102(main=chosen) == []
    assert gl102(main="torch.set_default_tensor_type('torch.FloatTensor')") == []
    # the function that sets it runs only under a test
    text = GL102_SCRIPT.replace("SETUP", "pass").replace("MAIN", "if torch.cuda.device_count():\n        setup()")
    text += "\n\ndef setup():\n    torch.set_default_tensor_type('torch.cuda.FloatTensor')\n"
    assert codes(text, "GL102") == []
    # a file that stops where CUDA is missing is CUDA-only by design
    stop = "assert torch.cuda.is_available()\n    torch.set_default_tensor_type('torch.cuda.FloatTensor')"
    assert gl102(main=stop) == []


def test_gl102_fix_makes_the_default_conditional():
    from fixture_support import fix

    text = GL102_SCRIPT.replace("SETUP", "pass").replace("MAIN", 'torch.set_default_device("cuda")')
    out = fix(text, {"GL102"}, unsafe=True).text
    assert 'torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")' in out
    assert codes(out, "GL102") == []


def test_gl102_cuda_default_in_a_file_without_availability_check_is_one_of_its_sites():
    text = "import torch\n\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\nfor i in range(2):\n    x = torch.randn(3).cuda()\n"
    assert codes(text, "GL102") == [("GL102", 3)]
    assert "also hard-coded on line 5" in messages(text, "GL102")[0]


def test_gl102_torch_cuda_attribute_is_not_a_cuda_flag():
    # `"cuda" if torch.cuda.is_available()`: the `cuda` of `torch.cuda` is no `--cuda` flag that
    # would make the file CUDA-only by design
    text = GL102_SCRIPT.replace("SETUP", "pass").replace("MAIN", "torch.set_default_tensor_type('torch.cuda.FloatTensor')")
    assert codes(text, "GL102") == [("GL102", 13)]
    flagged = text.replace("if __name__", "USE_CUDA = True\nif USE_CUDA:\n    pass\nif __name__")
    assert codes(flagged, "GL102") == []


# ---------------------------------------------------------------------------------------------
# GL501: casts and in-place fills between the factory and the move
# ---------------------------------------------------------------------------------------------

GL501_SCRIPT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
for step in range(3):
    x = EXPR
'''


def gl501(expr):
    return codes(GL501_SCRIPT.replace("EXPR", expr), "GL501")


def test_gl501_factory_cast_or_filled_then_moved_reports():
    assert gl501("torch.ones(4).float().to(device)") == [("GL501", 5)]
    assert gl501("torch.arange(4).long().cuda()") == [("GL501", 5)]
    assert gl501("torch.zeros((4, 2)).uniform_(-1.0, 1.0).to(device)") == [("GL501", 5)]
    assert gl501("torch.zeros(4, 3).fill_(2).to(device)") == [("GL501", 5)]


def test_gl501_host_data_or_a_cpu_generator_fill_is_silent():
    assert gl501("torch.tensor(0).float().cuda()") == []  # host data: device= would still copy it
    assert gl501("torch.from_numpy(a).float().to(device)") == []
    g = "torch.empty(4).normal_(generator=torch.Generator().manual_seed(0)).to(device)"
    assert gl501(g) == []


def test_gl501_fix_keeps_the_cast_and_is_unsafe_for_a_random_fill():
    from fixture_support import fix

    out = fix(GL501_SCRIPT.replace("EXPR", "torch.ones(4).float().to(device)"), {"GL501"}, unsafe=False).text
    assert "x = torch.ones(4, device=device).float()\n" in out
    noise = GL501_SCRIPT.replace("EXPR", "torch.zeros((4, 2)).uniform_(-1.0, 1.0).to(device)")
    assert fix(noise, {"GL501"}, unsafe=False).text == noise  # the device's generator draws it: unsafe
    out = fix(noise, {"GL501"}, unsafe=True).text
    assert "x = torch.zeros((4, 2), device=device).uniform_(-1.0, 1.0)\n" in out


# ---------------------------------------------------------------------------------------------
# GL001: other linters' entries in a shared `# noqa`
# ---------------------------------------------------------------------------------------------

CLEAN = "import torch\n\n\ndef f(x):  COMMENT\n    return x\n"
MOVED = 'import torch\n\nopt = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)\nopt.to("cpu")  COMMENT\n'


def gl001(template, comment):
    text = template.replace("COMMENT", comment)
    return [(d.code, d.line, d.message) for d in check(text, {"GL001", "GL103"}) if d.code == "GL001"]


def test_gl001_other_linters_entries_on_a_clean_line_are_left_alone():
    assert gl001(CLEAN, "# noqa: max-complexity") == []
    assert gl001(CLEAN, "# noqa:") == []
    assert gl001(CLEAN, "# noqa: invalid-name") == []  # pylint's, though close to `invalid-noqa`
    assert gl001(CLEAN, "# noqa: unused-import") == []


def test_gl001_typos_of_rule_names_and_codes_report_anywhere():
    found = gl001(CLEAN, "# noqa: hardcoded-cudaa")
    assert [(c, line) for c, line, _ in found] == [("GL001", 4)]
    assert "did you mean `hardcoded-cuda`?" in found[0][2]
    assert [(c, line) for c, line, _ in gl001(CLEAN, "# noqa: GL13")] == [("GL001", 4)]
    assert [(c, line) for c, line, _ in gl001(CLEAN, "# gpulint: ignore[]")] == [("GL001", 4)]
    assert [(c, line) for c, line, _ in gl001(CLEAN, "# gpulint: ignore[max-complexity]")] == [("GL001", 4)]


def test_gl001_other_entries_report_where_a_finding_shows_anyway():
    for comment in ("# noqa: max-complexity", "# noqa:", "# noqa: optimiser-moved"):
        found = gl001(MOVED, comment)
        assert [(c, line) for c, line, _ in found] == [("GL001", 4)], comment
