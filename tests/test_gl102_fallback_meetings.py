"""GL102 in a file that falls back to the CPU: an unguarded hard-coded `.cuda()` whose tensor meets
a tensor or module placed on the run-time device (CUDA or the CPU) fails on the CPU run
(PRECISION17.md M1, chenyuntc/pytorch-book Chapter11/main.py). Where the analysis cannot tell
(a guarded branch, a function only called under a guard, a method, a CUDA-only file, a device that
is not a CUDA/CPU choice) the rule stays silent."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
"""


def gl102(body: str, head: str = HEAD) -> list[int]:
    src = textwrap.dedent(head) + textwrap.dedent(body)
    return [d.line for d in check(src, ["GL102"])]


def line_of(body: str, needle: str, head: str = HEAD) -> int:
    src = textwrap.dedent(head) + textwrap.dedent(body)
    return next(i for i, ln in enumerate(src.splitlines(), 1) if needle in ln)


# positives ---------------------------------------------------------------------------------------

LOOP = """
for step in range(3):
    x = torch.randn(2, 4).to(device)
    mask = torch.ones(2, 4)
    out = model(x) * mask.cuda()
"""


def test_cuda_meeting_an_output_on_the_fallback_device_fires():
    assert gl102(LOOP) == [line_of(LOOP, "mask.cuda()")]


def test_the_fix_routes_the_site_through_the_run_time_device():
    src = textwrap.dedent(HEAD) + textwrap.dedent(LOOP)
    out = fix(src, ["GL102"], unsafe=True).text
    assert "mask.to(device)" in out and ".cuda()" not in out


ASSIGNED = """
def train():
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        mask = torch.ones(2, 4).cuda()
        out = model(x + mask)


if __name__ == "__main__":
    train()
"""


def test_cuda_bound_to_a_name_then_meeting_the_fallback_device_fires():
    assert gl102(ASSIGNED) == [line_of(ASSIGNED, ".cuda()")]


FLAG_CHOICE = """
import torch as t
from torch import nn


class Config:
    use_gpu = False


opt = Config()


def generate(model):
    device = t.device("cuda") if opt.use_gpu else t.device("cpu")
    src = t.ones(3, 1).to(device)
    src_mask = t.zeros(3, 3)
    return model(src, src_mask.cuda())


def train():
    device = t.device("cuda") if opt.use_gpu else t.device("cpu")
    model = nn.Bilinear(1, 3, 2)
    model.to(device)
    for step in range(3):
        if step % 2 == 0:
            generate(model)


if __name__ == "__main__":
    train()
"""


def test_a_user_flag_choosing_cuda_or_cpu_is_a_fallback_not_a_cuda_only_design():
    assert gl102("", head=FLAG_CHOICE) == [line_of("", "src_mask.cuda()", head=FLAG_CHOICE)]


# negatives ---------------------------------------------------------------------------------------

def test_cuda_under_a_device_test_is_silent():
    assert gl102("""
    use_cuda = torch.cuda.is_available()
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        mask = torch.ones(2, 4)
        if use_cuda:
            mask = mask.cuda()
        out = model(x) * mask
    """) == []


def test_cuda_in_a_conditional_expression_is_silent():
    assert gl102("""
    use_cuda = torch.cuda.is_available()
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        out = model(x) * (torch.ones(2, 4).cuda() if use_cuda else torch.ones(2, 4))
    """) == []


def test_a_function_only_called_under_an_availability_test_is_silent():
    assert gl102("""
    def warm_up():
        x = torch.randn(2, 4).to(device)
        return model(x) * torch.ones(2, 4).cuda()


    if torch.cuda.is_available():
        warm_up()
    for step in range(3):
        model(torch.randn(2, 4).to(device))
    """) == []


def test_cuda_inside_try_with_a_handler_is_silent():
    assert gl102("""
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        try:
            out = model(x) * torch.ones(2, 4).cuda()
        except RuntimeError:
            out = model(x)
    """) == []


def test_a_method_called_unguarded_fires():
    """JoshVarty/AlphaZeroSimple#7: `Trainer.train` sends batches with `.cuda()` to a model placed on
    the run-time device; the script calls the method on every run."""
    body = """
    class Trainer:
        def __init__(self, net):
            self.net = net

        def run(self, x):
            x = x.contiguous().cuda()
            return self.net(x)


    for step in range(3):
        Trainer(model).run(torch.randn(2, 4))
    """
    assert gl102(body) == [line_of(body, ".cuda()")]


def test_a_method_called_under_a_device_test_is_silent():
    assert gl102("""
    class Helper:
        def run(self, x):
            return model(x) * torch.ones(2, 4).cuda()


    for step in range(3):
        if torch.cuda.is_available():
            Helper().run(torch.randn(2, 4).to(device))
    """) == []


def test_a_method_the_file_never_calls_is_silent():
    assert gl102("""
    class Helper:
        def run(self, x):
            return model(x) * torch.ones(2, 4).cuda()


    for step in range(3):
        model(torch.randn(2, 4).to(device))
    """) == []


def test_a_loop_test_that_only_looks_like_a_device_word_does_not_guard():
    body = """
    examples = list(range(8))
    i = 0
    while i < len(examples):
        out = model(torch.randn(2, 4).to(device)) * torch.ones(2, 4).cuda()
        i += 4
    """
    assert gl102(body) == [line_of(body, ".cuda()")]


def test_cuda_after_an_early_exit_on_a_device_test_is_silent():
    assert gl102("""
    def step(x):
        if device.type != "cuda":
            return model(x.to(device))
        return model(x.cuda())


    for i in range(3):
        step(torch.randn(2, 4))
    """) == []


def test_cuda_after_an_early_exit_on_another_test_fires():
    body = """
    def step(x):
        if x.shape[0] == 0:
            return None
        return model(x.to(device)) * torch.ones(2, 4).cuda()


    for i in range(3):
        step(torch.randn(2, 4))
    """
    assert gl102(body) == [line_of(body, ".cuda()")]


def test_a_cuda_only_file_is_silent():
    assert gl102("""
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        out = model(x) * torch.ones(2, 4).cuda()
        torch.cuda.synchronize()
    """) == []


def test_a_file_that_stops_without_cuda_is_silent():
    assert gl102("""
    assert torch.cuda.is_available(), "needs a GPU"
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        out = model(x) * torch.ones(2, 4).cuda()
    """) == []


def test_a_device_from_the_command_line_is_not_a_cuda_cpu_choice():
    head = """
    import argparse
    import torch
    import torch.nn as nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    model = nn.Linear(4, 4).to(device)
    """
    assert gl102("""
    for step in range(3):
        x = torch.randn(2, 4).to(device)
        out = model(x) * torch.ones(2, 4).cuda()
    """, head=head) == []


def test_cuda_meeting_only_cuda_values_is_no_meeting():
    # (rules62, G60-2: the unguarded `.cuda()` sites still crash the CPU run the file falls back
    # to, so the file is reported, by the unguarded-path check, not as a meeting)
    body = """
    cuda_model = nn.Linear(4, 4).cuda()
    for step in range(3):
        out = cuda_model(torch.randn(2, 4).cuda())
        out2 = model(torch.randn(2, 4).to(device))
    """
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    found = [d for d in check(src, ["GL102"]) if d.code == "GL102"]
    assert [d.line for d in found] == [line_of(body, "cuda_model = ")]
    assert "it meets" not in found[0].message
    assert "no test about devices guards this line" in found[0].message
