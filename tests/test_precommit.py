"""The pre-commit hooks, for real: `pre-commit try-repo <this repo>` in a temporary git repository.

pre-commit installs this repository into its own virtual environment (dependencies from the
package registry), so these tests are slow (about a minute and a half); they run in the default
test run. The check hook goes through `try-repo` as a user trying the hooks would; the fix hook
through `pre-commit run` with a config, which reuses one installed environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from cli_support import BUGGY, BUGGY_FIXED, CLEAN, REPO, TEST_RULES, write

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    pytest.importorskip("pre_commit")
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A clone of this repository's HEAD (the committed state, as pre-commit users get it).

    try-repo on the working tree itself would snapshot uncommitted changes into a new temporary
    repository on every call, and pre-commit would build a new environment each time; one clone
    at a fixed commit is installed once and reused.
    """
    dest = tmp_path_factory.mktemp("hook-repo") / "gpulint"
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True, capture_output=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True, text=True).stdout.strip()
    return dest, rev


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _project(root, files):
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "test@example.invalid")
    _git(root, "config", "user.name", "test")
    write(root, files)
    _git(root, "add", "-A")
    return root


def _try_repo(cwd, home, repo, hook):
    env = dict(os.environ)
    env.update({"PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PRE_COMMIT_COLOR": "never"})
    env.pop("PYTHONPATH", None)  # the hook must run the installed copy, not this checkout
    p = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(repo[0]), hook, "--ref", repo[1], "--all-files", "--verbose"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )
    return p.returncode, p.stdout + p.stderr


def _run_hook(cwd, home, repo, hook):
    """`pre-commit run` with a config naming the clone: its environment is built once and reused
    (try-repo builds a new one on every call)."""
    (cwd / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo[0]}\n    rev: {repo[1]}\n    hooks:\n      - id: {hook}\n", encoding="utf-8"
    )
    _git(cwd, "add", ".pre-commit-config.yaml")
    env = dict(os.environ)
    env.update({"PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PRE_COMMIT_COLOR": "never"})
    env.pop("PYTHONPATH", None)
    p = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", hook, "--all-files", "--verbose"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )
    return p.returncode, p.stdout + p.stderr


def test_hooks_file_declares_both_hooks():
    import yaml  # pre-commit depends on PyYAML

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"gpulint", "gpulint-fix"}
    for h in hooks.values():
        assert h["language"] == "python"
        assert h["types_or"] == ["python", "pyi", "jupyter"]  # notebooks too
        assert h["require_serial"] is True
        # pre-commit names the files: excludes must still apply to them (issue 9)
        assert "--force-exclude" in h["entry"].split()
    assert hooks["gpulint"]["entry"].split()[:2] == ["gpulint", "check"]
    assert hooks["gpulint-fix"]["entry"].split()[:2] == ["gpulint", "fix"]


def test_check_hook_fails_on_a_buggy_file_and_passes_on_a_clean_one(tmp_path, pre_commit_home, hook_repo):
    proj = _project(tmp_path / "proj", {"train.py": BUGGY, "notes.txt": "not python\n"})
    rc, out = _try_repo(proj, pre_commit_home, hook_repo, "gpulint")
    assert rc == 1, out
    assert "train.py:4:7: GL103" in out

    write(proj, {"train.py": CLEAN})
    _git(proj, "add", "-A")
    rc, out = _try_repo(proj, pre_commit_home, hook_repo, "gpulint")
    assert rc == 0, out
    assert "Passed" in out


def test_fix_hook_fixes_and_fails_while_problems_remain(tmp_path, pre_commit_home, hook_repo):
    proj = _project(tmp_path / "fixproj", {
        "train.py": BUGGY,
        "pyproject.toml": '[tool.gpulint]\nrule-dirs = ["myrules"]\nextend-exclude = ["vendored"]\n',
        "myrules/test_rules.py": TEST_RULES,
        "vendored/third_party.py": BUGGY,  # excluded: never checked nor rewritten by the hooks
    })
    # a fixable problem: the hook fixes the file (pre-commit fails the run: files were modified)
    rc, out = _run_hook(proj, pre_commit_home, hook_repo, "gpulint-fix")
    assert rc == 1, out
    assert (proj / "train.py").read_text() == BUGGY_FIXED
    assert (proj / "vendored" / "third_party.py").read_text() == BUGGY
    _git(proj, "add", "-A")
    rc, out = _run_hook(proj, pre_commit_home, hook_repo, "gpulint-fix")
    assert rc == 0, out

    # a problem without a fix: the file is unchanged and the hook fails on its exit status
    write(proj, {"train.py": "nofix = 1\n"})
    _git(proj, "add", "-A")
    rc, out = _run_hook(proj, pre_commit_home, hook_repo, "gpulint-fix")
    assert rc == 1, out
    assert "TST005" in out
    assert (proj / "train.py").read_text() == "nofix = 1\n"
    assert "files were modified" not in out
