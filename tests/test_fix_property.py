"""Property test of the fixes over real code: whatever the default rules fix (unsafe fixes
included), the fixed module still compiles, and fixing it again changes nothing.

By default it runs over code that is in this repository: every fixture input (tests/fixtures)
and every example (examples/). Whether the fixed *runnable* fixtures still train is proven by
test_fixtures.py (CPU, CUDA, emulated CUDA) and test_torchrun.py.

Real code that is not in the repository (never commit it) is checked when an environment
variable names it:

    GPULINT_FIX_CORPUS=/path/to/repos:/path/to/site-packages/torch \\
        python -m pytest tests/test_fix_property.py -q
    GPULINT_FIX_CORPUS_EVERY=5   # optional: only every 5th file (in sorted order), for a quick run

Each folder is walked for `*.py` files; the corpus test reports how many files were fixed, how
many of those compiled, and how many were idempotent (printed with -s), and fails listing the
files that did not compile or changed on a second fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixture_support import fix
from gpulint.engine import BadInput

ROOT = Path(__file__).resolve().parents[1]


def _default_codes() -> set[str]:
    from gpulint.registry import Registry

    return {r.code for r in Registry.load().resolve(None)}


def _repo_files() -> list[Path]:
    files = [p for p in sorted((ROOT / "tests" / "fixtures").rglob("*.py")) if not p.name.endswith(".fixed.py")]
    files += sorted((ROOT / "examples").rglob("*.py"))
    return files


def _corpus_files() -> list[Path]:
    spec = os.environ.get("GPULINT_FIX_CORPUS", "")
    files: list[Path] = []
    for folder in (f for f in spec.split(os.pathsep) if f):
        for d, dirs, names in os.walk(folder):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
            files.extend(Path(d) / n for n in sorted(names) if n.endswith(".py"))
    every = int(os.environ.get("GPULINT_FIX_CORPUS_EVERY", "1") or 1)
    return files[::max(every, 1)]


def _fix_twice(path: Path, codes: set[str]):
    """(changed, compiles, idempotent, detail); None when the file is not Python gpulint reads."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    try:
        first = fix(text, codes, True, path=str(path))
    except BadInput:
        return None
    if first.text == text:
        return (False, True, True, "")
    try:
        compile(first.text, str(path), "exec", dont_inherit=True)
        compiles = True
        detail = ""
    except SyntaxError as exc:
        compiles = False
        detail = f"does not compile after the fix: {exc}"
    second = fix(first.text, codes, True, path=str(path))
    idempotent = second.text == first.text
    if not idempotent:
        fixed_again = sorted({d.code for d in second.fixed})
        detail += f" a second fix changed it again ({', '.join(fixed_again)})"
    return (True, compiles, idempotent, detail.strip())


REPO_FILES = _repo_files()


@pytest.mark.parametrize("path", REPO_FILES, ids=[str(p.relative_to(ROOT)) for p in REPO_FILES])
def test_fixed_repo_file_compiles_and_is_stable(path: Path):
    result = _fix_twice(path, _default_codes())
    if result is None:
        pytest.skip("not a file gpulint analyses")
    _changed, compiles, idempotent, detail = result
    assert compiles and idempotent, detail


def test_the_property_runs_on_something():
    """The repository sample is not empty, and some of it is actually fixed (else the property
    test proves nothing)."""
    codes = _default_codes()
    changed = [p for p in REPO_FILES[:80] if (_fix_twice(p, codes) or (False,))[0]]
    assert len(REPO_FILES) > 100 and changed


@pytest.mark.skipif(not os.environ.get("GPULINT_FIX_CORPUS"), reason="GPULINT_FIX_CORPUS is not set")
def test_fixed_corpus_compiles_and_is_stable():
    codes = _default_codes()
    files = _corpus_files()
    fixed = compiled = stable = 0
    bad = []
    for path in files:
        result = _fix_twice(path, codes)
        if result is None or not result[0]:
            continue
        fixed += 1
        compiled += result[1]
        stable += result[2]
        if not (result[1] and result[2]):
            bad.append(f"{path}: {result[3]}")
    print(f"\ncorpus: {len(files)} files, {fixed} fixed, {compiled} compiled, {stable} idempotent")
    assert not bad, "\n".join(bad[:50])
