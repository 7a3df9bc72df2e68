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
    "folder", [".git", ".venv", "venv", "build", "dist", "__pycache__", "node_modules", "site-packages", "pkg.egg-info",
               ".ipynb_checkpoints"]
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


# ---------------------------------------------------------------------------------------------
# issue 9 / issue 11: closest configuration per file, extend, trust, force-exclude, show-*
# ---------------------------------------------------------------------------------------------


def test_closest_config_per_file_not_per_run(tmp_path):
    # a file's verdict does not depend on which other files are passed with it
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\nselect = ["GL103"]\n',
        "a/both.py": BOTH,
        "b/pyproject.toml": '[tool.gpulint]\nselect = ["GL104"]\n',
        "b/both.py": BOTH,
    })
    alone_a = problems(gl(["check", "a/both.py"], tmp_path).stdout)
    alone_b = problems(gl(["check", "b/both.py"], tmp_path).stdout)
    together = problems(gl(["check", "a/both.py", "b/both.py"], tmp_path).stdout)
    assert [p[3] for p in alone_a] == ["GL103"] and [p[3] for p in alone_b] == ["GL104"]
    assert sorted(together) == sorted(alone_a + alone_b)
    # walking the root: the nested project's files use the nested config
    assert sorted(p[3] for p in problems(gl(["check", "."], tmp_path).stdout)) == ["GL103", "GL104"]


def test_nested_config_excludes_apply_to_its_own_tree(tmp_path):
    write(tmp_path, {
        "pyproject.toml": "[tool.gpulint]\n",
        "sub/pyproject.toml": '[tool.gpulint]\nextend-exclude = ["gen"]\n',
        "sub/gen/x.py": BUGGY,
        "gen/y.py": BUGGY,
    })
    assert gl(["check", "--show-files", "."], tmp_path).stdout.split() == [os.path.join("gen", "y.py")]


def test_extend_inherits_and_overrides(tmp_path):
    write(tmp_path, {
        "base.toml": 'select = ["GL103", "GL104"]\nextend-exclude = ["skipme"]\n',
        "proj/pyproject.toml": '[tool.gpulint]\nextend = "../base.toml"\nignore = ["GL104"]\n',
        "proj/both.py": BOTH,
        "proj/skipme/x.py": BUGGY,
    })
    r = gl(["check", "."], tmp_path / "proj")
    assert problems(r.stdout) == [("both.py", 4, 7, "GL103")]
    s = load_settings(tmp_path / "proj" / "pyproject.toml")
    assert s.select == ["GL103", "GL104"] and s.ignore == ["GL104"] and s.extend_exclude == ["skipme"]
    # a cycle is a configuration error
    write(tmp_path, {"c1.toml": 'extend = "c2.toml"\n', "c2.toml": 'extend = "c1.toml"\n'})
    with pytest.raises(ConfigError, match="cycle"):
        load_settings(tmp_path / "c1.toml")
    write(tmp_path, {"c3.toml": 'extend = "missing.toml"\n'})
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "c3.toml")


def test_invalid_utf8_in_pyproject_is_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.gpulint]\nselect = ["GL1\xff"]\n')
    write(tmp_path, {"a.py": CLEAN})
    p = gl_proc(["check", "a.py"], tmp_path)
    assert p.returncode == 2
    assert b"not valid UTF-8" in p.stderr and b"Traceback" not in p.stderr


def test_show_settings_and_show_files(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\nextend-select = ["GL405"]\ntorch-version = "2.1"\n',
        "a.py": CLEAN, "sub/b.py": CLEAN, "build/c.py": CLEAN,
    })
    import json

    r = gl(["check", "--show-settings", "a.py"], tmp_path)
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["config"].endswith("pyproject.toml") and doc["extend-select"] == ["GL405"]
    assert "GL405" in doc["enabled-rules"] and doc["torch-version"] == "2.1"
    r = gl(["check", "--show-files"], tmp_path)
    assert r.exit_code == 0 and r.stdout.split() == ["a.py", os.path.join("sub", "b.py")]


def test_force_exclude_applies_excludes_to_named_files(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\nextend-exclude = ["legacy", "gen_*.py"]\n',
        "legacy/old.py": BUGGY, "gen_x.py": BUGGY, "new.py": BUGGY,
    })
    named = ["legacy/old.py", "gen_x.py", "new.py"]
    assert sorted(paths(gl(["check", *named], tmp_path))) == sorted(os.path.normpath(n) for n in named)
    r = gl(["check", "--force-exclude", *named], tmp_path)
    assert paths(r) == ["new.py"]
    # from the config, and `fix` leaves the excluded files unwritten
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nextend-exclude = ["legacy", "gen_*.py"]\nforce-exclude = true\n'})
    gl(["fix", *named], tmp_path)
    assert (tmp_path / "legacy" / "old.py").read_text() == BUGGY and (tmp_path / "gen_x.py").read_text() == BUGGY
    assert (tmp_path / "new.py").read_text() != BUGGY
    # stdin with an excluded --stdin-filename: nothing reported, the source back unchanged
    r = gl(["fix", "--stdin-filename", "legacy/old.py", "-"], tmp_path, input=BUGGY)
    assert r.exit_code == 0 and r.stdout == BUGGY


def test_no_file_checked_is_a_warning(tmp_path):
    write(tmp_path, {"notes.txt": "x"})
    r = gl(["check", "."], tmp_path)
    assert r.exit_code == 0
    assert "no files to check" in r.stderr


# --- rule-dirs trust (issue 11 item 5) ---


def test_rule_dirs_of_a_nested_config_are_ignored_with_a_warning(tmp_path):
    write(tmp_path, {
        "proj/pyproject.toml": "[tool.gpulint]\n",
        "proj/sub/pyproject.toml": '[tool.gpulint]\nrule-dirs = ["."]\n',
        "proj/sub/evil.py": "open('PWNED', 'w').write('x')\n",
    })
    # passing only the subfolder's file (pre-commit, an editor) must not import its scripts
    r = gl(["check", "sub/evil.py"], tmp_path / "proj")
    assert not (tmp_path / "proj" / "PWNED").exists() and not (tmp_path / "proj" / "sub" / "PWNED").exists()
    assert "rule-dirs` ignored" in r.stderr
    # a checkout elsewhere, passed as a path: its rule-dirs are not trusted either
    write(tmp_path, {"other/pyproject.toml": '[tool.gpulint]\nrule-dirs = ["r"]\n', "other/r/x.py": "open('PWNED2', 'w')\n", "other/a.py": CLEAN, "here/.keep": ""})
    r = gl(["check", str(tmp_path / "other")], tmp_path / "here")
    assert not list(tmp_path.rglob("PWNED2")) and "ignored" in r.stderr


def test_rule_dirs_of_the_project_are_announced_and_must_be_inside_it(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "nofix = 1\n"})
    r = gl(["check", "a.py"], tmp_path)
    assert codes(r) == ["TST005"]
    assert r.stderr.count("loading rules from") == 1 and "myrules" in r.stderr
    write(tmp_path, {"proj/pyproject.toml": '[tool.gpulint]\nrule-dirs = ["../myrules"]\n', "proj/a.py": CLEAN})
    p = gl_proc(["check", "a.py"], tmp_path / "proj")
    assert p.returncode == 2 and b"outside the project" in p.stderr
    # --config is trusted
    r = gl(["check", "--config", "pyproject.toml", "a.py"], tmp_path)
    assert codes(r) == ["TST005"]


# --- .gitignore without git (issue 11 item 4) ---


def test_gitignore_is_matched_without_running_git(tmp_path, monkeypatch):
    import subprocess as sp

    write(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/config": "[core]\n\tfsmonitor = touch FSMONITOR_RAN\n",
        ".git/info/exclude": "private.py\n",
        ".gitignore": "*.gen.py\nout/\n!keep.gen.py\n/rooted.py\n",
        "a.py": BUGGY, "x.gen.py": BUGGY, "keep.gen.py": BUGGY, "out/y.py": BUGGY, "private.py": BUGGY,
        "rooted.py": BUGGY, "sub/rooted.py": BUGGY,
        "sub/.gitignore": "!x2.gen.py\nlocal.py\n", "sub/x2.gen.py": BUGGY, "sub/local.py": BUGGY,
        # an extracted archive with its own repository: the outer rules stop at it
        "vendor/.git/HEAD": "x", "vendor/z.gen.py": BUGGY,
    })

    def no_subprocess(*a, **k):
        raise AssertionError(f"a subprocess was started: {a}")

    monkeypatch.setattr(sp, "Popen", no_subprocess)
    r = gl(["check", "--show-files", "."], tmp_path)
    assert r.stdout.split() == sorted(
        ["a.py", "keep.gen.py", os.path.join("sub", "rooted.py"), os.path.join("sub", "x2.gen.py"), os.path.join("vendor", "z.gen.py")]
    )
    assert not list(tmp_path.rglob("FSMONITOR_RAN"))


def test_gitignore_and_force_exclude(tmp_path):
    write(tmp_path, {".git/HEAD": "x", ".gitignore": "ignored.py\n", "ignored.py": BUGGY})
    assert paths(gl(["check", "ignored.py"], tmp_path)) == ["ignored.py"]
    assert paths(gl(["check", "--force-exclude", "ignored.py"], tmp_path)) == []


def test_unlistable_folder_is_reported(tmp_path, monkeypatch):
    import gpulint.discovery as disc

    write(tmp_path, {"ok/a.py": CLEAN, "locked/b.py": BUGGY})
    real_walk = os.walk

    def walk(top, onerror=None, **kw):  # root reads any folder: simulate EACCES on one
        for dirpath, dirnames, filenames in real_walk(top, onerror=onerror, **kw):
            if os.path.basename(dirpath) == "locked":
                onerror(PermissionError(13, "Permission denied", dirpath))
                dirnames[:] = []
                continue
            yield dirpath, dirnames, filenames

    monkeypatch.setattr(disc.os, "walk", walk)
    r = gl(["check", "."], tmp_path)
    assert r.exit_code == 1
    assert problems(r.stdout) == [("locked", 1, 1, "GL000")]
    assert "cannot list folder: Permission denied" in r.stdout


def test_explicit_symlink_loop_is_gl000(tmp_path):
    os.symlink("loop.py", tmp_path / "loop.py")
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nper-file-ignores = { "tests/**" = ["GL1"] }\n'})
    for fmt in ("text", "sarif", "json", "github"):
        p = gl_proc(["check", "--output-format", fmt, "loop.py"], tmp_path)
        assert p.returncode == 1, (fmt, p.stderr)
        assert b"Traceback" not in p.stderr and b"GL000" in p.stdout


# --- per-file-ignores: gitignore-style globs and negation ---


def test_per_file_ignores_gitignore_globs_and_negation(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.gpulint]\nper-file-ignores = { "tests/**/*.py" = ["GL103"], "!src/**" = ["GL104"] }\n',
        "tests/x.py": BOTH, "tests/deep/y.py": BOTH, "src/z.py": BOTH, "other.py": BOTH,
    })
    found = sorted((p[0], p[3]) for p in problems(gl(["check", "."], tmp_path).stdout))
    assert found == sorted([
        (os.path.join("src", "z.py"), "GL103"), (os.path.join("src", "z.py"), "GL104"),
        ("other.py", "GL103"),
    ])


# --- torch-version ---


def test_torch_version_setting_and_declared_requirement(tmp_path):
    from gpulint.config import RuleSettings, torch_floor

    assert torch_floor("torch>=2.1,<3") == "2.1"
    assert torch_floor("torch==1.13.1") == "1.13"
    assert torch_floor("torch ~= 2.0") == "2.0"
    assert torch_floor("torch<2.3") is None and torch_floor("torchvision>=0.15") is None
    write(tmp_path, {"a/pyproject.toml": '[project]\nname = "a"\ndependencies = ["numpy", "torch>=1.13,<2.3"]\n\n[tool.gpulint]\n'})
    assert load_settings(tmp_path / "a" / "pyproject.toml").torch_version == "1.13"
    write(tmp_path, {"b/gpulint.toml": "", "b/requirements.txt": "numpy\ntorch==2.0.1 ; python_version > '3'\n"})
    s = load_settings(tmp_path / "b" / "gpulint.toml")
    assert s.torch_version == "2.0" and RuleSettings.of(s).torch_version == (2, 0)
    write(tmp_path, {"c/gpulint.toml": 'torch-version = "2.4"\n', "c/requirements.txt": "torch==2.0\n"})
    assert RuleSettings.of(load_settings(tmp_path / "c" / "gpulint.toml")).torch_version == (2, 4)
    write(tmp_path, {"d/gpulint.toml": 'torch-version = "latest"\n'})
    with pytest.raises(ConfigError, match="torch-version"):
        load_settings(tmp_path / "d" / "gpulint.toml")


def test_rules_see_the_torch_version(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[project]\nname = "p"\ndependencies = ["torch>=2.0"]\n\n[tool.gpulint]\nrule-dirs = ["r"]\n',
        "r/tv.py": (
            "from gpulint.rule import Rule\n"
            "class TV(Rule):\n"
            "    code = 'TST090'\n    name = 'tv'\n    summary = message = 'x'\n"
            "    def check(self, ctx):\n"
            "        yield ctx.finding(ctx.module.body[0], message=f'torch {ctx.settings.torch_version}')\n"
        ),
        "a.py": "x = 1\n",
    })
    r = gl(["check", "--no-cache", "--select", "TST090", "a.py"], tmp_path)
    assert "torch (2, 0)" in r.stdout


def test_explicit_file_that_cannot_be_looked_at_is_a_candidate_not_exit_2(tmp_path, monkeypatch):
    # a file in a folder without search permission: lstat fails with EACCES (simulated: the
    # tests run as root); it must reach the engine (GL000 there), not be "path does not exist"
    import gpulint.discovery as disc
    from gpulint.config import Resolver

    write(tmp_path, {"locked/a.py": CLEAN})
    real_lstat = os.lstat

    def lstat(p, *a, **k):
        if str(p).endswith("a.py"):
            raise PermissionError(13, "Permission denied", str(p))
        return real_lstat(p, *a, **k)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(disc.os, "lstat", lstat)
    found = disc.discover(["locked/a.py"], Resolver(None, cwd=tmp_path))
    assert [c.path for c in found] == ["locked/a.py"]
    with pytest.raises(disc.MissingPath):
        disc.discover(["locked/missing.py"], Resolver(None, cwd=tmp_path))
