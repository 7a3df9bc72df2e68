"""speed28: the program's check/fix without click (cli._fast_parse) and with only the built-in
rules a file needs (the rule manifest of gpulint.registry)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import BOTH, BUGGY, MOVE, REPO, gl_proc, problems, rule_pack, write

from gpulint import registry as reg_mod
from gpulint.cli import _fast_parse, cli
from gpulint.registry import LazyRule, Registry


# ---------------------------------------------------------------------------------------------
# the command line without click
# ---------------------------------------------------------------------------------------------


def _click_params(command: str, args: list[str]) -> dict | None:
    import click

    ctx = cli.make_context("gpulint", [command])
    sub = cli.get_command(ctx, command)
    try:
        return sub.make_context(command, list(args)).params
    except click.exceptions.ClickException:
        return None


PLAIN = [
    [],
    ["."],
    ["-q", "a.py", "b.py"],
    ["--select", "GL1", "--select", "GL4", "--ignore", "GL101", "--extend-select", "GL113"],
    ["--select=ALL", "--no-cache", "-j", "1", "x"],
    ["--jobs=256", "--output-format", "json"],
    ["--output-format=concise", "--exit-zero", "--statistics", "--show-fixes"],
    ["--fix", "--no-fix", "a.py"],
    ["--no-fix", "--fix"],
    ["--unsafe-fixes", "--diff", "--fix-only", "--exit-non-zero-on-fix"],
    ["--respect-gitignore", "--no-respect-gitignore", "--force-exclude"],
    ["--no-force-exclude", "--show-files", "--show-settings", "--add-noqa"],
    ["-", "--stdin-filename", "x.py"],
    ["--stdin-filename=", "-"],
    ["-o", "report.txt", "--config", "missing.toml"],
    ["--output-file", "r.json", "a.py", "-q", "b.py"],
    ["--select", "-", "--ignore", "GL2"],
    ["-j", "007"],
    [""],
]

NOT_PLAIN = [
    ["--help"],
    ["-h"],
    ["--", "a.py"],
    ["-qj2"],
    ["-j2"],
    ["-j", "0"],
    ["-j", "257"],
    ["-j", "+4"],
    ["-j", "two"],
    ["-j", " 4"],
    ["--output-format", "JSON"],
    ["--statistics=1"],
    ["--select"],
    ["--select", "-q"],
    ["--selec", "GL1"],
    ["-x"],
    ["-o=r.txt"],
    ["--config", "."],  # a folder: click refuses it
    ["--output-file", "."],
]


@pytest.mark.parametrize("args", PLAIN, ids=lambda a: " ".join(a) or "(none)")
@pytest.mark.parametrize("command", ["check", "fix"])
def test_fast_parse_gives_what_click_gives(tmp_path, monkeypatch, command, args):
    monkeypatch.chdir(tmp_path)
    got = _fast_parse(args)
    assert got is not None
    assert got == _click_params(command, args)


@pytest.mark.parametrize("args", NOT_PLAIN, ids=lambda a: " ".join(a))
def test_fast_parse_leaves_the_rest_to_click(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    assert _fast_parse(args) is None


def test_fast_parse_leaves_unreadable_paths_to_click(tmp_path, monkeypatch):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root reads every file")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "secret.py").write_text("x = 1\n")
    (tmp_path / "secret.py").chmod(0)
    assert _fast_parse(["secret.py"]) is None


# Command lines run by the program with and without click: the same exit status, stdout and
# stderr (and the same files afterwards).
PROGRAM_RUNS = [
    ["check", "--no-cache"],
    ["check", "--no-cache", "-q", "train.py"],
    ["check", "--no-cache", "--output-format", "json", "."],
    ["check", "--no-cache", "--output-format", "full", "."],
    ["check", "--no-cache", "--output-format", "sarif", "train.py"],
    ["check", "--no-cache", "--output-format", "github", "train.py"],
    ["check", "--no-cache", "--statistics", "."],
    ["check", "--no-cache", "--show-fixes", "--unsafe-fixes", "."],
    ["check", "--no-cache", "--select", "NOPE", "."],
    ["check", "--no-cache", "missing.py"],
    ["check", "--no-cache", "--show-files", "."],
    ["check", "--no-cache", "--show-settings", "train.py"],
    ["check", "--no-cache", "--diff", "--unsafe-fixes", "."],
    ["check", "--no-cache", "--select", "ALL", "-j", "2", "."],
    ["check", "--no-cache", "-o", "out/report.txt", "."],
    ["fix", "--no-cache", "--unsafe-fixes", "."],
    ["check", "--fix", "--no-cache", "train.py"],
    ["check", "--no-cache", "--exit-zero", "--select", "GL104", "move.py"],
    ["check", "--no-cache", "-", "--stdin-filename", "s.py"],
    ["fix", "--no-cache", "-", "--stdin-filename", "s.py"],
]


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("args", PROGRAM_RUNS, ids=lambda a: " ".join(a))
def test_program_without_click_runs_as_with_click(tmp_path, args):
    outs = []
    root = tmp_path / "p"  # the same folder for both runs (SARIF names it)
    for fast in ("1", "0"):
        shutil.rmtree(root, ignore_errors=True)
        write(root, {"train.py": BUGGY, "both.py": BOTH, "move.py": MOVE})
        p = gl_proc(args, root, input=BOTH.encode(), env={"GPULINT_FAST_CLI": fast})
        outs.append((p.returncode, p.stdout, p.stderr, _tree(root)))
    assert outs[0] == outs[1]
    assert b"Traceback" not in outs[0][2]


_PROBE = """
import json, sys
import gpulint.cli as c
c._exit_now = lambda code: None
sys.argv[0] = "gpulint"
try:
    c.program()
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print(json.dumps({"code": code, "click": "click" in sys.modules,
                  "rules": sorted(m.rpartition(".")[2][:5] for m in sys.modules if m.startswith("_gpulint_rules_"))}))
"""


def _probe(args: list[str], cwd: Path, env: dict) -> tuple[dict, str]:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    p = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600)
    *report, last = p.stdout.strip().splitlines()
    return json.loads(last), "\n".join(report)


def test_check_imports_neither_click_nor_the_rules_a_file_does_not_need(tmp_path):
    write(tmp_path, {"train.py": BUGGY})
    env = {"GPULINT_STARTUP_CACHE": str(tmp_path / "startup")}
    first, report1 = _probe(["check", "--no-cache", "train.py"], tmp_path, env)  # writes the manifest
    second, report2 = _probe(["check", "--no-cache", "train.py"], tmp_path, env)
    assert [p[3] for p in problems(report1)] == [p[3] for p in problems(report2)] == ["GL103"]
    assert first["code"] == second["code"] == 1
    assert not first["click"] and not second["click"]
    n_builtin = len({r.__module__ for r in Registry.load().rules})
    assert len(first["rules"]) == n_builtin  # no manifest yet: every rule imported
    # with the manifest: only the rules whose prefilters admit the file (GL103 among them)
    assert "gl103" in second["rules"] and len(second["rules"]) < n_builtin / 2
    # `gpulint rules` and `--help` still go through click
    third, _ = _probe(["check", "--help"], tmp_path, env)
    assert third["click"] and third["code"] == 0


# ---------------------------------------------------------------------------------------------
# the rule manifest
# ---------------------------------------------------------------------------------------------

_LOAD = """
import json, sys
from pathlib import Path
from gpulint import registry as R
rules = R._load_folder_lazy(Path(sys.argv[1]))
print(json.dumps([[r.__name__, isinstance(r, R._LazyRuleType)] + [getattr(r, f) for f in R.MANIFEST_FIELDS] for r in rules]))
print(json.dumps(sorted(m for m in sys.modules if m.startswith("_gpulint_rules_"))))
"""


def _load_in_process(folder: Path, cache: Path) -> tuple[list, list]:
    env = dict(os.environ, GPULINT_STARTUP_CACHE=str(cache))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", _LOAD, str(folder)], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    rules, mods = p.stdout.strip().splitlines()
    return [tuple(tuple(x) if isinstance(x, list) else x for x in r) for r in json.loads(rules)], json.loads(mods)


def _rules_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(reg_mod.builtin_rules_dir(), folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _manifest(cache: Path) -> Path:
    (m,) = cache.glob("rules-*.bin")
    return m


def test_manifest_is_written_then_used_and_says_what_the_rules_say(tmp_path):
    folder, cache = _rules_copy(tmp_path), tmp_path / "cache"
    eager, mods1 = _load_in_process(folder, cache)
    assert not any(lazy for _, lazy, *_ in eager) and len(mods1) == len({p for p in folder.glob("gl*.py")})
    assert _manifest(cache).stat().st_mode & 0o022 == 0
    lazy, mods2 = _load_in_process(folder, cache)
    assert all(is_lazy for _, is_lazy, *_ in lazy) and mods2 == []
    strip = lambda rows: sorted((name, *rest) for name, _, *rest in rows)  # noqa: E731
    assert strip(lazy) == strip(eager)


def test_an_edited_rule_file_makes_a_new_manifest(tmp_path):
    folder, cache = _rules_copy(tmp_path), tmp_path / "cache"
    _load_in_process(folder, cache)
    (target,) = folder.glob("gl103_*.py")
    text = target.read_text()
    assert text.count("    default = True\n") == 1
    target.write_text(text.replace("    default = True\n", "    default = False\n"))
    rules, _ = _load_in_process(folder, cache)
    row = next(r for r in rules if r[2] == "GL103")
    assert row[1] is False and row[4] is False  # imported again (not lazy), and the new default
    rules, _ = _load_in_process(folder, cache)
    row = next(r for r in rules if r[2] == "GL103")
    assert row[1] is True and row[4] is False  # the new manifest


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other-header", "world-writable", "other-key"])
def test_a_damaged_or_foreign_manifest_is_not_used(tmp_path, damage):
    folder, cache = _rules_copy(tmp_path), tmp_path / "cache"
    eager, _ = _load_in_process(folder, cache)
    path = _manifest(cache)
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(reg_mod._MANIFEST_HEADER + b"\x00\xff" * 100)
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "other-header":
        path.write_bytes(b"x" + data[1:])
    elif damage == "world-writable":
        path.chmod(0o666)
    else:  # a file of the folder added since
        (folder / "_helper.py").write_text("X = 1\n")
    again, mods = _load_in_process(folder, cache)
    assert not any(is_lazy for _, is_lazy, *_ in again) and mods
    assert again == eager


def test_a_manifest_that_does_not_match_its_rule_is_reported_and_removed(tmp_path, monkeypatch, capsys):
    folder, cache = _rules_copy(tmp_path), tmp_path / "cache"
    monkeypatch.setenv("GPULINT_STARTUP_CACHE", str(cache))
    _load_in_process(folder, cache)
    where = str(folder.resolve())
    path = reg_mod._manifest_path(where)
    key = reg_mod._manifest_key(where)
    files = reg_mod._read_manifest(path, key)
    assert files is not None
    # what no stamp can see: the manifest says GL103 is off by default, its module says on
    forged = [
        (name, tuple((q, (e[0], e[1], False, *e[3:]) if e[0] == "GL103" else e) for q, e in items)) for name, items in files
    ]
    reg_mod._write_manifest(path, key, forged)
    rules = reg_mod._load_folder_lazy(folder)
    gl103 = next(r for r in rules if r.code == "GL103")
    assert isinstance(gl103, reg_mod._LazyRuleType) and gl103.default is False
    real = gl103.real()
    assert real.default is True and real.code == "GL103"
    assert "rule manifest did not match gl103" in capsys.readouterr().err
    assert not os.path.exists(path)


def test_lazy_rules_find_and_fix_what_the_rules_do(tmp_path, monkeypatch):
    from gpulint.engine import Options, run_text

    monkeypatch.setenv("GPULINT_STARTUP_CACHE", str(tmp_path))
    Registry.load(lazy=True)  # writes the manifest
    lazy = Registry.load(lazy=True)
    eager = Registry.load()
    assert all(isinstance(r, reg_mod._LazyRuleType) for r in lazy.rules)
    assert [(r.code, r.name, r.default, r.kind, r.summary, r.fix_safety) for r in lazy.rules] == [
        (r.code, r.name, r.default, r.kind, r.summary, r.fix_safety) for r in eager.rules
    ]
    fixtures = sorted((REPO / "tests" / "fixtures").glob("GL1*/*.py"))[:40] + [None]
    for f in fixtures:
        text = BOTH if f is None else f.read_text(encoding="utf-8")
        got = []
        for r in (lazy, eager):
            out = run_text("t.py", text, [c() for c in r.rules], Options(fix=True, unsafe_fixes=True))
            got.append(([d.to_dict() for d in out.diagnostics], out.text, [d.code for d in out.fixed]))
        assert got[0] == got[1], f


def test_the_result_cache_fingerprint_is_the_same_with_lazy_rules(tmp_path, monkeypatch):
    from gpulint.config import Settings
    from gpulint.runner import fingerprint

    monkeypatch.setenv("GPULINT_STARTUP_CACHE", str(tmp_path))
    Registry.load(lazy=True)
    lazy, eager = Registry.load(lazy=True), Registry.load()
    assert isinstance(lazy.rules[0], reg_mod._LazyRuleType)
    codes = [r.code for r in eager.rules if r.default]
    assert fingerprint(Settings(tmp_path), codes, lazy) == fingerprint(Settings(tmp_path), codes, eager)


def test_a_projects_rule_folder_works_with_the_manifest(tmp_path):
    root = rule_pack(tmp_path / "p")
    write(root, {"train.py": BUGGY})
    runs = []
    for cache in (str(tmp_path / "startup"), str(tmp_path / "startup"), "0"):
        p = gl_proc(["check", "--no-cache", "--select", "ALL", "train.py"], root, env={"GPULINT_STARTUP_CACHE": cache})
        runs.append((p.returncode, p.stdout, p.stderr))
    assert runs[0] == runs[1] == runs[2]
    assert b"loading rules from" in runs[0][2]


def test_manifests_of_folders_that_are_gone_are_removed_when_one_is_written(tmp_path):
    cache = tmp_path / "cache"
    gone, kept = _rules_copy(tmp_path / "a"), _rules_copy(tmp_path / "b")
    _load_in_process(gone, cache)
    _load_in_process(kept, cache)
    assert len(list(cache.glob("rules-*.bin"))) == 2
    shutil.rmtree(gone)
    (cache / "rules-other.bin").write_bytes(b"not a manifest")
    third = _rules_copy(tmp_path / "c")
    _load_in_process(third, cache)
    names = sorted(p.name for p in cache.glob("rules-*.bin"))
    assert len(names) == 3 and "rules-other.bin" in names  # b's, c's, and the foreign file
    assert reg_mod._manifest_path(str(gone.resolve())).rpartition("/")[2] not in names
