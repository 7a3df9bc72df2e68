"""GL110: a load under a CPU/GPU flag that is a plain name (a parameter such as Tacotron2's
`cpu_run`, benchmarks/PRECISION47.md P47-5, NVIDIA/DeepLearningExamples
PyTorch/SpeechSynthesis/Tacotron2/inference.py `load_and_setup_model`: `if cpu_run:` loads with
`map_location=torch.device('cpu')`, `else:` without) runs on the GPU path only, as `args.cpu` /
`args.cuda` attribute flags already did. A load in the CPU branch, or under a flag named like
nothing device-related, stays reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


def load_and_setup_model(checkpoint, {flag}):
    model = nn.Linear(4, 1)
    if checkpoint is not None:
{body}
        model.load_state_dict(state_dict)
    if torch.cuda.is_available():
        model = model.cuda()
    return model


if __name__ == "__main__":
    model = load_and_setup_model("checkpoint.pt", not torch.cuda.is_available())
"""


def _lines(flag="cpu_run", body=None):
    if body is None:
        body = ("        if cpu_run:\n"
                "            state_dict = torch.load(checkpoint, map_location=torch.device('cpu'))\n"
                "        else:\n"
                "            state_dict = torch.load(checkpoint)\n")
    text = textwrap.dedent(SRC).format(flag=flag, body=body.rstrip("\n"))
    loads = [i for i, line in enumerate(text.splitlines(), 1) if "torch.load(checkpoint)" in line]
    return sorted("load" if d.line in loads else d.line for d in check(text, ["GL110"]) if d.code == "GL110")


def test_else_of_a_cpu_run_flag_is_silent():
    assert _lines() == []


def test_under_not_cpu_run_is_silent():
    assert _lines(body="        if not cpu_run:\n            state_dict = torch.load(checkpoint)\n"
                       "        else:\n            state_dict = {}\n") == []


def test_under_a_use_cuda_parameter_is_silent():
    assert _lines(flag="use_cuda", body="        if use_cuda:\n            state_dict = torch.load(checkpoint)\n"
                                        "        else:\n            state_dict = {}\n") == []


def test_load_in_the_cpu_branch_stays_reported():
    assert _lines(body="        if cpu_run:\n            state_dict = torch.load(checkpoint)\n"
                       "        else:\n            state_dict = {}\n") == ["load"]


def test_unrelated_flag_stays_reported():
    assert _lines(flag="verbose", body="        if verbose:\n            state_dict = torch.load(checkpoint)\n"
                                       "        else:\n            state_dict = {}\n") == ["load"]
