"""GL105's module analysis does not take the result of a function of the file, or of an imported
one, to be where its input is (PRECISION17 A1: deep_sort's vendored YOLOv3 `convert2cpu`)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn
{imports}


def to_cpu(x):
    return x.cpu()


def act(x):
    return torch.relu(x)


class Layer(nn.Module):
    def forward(self, output):
        boxes = {helper}(output)
        return torch.max(torch.zeros(4), boxes)


layer = Layer().cuda()
print(layer(torch.randn(4).cuda()))
"""


def findings(helper: str, imports: str = "") -> list[tuple[str, int]]:
    reg = Registry.load()
    src = textwrap.dedent(_SRC.format(helper=helper, imports=imports))
    res = run_text("t.py", src, [reg.by_code(c)() for c in ("GL105", "GL116")], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_result_put_on_the_cpu_by_a_file_function_is_silent():
    assert findings("to_cpu") == []


def test_result_of_a_relatively_imported_helper_is_unknown():
    assert findings("convert2cpu", "from .yolo_utils import convert2cpu") == []


def test_file_function_keeping_the_device_still_reports():
    assert findings("act") == [("GL105", 18)]
