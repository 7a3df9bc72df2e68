"""GL101's fix in a method of a trainer class whose other methods move batches with
`self.device`: the move uses `self.device`, not a module-level `device` that exists only in the
script that happens to define the class (JeiKeiLim/kindle#4, fixtures16)."""

from __future__ import annotations

from pathlib import Path

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

FIXTURE = Path(__file__).parent / "fixtures" / "GL101" / "kindle_torch_trainer_test_batch_not_moved.py"


def test_fix_moves_with_the_instance_device():
    reg = Registry.load()
    res = run_text(str(FIXTURE), FIXTURE.read_text(), [reg.by_code("GL101")()], Options(fix=True, unsafe_fixes=True))
    assert "data = data.to(self.device)" in res.text
    assert "labels = labels.to(self.device)" in res.text
    assert ".to(device)" not in res.text.split("def test(")[1].split("def make_dataset")[0]
