"""GL110: `try: checkpoint = torch.load(path)` / `except: checkpoint = torch.load(path,
map_location=lambda storage, loc: storage)` (hungthanhpham94/GRU4REC-pytorch main.py, the evaluation
branch): on a machine without the saved CUDA devices the first load raises a RuntimeError and the
handler loads the same path mapped to the host, so the CPU case is handled. A handler that cannot
catch that error, a retry of another path, a retry without `map_location`, and a multi-process
script keep the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)


def load(path, other):
    try:
        checkpoint = torch.load(path)
    {handler}
        checkpoint = torch.load({retry})
    return checkpoint


if __name__ == "__main__":
    model.load_state_dict(load("model.pt", "other.pt"))
"""


def _lines(handler="except:", retry="path, map_location=lambda storage, loc: storage", extra=""):
    src = textwrap.dedent(SRC).format(handler=handler, retry=retry) + extra
    return [d.line for d in check(src, ["GL110"]) if d.code == "GL110"]


def test_bare_except_retry_with_map_location_is_not_reported():
    assert _lines() == []


def test_runtime_error_retry_is_not_reported():
    assert _lines(handler="except (OSError, RuntimeError):", retry='path, map_location="cpu"') == []


def test_exception_keyword_path_retry_is_not_reported():
    assert _lines(handler="except Exception as e:", retry='f=path, map_location=device') == []


def test_handler_that_cannot_catch_the_error_is_reported():
    assert _lines(handler="except FileNotFoundError:") == [11]


def test_retry_of_another_path_is_reported():
    assert _lines(retry='other, map_location="cpu"') == [11]


def test_retry_without_map_location_is_reported():
    assert _lines(retry="path") == [11, 13]


def test_multi_process_script_is_reported():
    extra = "\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
    assert _lines(extra=extra) == [11]
