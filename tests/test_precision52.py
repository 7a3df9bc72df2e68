"""Shapes of the fifty-second precision pass (benchmarks/PRECISION52.md): the false positive fixed
in a rule (GL115: nequip's test conftest), next to the look-alikes that must stay reported. The
snippets are our own minimal code in the shape of the real one; their findings are known by
reading them."""

from __future__ import annotations

import re
import textwrap

from cli_support import gl, write


def lines(tmp_path, code: str, source: str) -> list[int]:
    write(tmp_path, {"t.py": textwrap.dedent(source)})
    r = gl(["check", "--no-cache", "--select", code, "t.py"], tmp_path)
    return [int(m.group(1)) for m in re.finditer(rf"^t\.py:(\d+):\d+: {code}", r.stdout, re.MULTILINE)]


# GL115: a worker pins its own GPU, then writes one entry of the list it read from the variable
# back for the processes it launches (mir-group/nequip nequip/utils/unittests/conftest.py)
WORKER = """\
    import os
    import torch

    rank = int(os.environ.get("WORKER", "0"))
    if torch.cuda.is_available():
        visible = {read}.split(",")
        visible = [int(v) for v in visible]
        local = rank % torch.cuda.device_count()
        {pin}
        os.environ["CUDA_VISIBLE_DEVICES"] = {value}
"""


def worker(read='os.environ.get("CUDA_VISIBLE_DEVICES", "0")', pin="torch.cuda.set_device(local)",
           value="str(visible[local])") -> str:
    return WORKER.format(read=read, pin=pin, value=value)


def test_gl115_pinned_worker_narrowing_for_children_is_silent(tmp_path):
    assert lines(tmp_path, "GL115", worker()) == []


def test_gl115_pinned_worker_narrowing_read_by_subscript_is_silent(tmp_path):
    assert lines(tmp_path, "GL115", worker(read='os.environ["CUDA_VISIBLE_DEVICES"]')) == []


def test_gl115_narrowing_without_pinning_the_own_gpu_is_reported(tmp_path):
    # the process narrows its own view after `is_available()`: ignored for itself
    assert lines(tmp_path, "GL115", worker(pin="pass")) == [10]


def test_gl115_pinned_gpu_then_a_value_not_read_from_the_variable_is_reported(tmp_path):
    # EasyNLP#35's shape: `set_device` first, then a list from elsewhere
    assert lines(tmp_path, "GL115", worker(value='os.environ.get("GPUS", "1")')) == [10]
    assert lines(tmp_path, "GL115", worker(value='"1"')) == [10]


def test_gl115_pin_in_another_function_is_still_reported(tmp_path):
    src = """\
        import os
        import torch

        def pin():
            torch.cuda.set_device(0)

        def main():
            pin()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0,1").split(",")
            os.environ["CUDA_VISIBLE_DEVICES"] = visible[1]

        main()
    """
    assert lines(tmp_path, "GL115", src) == [10]
