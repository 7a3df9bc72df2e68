"""GL102 in a script that falls back to the CPU (jiant#776, G60-2): the model is moved to
`device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`, and a helper the script
runs makes a tensor with a bare `.cuda()` that no test about devices guards: every CPU-only run
fails there ("Torch not compiled with CUDA enabled"), although the engine cannot see what the
tensor meets (`torch.sparse.torch.eye` is unknown to it). Hard negatives: the PR's guarded move,
no model placed on the run-time device, sites in modules, in functions nobody calls, under `try`."""

from __future__ import annotations

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)


def make_one_hot(batch, depth=2):
    ONES
    return ones.index_select(0, batch)


for step in range(2):
    x = torch.randn(8, 4, device=device)
    preds = make_one_hot(model(x).argmax(dim=-1))
"""


def found(src: str):
    return [d for d in check(src, {"GL102"}) if d.code == "GL102"]


def lines(ones: str = "ones = torch.sparse.torch.eye(depth).cuda()", src: str = SRC) -> list[int]:
    return [d.line for d in found(src.replace("ONES", ones))]


def test_unguarded_cuda_in_a_helper_the_script_runs_is_reported():
    ds = found(SRC.replace("ONES", "ones = torch.sparse.torch.eye(depth).cuda()"))
    assert [d.line for d in ds] == [10]
    assert "the file moves its model to `device` on line 6" in ds[0].message


def test_the_fix_routes_it_through_the_run_time_device():
    src = SRC.replace("ONES", "ones = torch.sparse.torch.eye(depth).cuda()")
    out = fix(src, {"GL102"}, True).text
    assert "ones = torch.sparse.torch.eye(depth).to(device)" in out
    assert ".cuda()" not in out


def test_the_prs_guarded_move_stays_silent():
    guarded = "ones = torch.sparse.torch.eye(depth)\n    if torch.cuda.is_available():\n        ones = ones.cuda()"
    assert lines(guarded) == []


def test_a_flag_test_or_try_stays_silent():
    assert lines("ones = torch.eye(depth).cuda() if device.type == 'cuda' else torch.eye(depth)") == []
    assert lines("try:\n        ones = torch.eye(depth).cuda()\n    except RuntimeError:\n        ones = torch.eye(depth)") == []


def test_no_model_on_the_run_time_device_stays_silent():
    src = SRC.replace("model = nn.Linear(4, 2).to(device)", "model = nn.Linear(4, 2)")
    assert lines(src=src) == []


def test_a_helper_nobody_calls_stays_silent():
    src = SRC.replace("    preds = make_one_hot(model(x).argmax(dim=-1))", "    preds = model(x).argmax(dim=-1)")
    assert lines(src=src) == []


def test_a_module_method_stays_silent():
    src = SRC.replace("def make_one_hot(batch, depth=2):\n    ONES\n    return ones.index_select(0, batch)\n", """class OneHot(nn.Module):
    def forward(self, batch, depth=2):
        ones = torch.sparse.torch.eye(depth).cuda()
        return ones.index_select(0, batch)
""").replace("make_one_hot(", "OneHot()(")
    assert lines(src=src) == []


def test_a_nested_helper_handed_on_stays_silent():
    src = SRC.replace("def make_one_hot(batch, depth=2):\n    ONES\n    return ones.index_select(0, batch)\n", """def maker():
    def make(batch, depth=2):
        ones = torch.sparse.torch.eye(depth).cuda()
        return ones.index_select(0, batch)
    return make
""").replace("preds = make_one_hot(", "preds = maker()(")
    assert lines(src=src) == []


def test_a_nested_helper_called_by_its_function_is_reported():
    src = SRC.replace("def make_one_hot(batch, depth=2):\n    ONES\n    return ones.index_select(0, batch)\n", """class Task:
    def update(self, logits):
        def make_one_hot(batch, depth=2):
            ones = torch.sparse.torch.eye(depth).cuda()
            return ones.index_select(0, batch)

        return make_one_hot(logits.argmax(dim=-1))
""").replace("    preds = make_one_hot(model(x).argmax(dim=-1))", "    preds = Task().update(model(x))")
    assert lines(src=src) == [12]


def test_no_fix_when_the_device_is_bound_after_the_helper_runs():
    # textual_inversion's `load_model_from_config`: `model.cuda()` runs before `device` is bound
    src = """
import torch
import torch.nn as nn


def load_model():
    model = nn.Linear(4, 2)
    model.cuda()
    return model


if __name__ == "__main__":
    model = load_model()
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    model = model.to(device)
    print(model(torch.randn(2, 4, device=device)))
"""
    ds = found(src)
    assert [d.line for d in ds] == [8]
    assert ds[0].fix is None


# the statement form of the fallback (G48-2, DAGMM, pytorch/pytorch#50401): no device name, the model
# moved with `.cuda()` only under `if torch.cuda.is_available():`

GUARDED = """
import torch
import torch.nn as nn


def to_var(x):
    if torch.cuda.is_available():
        x = x.cuda()
    return x


model = nn.Linear(3, 2)
if torch.cuda.is_available():
    model.cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    z = model(to_var(torch.randn(4, 3)))
    W
    (z * w).sum().backward()
    opt.step()
"""


def test_unguarded_cuda_beside_a_guarded_model_move_is_reported():
    ds = found(GUARDED.replace("W", "w = torch.ones(2).cuda()"))
    assert [d.line for d in ds] == [18]
    assert "moves its model to CUDA only when CUDA is available (line 14)" in ds[0].message
    assert ds[0].fix is None  # no device name to route it through


def test_guarded_beside_a_guarded_model_move_stays_silent():
    assert lines(src=GUARDED.replace("W", "w = to_var(torch.ones(2))")) == []
    assert lines(src=GUARDED.replace("W", "w = torch.ones(2).cuda() if torch.cuda.is_available() else torch.ones(2)")) == []


def test_only_tensors_moved_under_the_test_is_no_evidence():
    src = GUARDED.replace("if torch.cuda.is_available():\n    model.cuda()\n", "")
    assert lines(src=src.replace("W", "w = torch.ones(2).cuda()")) == []


def test_a_second_model_moved_unguarded_is_left_alone():
    # which model the fallback is for is not known without a device name
    src = GUARDED.replace("W", "w = torch.ones(2)").replace(
        "opt = torch.optim", "critic = nn.Linear(2, 1).cuda()\nopt = torch.optim")
    assert lines(src=src) == []


def test_a_cuda_flag_makes_the_file_cuda_only_by_design():
    # `use_cuda = torch.cuda.is_available()` / `if use_cuda:` (PyTorch-GAN's `if cuda:`): the rule's
    # CUDA-only-by-design reading, as before
    src = GUARDED.replace("if torch.cuda.is_available():\n    model.cuda()", "use_cuda = torch.cuda.is_available()\nif use_cuda:\n    model.cuda()")
    assert lines(src=src.replace("W", "w = torch.ones(2).cuda()")) == []
