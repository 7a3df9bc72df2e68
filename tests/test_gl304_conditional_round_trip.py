"""GL304 when the file saves and resumes through a name wrapped in DataParallel on some paths only
(kuangliu/pytorch-cifar#153): the checkpoint's keys depend on the machine, so it is reported even
though the file loads back into the (maybe) wrapper; the fix unwraps both sides."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
net = nn.Linear(4, 2).to(device)
"""


def _run(body: str):
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return [d.line for d in check(src, {"GL304"}) if d.code == "GL304"], src


def test_conditional_wrap_saved_and_loaded_back():
    lines, src = _run("""
        if device == "cuda":
            net = nn.DataParallel(net)
        net.load_state_dict(torch.load("ckpt.pth")["net"])
        torch.save({"net": net.state_dict()}, "ckpt.pth")
        """)
    assert lines == [11]
    out = fix(src, {"GL304"}, unsafe=True).text
    assert 'getattr(net, "module", net).load_state_dict(torch.load("ckpt.pth")["net"])' in out
    assert '{"net": getattr(net, "module", net).state_dict()}' in out


def test_unconditional_wrap_resumed_is_left_alone():
    lines, _ = _run("""
        net = nn.DataParallel(net)
        net.load_state_dict(torch.load("ckpt.pth")["net"])
        torch.save({"net": net.state_dict()}, "ckpt.pth")
        """)
    assert lines == []


def test_load_into_another_always_wrapped_model_is_left_alone():
    lines, _ = _run("""
        if device == "cuda":
            net = nn.DataParallel(net)
        teacher = nn.DataParallel(nn.Linear(4, 2))
        teacher.load_state_dict(torch.load("teacher.pth"))
        torch.save({"net": net.state_dict()}, "ckpt.pth")
        """)
    assert lines == []


def test_save_checks_for_the_wrapper():
    lines, _ = _run("""
        if device == "cuda":
            net = nn.DataParallel(net)
        net.load_state_dict(torch.load("ckpt.pth")["net"])
        torch.save(net.module.state_dict() if isinstance(net, nn.DataParallel) else net.state_dict(), "ckpt.pth")
        """)
    assert lines == []


def test_wrap_chosen_on_the_command_line_is_left_alone():
    # MoCo's main_moco.py: DDP when --distributed, one GPU with --gpu, else DataParallel; a resume
    # runs with the same flags
    lines, _ = _run("""
        import argparse
        args = argparse.ArgumentParser().parse_args()
        if args.distributed:
            net = nn.parallel.DistributedDataParallel(net)
        elif args.gpu is not None:
            net = net.cuda(args.gpu)
        else:
            net = nn.DataParallel(net)
        net.load_state_dict(torch.load("ckpt.pth")["net"])
        torch.save({"net": net.state_dict()}, "ckpt.pth")
        """)
    assert lines == []


def test_wrap_by_gpu_count_through_a_name():
    lines, _ = _run("""
        n_gpu = torch.cuda.device_count()
        if n_gpu > 1:
            net = nn.DataParallel(net)
        net.load_state_dict(torch.load("ckpt.pth"))
        torch.save(net.state_dict(), "ckpt.pth")
        """)
    assert lines == [12]
