"""Configuration: discovery from the checked paths upward, keys, excludes, .gitignore, rule-dirs."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cli_support import BOTH, BUGGY, CLEAN, MOVE, gl, gl_proc, problems, rule_pack, write
from gpulint.config import ConfigError, DEFAULT_EXCLUDE, load_settings


def codes(result) -> list[str]:
    return [p[3] for p in problems(result.stdout)]


def paths(result) -> list[str]:
    return [p[0] for p in problems(result.stdout)]


# ---------------------------------------------------------------------------------------------
# finding the configuration
# ---------------------------------------------------------------------------------------------


def test_config_found_from_the_checked_path_upward_not_cwd(tmp_path):
    write(tmp_path, {
        "proj/pyproject.toml": '[tool.gpulint]\nselect = ["GL104"]\n',
        "proj/src/deep/both.py": BOTH,
        "elsewhere/pyproject.toml": '[tool.gpulint]\nselect = ["GL103"]\n',
    })
    r = gl(["check", str(tmp_path / "proj" / "src" / "deep" / "both.py")], tmp_path / "elsewhere")
    assert codes(r) == ["GL104"]
    r = gl(["check", "proj/src"], tmp_path)
    assert codes(r) == ["GL104"]


def test_pyproject_without_table_is_skipped(tmp_path):
    write(tmp_path, {
        "gpulint.toml": 'select = ["GL104"]\n',
        "inner/pyproject.toml": '[project]\nname = "x"\n',
        "inner/both.py": BOTH,
    })
    assert codes(gl(["check", "inner"], tmp_path)) == ["GL104"]


def test_gpulint_toml_top_level_keys_and_precedence_over_pyproject(tmp_path):
    write(tmp_path, {
        "gpulint.toml": 'select = ["GL103"]\n',
        "pyproject.toml": '[tool.gpulint]\nselect = ["GL104"]\n',
        "both.py": BOTH,
    })
    assert codes(gl(["check", "both.py"], tmp_path)) == ["GL103"]


def test_nearest_config_wins(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\nselect = ["GL103"]\n',
        "sub/pyproject.toml": '[tool.gpulint]\nselect = ["GL104"]\n',
        "sub/both.py": BOTH,
    })
    assert codes(gl(["check", "sub/both.py"], tmp_path)) == ["GL104"]
    assert codes(gl(["check", "both.py"], tmp_path / "sub")) == ["GL104"]


def test_explicit_config(tmp_path):
    write(tmp_path, {"cfg/custom.toml": 'select = ["GL104"]\n', "both.py": BOTH})
    assert codes(gl(["check", "--config", "cfg/custom.toml", "both.py"], tmp_path)) == ["GL104"]
    r = gl(["check", "--config", "nope.toml", "both.py"], tmp_path)
    assert r.exit_code == 2
    assert "nope.toml" in r.stderr


@pytest.mark.parametrize(
    "toml, needle",
    [
        ('[tool.gpulint]\nselcet = ["GL103"]\n', "selcet"),
        ('[tool.gpulint]\nselect = "GL999"\n', "GL999"),
        ('[tool.gpulint]\nselect = 3\n', "select"),
        ('[tool.gpulint]\nrespect-gitignore = "yes"\n', "respect-gitignore"),
        ('[tool.gpulint]\nper-file-ignores = ["x"]\n', "per-file-ignores"),
        ('[tool.gpulint]\nper-file-ignores = {"a.py" = ["GL9999"]}\n', "GL9999"),
        ('[tool.gpulint]\nrule-dirs = ["no_such_folder"]\n', "no_such_folder"),
        ('[tool.gpulint\nselect = []\n', "TOML"),
    ],
)
def test_bad_config_exit_2(tmp_path, toml, needle):
    write(tmp_path, {"pyproject.toml": toml, "x.py": CLEAN})
    r = gl(["check", "x.py"], tmp_path)
    assert r.exit_code == 2
    assert needle in r.stderr
    assert r.stdout == ""


def test_load_settings_unit(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nextend-exclude = ["gen"]\nrule-dirs = ["r"]\n'})
    s = load_settings(None, tmp_path)
    assert s.root == tmp_path.resolve()
    assert s.extend_exclude == ["gen"]
    assert s.all_excludes[: len(DEFAULT_EXCLUDE)] == list(DEFAULT_EXCLUDE)
    assert s.rule_dirs == [tmp_path.resolve() / "r"]
    assert s.respect_gitignore is True
    with pytest.raises(ConfigError):
        write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nbogus = 1\n'})
        load_settings(None, tmp_path)


# ---------------------------------------------------------------------------------------------
# per-file-ignores
# ---------------------------------------------------------------------------------------------


def test_per_file_ignores_relative_to_the_config_folder(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\n[tool.gpulint.per-file-ignores]\n"tests/*.py" = ["GL104"]\n"legacy.py" = ["tensor-move-discarded", "GL103"]\n',
        "tests/t.py": BOTH,
        "src/s.py": BOTH,
        "legacy.py": BOTH,
    })
    r = gl(["check", "."], tmp_path)
    assert sorted(problems(r.stdout)) == [
        (os.path.join("src", "s.py"), 4, 7, "GL103"),
        (os.path.join("src", "s.py"), 6, 1, "GL104"),
        (os.path.join("tests", "t.py"), 4, 7, "GL103"),
    ]
    # the same from a subdirectory: the globs stay relative to the config's folder
    r = gl(["check", "."], tmp_path / "tests")
    assert problems(r.stdout) == [("t.py", 4, 7, "GL103")]


# ---------------------------------------------------------------------------------------------
# excludes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "folder", [".git", ".venv", "venv", "build", "dist", "__pycache__", "node_modules", "site-packages", "pkg.egg-info"]
)
def test_default_excludes(tmp_path, folder):
    write(tmp_path, {f"{folder}/bug.py": BUGGY, f"src/{folder}/bug.py": BUGGY, "ok.py": CLEAN})
    r = gl(["check", "."], tmp_path)
    assert r.exit_code == 0, r.stdout
    # named explicitly, it is checked
    r = gl(["check", f"{folder}/bug.py"], tmp_path)
    assert problems(r.stdout) == [(os.path.join(folder, "bug.py"), 4, 7, "GL103")]


def test_extend_exclude_and_explicit_files(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\nextend-exclude = ["generated", "tests/fixtures", "*_pb2.py"]\n',
        "generated/bug.py": BUGGY,
        "tests/fixtures/bug.py": BUGGY,
        "tests/test_x.py": BUGGY,
        "proto_pb2.py": BUGGY,
        "build/bug.py": BUGGY,  # default excludes still apply with extend-exclude
    })
    r = gl(["check", "."], tmp_path)
    assert paths(r) == [os.path.join("tests", "test_x.py")]
    # explicitly named files are always checked
    r = gl(["check", "generated/bug.py", "proto_pb2.py", "tests/fixtures/bug.py"], tmp_path)
    assert sorted(paths(r)) == sorted(
        [os.path.join("generated", "bug.py"), "proto_pb2.py", os.path.join("tests", "fixtures", "bug.py")]
    )
    # an excluded directory named explicitly is walked (what is below it is matched)
    r = gl(["check", "tests/fixtures"], tmp_path)
    assert paths(r) == [os.path.join("tests", "fixtures", "bug.py")]
    # but walking its parent skips it
    r = gl(["check", "tests"], tmp_path)
    assert paths(r) == [os.path.join("tests", "test_x.py")]


def test_exclude_replaces_the_defaults(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nexclude = ["other"]\n', "build/bug.py": BUGGY, "other/bug.py": BUGGY})
    r = gl(["check", "."], tmp_path)
    assert paths(r) == [os.path.join("build", "bug.py")]


def test_non_python_files_are_not_checked(tmp_path):
    write(tmp_path, {"notes.txt": BUGGY, "script": BUGGY, "stub.pyi": BUGGY})
    r = gl(["check", "."], tmp_path)
    assert paths(r) == ["stub.pyi"]


# ---------------------------------------------------------------------------------------------
# .gitignore
# ---------------------------------------------------------------------------------------------


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git_repo(root):
    subprocess.run(["git", "init", "-q", str(root)], check=True)


@needs_git
def test_respect_gitignore(tmp_path):
    _git_repo(tmp_path)
    write(tmp_path, {
        ".gitignore": "ignored.py\nout/\n",
        "ignored.py": BUGGY,
        "out/gen.py": BUGGY,
        "kept.py": BUGGY,
    })
    r = gl(["check", "."], tmp_path)
    assert paths(r) == ["kept.py"]
    # from a subdirectory too
    write(tmp_path, {"sub/.gitignore": "local.py\n", "sub/local.py": BUGGY, "sub/other.py": BUGGY})
    r = gl(["check", "."], tmp_path / "sub")
    assert paths(r) == ["other.py"]
    # explicitly named ignored files are checked
    r = gl(["check", "ignored.py"], tmp_path)
    assert paths(r) == ["ignored.py"]


@needs_git
def test_respect_gitignore_false(tmp_path):
    _git_repo(tmp_path)
    write(tmp_path, {
        "pyproject.toml": "[tool.gpulint]\nrespect-gitignore = false\n",
        ".gitignore": "ignored.py\n",
        "ignored.py": BUGGY,
    })
    r = gl(["check", "."], tmp_path)
    assert paths(r) == ["ignored.py"]


def test_outside_a_git_repository_nothing_is_ignored(tmp_path):
    # a .gitignore without a repository means nothing to git
    write(tmp_path, {".gitignore": "bug.py\n", "bug.py": BUGGY})
    r = gl_proc(["check", "."], tmp_path, env={"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert r.returncode == 1
    assert problems(r.stdout.decode()) == [("bug.py", 4, 7, "GL103")]


# ---------------------------------------------------------------------------------------------
# rule-dirs
# ---------------------------------------------------------------------------------------------


def test_rule_dirs_load_user_rules(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "nofix = 1\n" + MOVE})
    r = gl(["check", "a.py"], tmp_path)
    assert codes(r) == ["TST005", "GL104"]
    assert gl(["explain", "no-print"], tmp_path).exit_code == 0
    # the rule folder is relative to the config, not to the current directory
    write(tmp_path, {"sub/b.py": "nofix = 2\n"})
    r = gl(["check", "b.py"], tmp_path / "sub")
    assert codes(r) == ["TST005"]


def test_rule_dirs_files_starting_with_underscore_are_not_rules(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"myrules/_helpers.py": "raise RuntimeError('not a rule file')\n", "a.py": "nofix = 1\n"})
    assert codes(gl(["check", "a.py"], tmp_path)) == ["TST005"]


@pytest.mark.parametrize(
    "rule_src, needle",
    [
        ("def broken(:\n", "broken.py"),
        ("raise RuntimeError('boom')\n", "boom"),
        (
            "from gpulint.rule import Rule\nclass A(Rule):\n    code = 'GL103'\n    name = 'dup'\n    summary = message = 'x'\n",
            "GL103",
        ),
        ("from gpulint.rule import Rule\nclass A(Rule):\n    code = 'bad code'\n    name = 'x'\n", "bad code"),
    ],
)
def test_broken_rule_dirs_exit_2_without_traceback(tmp_path, rule_src, needle):
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nrule-dirs = ["r"]\n', "r/broken.py": rule_src, "a.py": CLEAN})
    p = gl_proc(["check", "a.py"], tmp_path)
    assert p.returncode == 2
    assert needle in p.stderr.decode()
    assert b"Traceback" not in p.stderr


def test_cache_dir_setting(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\ncache-dir = "var/cache"\n', "bug.py": BUGGY})
    gl(["check", "bug.py"], tmp_path)
    assert list((tmp_path / "var" / "cache").rglob("*.json"))
    assert not (tmp_path / ".gpulint_cache").exists()
