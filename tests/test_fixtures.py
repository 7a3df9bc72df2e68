"""The fixture suite (see ../shared/FIXTURES.md).

For every tests/fixtures/GLxxx/*.py:
- the diagnostics of the folder's rule (and of any rule named in a marker) are exactly the
  `# expect: CODE` markers: no missing, no extra, no wrong line; `ok_*.py` files get none;
- the fixer's output equals `<name>.fixed.py` byte for byte (regenerate with --regen-fixed or
  GPULINT_REGEN_FIXED=1, then review the diff);
- fixing the `.fixed.py` again changes nothing and leaves no fixable diagnostic of the rule;
- every runnable `.fixed.py` (and every runnable negative) trains on CPU: exit 0 and the
  GPULINT-TRAIN line shows the loss going down;
- on a machine with CUDA, fixed scripts train on the GPU and crash-kind inputs fail with the error
  named in their `# fails-on-cuda:` header.
"""

from __future__ import annotations

import shutil
import sys

import pytest

from fixture_support import Case, cases, check, fix, run_script, train_result, trained

ALL = cases()


def _ids(items):
    return [c.id for c in items]


@pytest.mark.parametrize("case", ALL, ids=_ids(ALL))
def test_diagnostics_match_markers(case: Case):
    diags = check(case.text, case.selected_codes(), path=str(case.path))
    got = {(d.line, d.code) for d in diags if d.code in case.selected_codes() or d.code == "GL000"}
    expected = case.expected()
    if case.is_negative:
        assert not {g for g in got if g[1] == case.code}, f"negative fixture flagged: {sorted(got)}"
    missing = expected - got
    extra = got - expected
    assert not missing and not extra, f"missing={sorted(missing)} extra={sorted(extra)}"


FIXABLE = [c for c in ALL if not c.is_negative]


@pytest.mark.parametrize("case", FIXABLE, ids=_ids(FIXABLE))
def test_fix_matches_snapshot(case: Case, regen_fixed: bool):
    outcome = fix(case.text, case.selected_codes(), case.unsafe(), path=str(case.path))
    changed = outcome.text != case.text
    if regen_fixed:
        if changed:
            case.fixed_path.write_text(outcome.text, encoding="utf-8")
        elif case.fixed_path.exists():
            case.fixed_path.unlink()
        return
    if not changed:
        assert not case.fixed_path.exists(), "the fixer changes nothing, but a .fixed.py snapshot exists"
        return
    assert case.fixed_path.exists(), f"no snapshot {case.fixed_path.name}: run pytest --regen-fixed and review"
    assert outcome.text == case.fixed_path.read_text(encoding="utf-8")


WITH_SNAPSHOT = [c for c in FIXABLE if c.fixed_path.exists()]


@pytest.mark.parametrize("case", WITH_SNAPSHOT, ids=_ids(WITH_SNAPSHOT))
def test_fixed_is_stable(case: Case):
    fixed_text = case.fixed_path.read_text(encoding="utf-8")
    again = fix(fixed_text, case.selected_codes(), case.unsafe(), path=str(case.fixed_path))
    assert again.text == fixed_text, "fixing the .fixed.py changed it again (fix not idempotent)"
    before = check(case.text, case.selected_codes(), path=str(case.path))
    unfixable_before = [d for d in before if d.code == case.code and d.fix is None]
    after = [d for d in check(fixed_text, case.selected_codes(), path=str(case.fixed_path)) if d.code == case.code]
    assert all(d.fix is None for d in after), f"fixable diagnostics remain: {after}"
    assert len(after) == len(unfixable_before), f"unexpected diagnostics after fixing: {after}"


def _runnable_scripts():
    out = []
    for c in ALL:
        if c.static or c.torchrun:
            continue
        if c.fixed_path.exists():
            out.append(pytest.param(c, c.fixed_path, id=c.id.replace(".py", ".fixed.py")))
        elif c.is_negative:
            out.append(pytest.param(c, c.path, id=c.id))
    return out


RUNNABLE = _runnable_scripts()


@pytest.mark.parametrize("case,script", RUNNABLE)
def test_fixed_script_trains_on_cpu(case: Case, script, tmp_path):
    target = tmp_path / script.name
    shutil.copy(script, target)
    proc = run_script(target, tmp_path, {"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = train_result(proc.stdout)
    assert result is not None, f"no GPULINT-TRAIN line as the last line of stdout:\n{proc.stdout[-2000:]}"
    assert result["device"] == "cpu"
    assert trained(result), f"loss did not go down: {result}"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


cuda = pytest.mark.skipif(not _cuda_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("case,script", RUNNABLE)
def test_fixed_script_trains_on_cuda(case: Case, script, tmp_path):
    target = tmp_path / script.name
    shutil.copy(script, target)
    proc = run_script(target, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = train_result(proc.stdout)
    assert result is not None and trained(result), result
    assert result["device"] == ("cpu" if case.cpu_only else "cuda")


CRASHERS = [c for c in ALL if c.fails_on_cuda and not c.static and not c.torchrun]


@cuda
@pytest.mark.parametrize("case", CRASHERS, ids=_ids(CRASHERS))
def test_buggy_script_fails_on_cuda(case: Case, tmp_path):
    target = tmp_path / case.path.name
    shutil.copy(case.path, target)
    proc = run_script(target, tmp_path)
    assert proc.returncode != 0, "the buggy script ran without error on CUDA"
    assert case.fails_on_cuda in proc.stderr, proc.stderr[-3000:]


# Emulated CUDA (gpulint run): the CUDA checks on a machine without a GPU -----------------------

EMULATE = [sys.executable, "-m", "gpulint.emulate", "--force"]


@pytest.mark.parametrize("case,script", RUNNABLE)
def test_fixed_script_trains_on_emulated_cuda(case: Case, script, tmp_path):
    target = tmp_path / script.name
    shutil.copy(script, target)
    proc = run_script(target, tmp_path, argv_prefix=EMULATE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = train_result(proc.stdout)
    assert result is not None, f"no GPULINT-TRAIN line as the last line of stdout:\n{proc.stdout[-2000:]}"
    assert result["device"] == ("cpu" if case.cpu_only else "cuda"), result
    assert trained(result), f"loss did not go down: {result}"


@pytest.mark.parametrize("case", CRASHERS, ids=_ids(CRASHERS))
def test_buggy_script_fails_on_emulated_cuda(case: Case, tmp_path):
    target = tmp_path / case.path.name
    shutil.copy(case.path, target)
    proc = run_script(target, tmp_path, argv_prefix=EMULATE)
    assert proc.returncode != 0, "the buggy script ran without error on emulated CUDA"
    assert case.fails_on_cuda in proc.stderr, proc.stderr[-3000:]


def test_every_rule_has_fixtures():
    """FIXTURES.md: a positive, a hard negative and (for rules with a fix) a snapshot per rule."""
    from fixture_support import registry

    by_code = {}
    for c in ALL:
        by_code.setdefault(c.code, []).append(c)
    problems = []
    for rule in registry().rules:
        mine = by_code.get(rule.code, [])
        if not any(c.is_negative for c in mine):
            problems.append(f"{rule.code}: no ok_*.py negative")
        if not any(not c.is_negative for c in mine):
            problems.append(f"{rule.code}: no positive")
        if rule.fix_safety != "none" and not any(c.fixed_path.exists() for c in mine):
            problems.append(f"{rule.code}: no .fixed.py snapshot")
    assert not problems, problems
