"""GL102: a function parameter compared with "gpu" (no torch device type) and renamed "cuda" in
that branch translates the caller's device choice (PytorchOCR's conversion check,
benchmarks/PRECISION42.md P42-3)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import numpy as np
import torch
import torch.nn as nn


def torch_infer(x{param}):
{local}    if device == "{word}":
        device = "cuda"
    model = nn.Linear(4, 2).to(device)
    return model(torch.from_numpy(x).to(device))


def main():
    print(torch_infer(np.zeros((1, 4), dtype="float32"){arg}))


if __name__ == "__main__":
    main()
"""


def _codes(**kw) -> list[str]:
    rule = Registry.load().by_code("GL102")()
    src = textwrap.dedent(SRC.format(**kw))
    return [d.code for d in run_text("convert.py", src, [rule], Options()).diagnostics]


def test_a_parameter_compared_with_gpu_and_renamed_cuda_is_the_callers_choice():
    assert _codes(param=", device", local="", word="gpu", arg=', "cpu"') == []


def test_a_hard_coded_local_or_a_cuda_comparison_is_still_reported():
    # the file sets the name itself: nothing is chosen at run time
    assert _codes(param="", local='    device = "gpu"\n', word="gpu", arg="") == ["GL102"]
    # `device == "cuda"` of a parameter: a torch device word, the rule's existing reading
    assert _codes(param=", device", local="", word="cuda", arg=', "cuda"') == ["GL102"]
