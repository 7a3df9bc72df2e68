"""Packaging: build a wheel, install it into a fresh virtual environment (no system site-packages,
dependencies from the package registry), and run `gpulint` from it outside this checkout.

This proves the rule pack travels in the wheel (`rules/` -> `gpulint/_builtin_rules`) and that the
installed linter needs neither torch nor this source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import BUGGY, REPO, builtin_codes, write

pytestmark = pytest.mark.slow


def _run(cmd, cwd, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, **kw)
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    p = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, REPO], cwd=base)
    assert p.returncode == 0, p.stdout + p.stderr
    wheels = list(dist.glob("gpulint-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    p = _run([sys.executable, "-m", "venv", venv], cwd=base)
    assert p.returncode == 0, p.stderr
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / "python"
    p = _run([py, "-m", "pip", "install", "-q", wheels[0]], cwd=base)
    assert p.returncode == 0, p.stdout + p.stderr
    return venv, py, bindir / "gpulint", base / "work"


def test_wheel_contains_the_rule_pack(installed):
    import zipfile

    wheel = next((installed[0].parent / "dist").glob("gpulint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    packaged = {Path(n).name for n in names if n.startswith("gpulint/_builtin_rules/") and n.endswith(".py")}
    source = {f.name for f in (REPO / "rules").glob("*.py")}
    assert packaged == source
    assert not any(n.startswith(("tests/", "rules/")) for n in names)


def test_installed_gpulint_runs_outside_the_checkout(installed):
    venv, py, exe, work = installed
    work.mkdir(exist_ok=True)
    # the package and its rules come from the venv's site-packages, not from this checkout
    p = _run(
        [py, "-c", "import gpulint, sys; from gpulint.registry import builtin_rules_dir as b; "
         "print(gpulint.__file__); print(b()); print('torch' in sys.modules)"],
        cwd=work,
    )
    assert p.returncode == 0, p.stderr
    pkg_file, rules_dir, torch_loaded = p.stdout.split("\n")[:3]
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work).stdout.strip()
    assert Path(pkg_file).resolve().is_relative_to(Path(purelib).resolve())
    assert Path(rules_dir).resolve() == (Path(purelib) / "gpulint" / "_builtin_rules").resolve()
    assert torch_loaded == "False"
    # no system site-packages: torch is not importable at all
    assert _run([py, "-c", "import torch"], cwd=work).returncode != 0

    p = _run([exe, "rules", "--output-format", "json"], cwd=work)
    assert p.returncode == 0, p.stderr
    assert {r["code"] for r in json.loads(p.stdout)} == builtin_codes()
    p = _run([exe, "rules"], cwd=work)
    assert {line.split()[0] for line in p.stdout.splitlines()[1:]} == builtin_codes()

    p = _run([exe, "--version"], cwd=work)
    assert p.returncode == 0 and p.stdout.startswith("gpulint ")

    write(work, {"train.py": BUGGY})
    p = _run([exe, "check", "--no-cache", "train.py"], cwd=work)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "train.py:4:7: GL103" in p.stdout
    p = _run([exe, "explain", "GL103"], cwd=work)
    assert p.returncode == 0 and "optimizer-moved-like-module" in p.stdout
