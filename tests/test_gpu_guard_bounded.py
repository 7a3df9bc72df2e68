"""The device-index GPU guard (`cuda_device >= 0`) resolves each name at most once per file: on
torch's own `utils/data/_utils/collate.py` (recursive functions whose parameters are compared
with numbers) the first version fanned out exponentially and took 60 s of CPU (found by the
reference-package precision run)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import gpulint.flow as flow
from gpulint.engine import Options, run_text
from gpulint.registry import Registry

COLLATE = Path(torch.__file__).parent / "utils" / "data" / "_utils" / "collate.py"


class _TooMany(Exception):
    pass


@pytest.mark.skipif(not COLLATE.exists(), reason="torch's collate.py not found")
def test_device_index_guard_work_is_bounded(monkeypatch):
    calls = 0
    real = flow._gpu_int_uncached

    def counted(m, e, depth):
        nonlocal calls
        calls += 1
        if calls > 5000:
            raise _TooMany
        return real(m, e, depth)

    monkeypatch.setattr(flow, "_gpu_int_uncached", counted)
    reg = Registry.load()
    rules = [r() for r in reg.rules if r.default]
    res = run_text(str(COLLATE), COLLATE.read_text(encoding="utf-8"), rules, Options())
    assert not [d for d in res.diagnostics if d.code == "GL000"]
    assert calls < 5000
