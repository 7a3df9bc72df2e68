"""Start-up: what `check` imports, and the start-up cache of compiled dataclass methods."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
from cli_support import BUGGY, REPO, gl_proc, problems, write

from gpulint import _startup

# runs the `gpulint` program's main() in a fresh interpreter and prints the modules it imported
# (JSON) after the report
_PROBE = """
import json, sys
from gpulint.cli import main
sys.argv[0] = "gpulint"
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(args: list[str], cwd, env: dict) -> tuple[list[str], str]:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    p = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    *report, last = p.stdout.strip().splitlines()  # main() exits 0/1 on findings: caught
    return json.loads(last), "\n".join(report)


# modules a plain `check` of a .py file never needs: diff output, config parsing (there is no
# config file), writing files, the editor server, notebooks, the emulator, LibCST's codemods and
# matchers, and torch itself (linting is static)
NOT_NEEDED = (
    "difflib",
    "tomllib",
    "tempfile",
    "gpulint.server",
    "gpulint.notebook",
    "gpulint.emulate",
    "pygls",
    "lsprotocol",
    "libcst.codemod",
    "libcst.matchers",
    "libcst.metadata",
    "libcst.helpers",
    "libcst._batched_visitor",
    "libcst._parser",  # the Python entry points and tokenizer: a text goes to the native parser
    "hashlib",  # its import loads OpenSSL; the content hash is blake2b from CPython's _blake2
    "torch",
)


def test_check_does_not_import_what_it_does_not_need(tmp_path):
    write(tmp_path, {"train.py": BUGGY})
    mods, report = _modules_after(
        ["check", "--no-cache", "--exit-zero", "train.py"], tmp_path, {"GPULINT_STARTUP_CACHE": "0", "GPULINT_LAZY_LIBCST": ""}
    )
    assert [p[3] for p in problems(report)] == ["GL103"]  # the file was analysed
    assert "libcst" in mods and "gpulint.flow" in mods
    loaded = [m for m in NOT_NEEDED if m in mods or any(x.startswith(m + ".") for x in mods)]
    assert loaded == []


def test_fix_diff_imports_difflib(tmp_path):
    """The other side of the test above: --diff does import difflib (the probe sees imports)."""
    write(tmp_path, {"train.py": BUGGY})
    mods, report = _modules_after(["check", "--no-cache", "--diff", "train.py"], tmp_path, {"GPULINT_STARTUP_CACHE": "0"})
    assert "difflib" in mods
    assert '-opt = torch.optim.SGD(model.parameters(), lr=0.1).to("cpu")' in report


def test_startup_cache_is_written_then_used_with_the_same_results(tmp_path):
    write(tmp_path, {"train.py": BUGGY, "b.py": BUGGY.replace("SGD", "Adam")})
    cache = tmp_path / "startup"
    args = ["check", "--no-cache", "--output-format", "json", "."]
    off = gl_proc(args, tmp_path, env={"GPULINT_STARTUP_CACHE": "0"})
    first = gl_proc(args, tmp_path, env={"GPULINT_STARTUP_CACHE": str(cache)})
    files = [f for f in cache.iterdir() if f.name.startswith("dataclasses-")]  # (and the rule manifest)
    assert [f.name for f in files] == [f"dataclasses-{sys.implementation.cache_tag}-{_startup_magic()}.bin"]
    assert files[0].stat().st_mode & 0o022 == 0
    stamp = files[0].stat().st_mtime_ns
    second = gl_proc(args, tmp_path, env={"GPULINT_STARTUP_CACHE": str(cache)})
    assert files[0].stat().st_mtime_ns == stamp  # nothing new to compile: not rewritten
    assert off.returncode == first.returncode == second.returncode == 1
    assert [d["code"] for d in json.loads(off.stdout)] == ["GL103", "GL103"]
    assert off.stdout == first.stdout == second.stdout
    assert off.stderr == first.stderr == second.stderr == b""


def _startup_magic() -> str:
    import importlib.util

    return importlib.util.MAGIC_NUMBER.hex()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other-header", "world-writable"])
def test_a_damaged_or_foreign_cache_is_not_used(tmp_path, damage):
    write(tmp_path, {"train.py": BUGGY})
    cache = tmp_path / "startup"
    args = ["check", "--no-cache", "train.py"]
    good = gl_proc(args, tmp_path, env={"GPULINT_STARTUP_CACHE": str(cache)})
    (path,) = cache.glob("dataclasses-*")  # (the rule manifest is tested in test_speed28.py)
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(_startup._HEADER + b"\x00\xff" * 100)
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "other-header":
        path.write_bytes(b"x" + data[1:])
    else:
        path.chmod(0o666)
        assert _startup._load(str(path)) == {}  # someone else could have written its code
    again = gl_proc(args, tmp_path, env={"GPULINT_STARTUP_CACHE": str(cache)})
    assert (again.returncode, again.stdout, again.stderr) == (good.returncode, good.stdout, good.stderr)
    assert problems(again.stdout.decode())[0][3] == "GL103"


def test_compile_cache_gives_the_same_classes(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULINT_STARTUP_CACHE", str(tmp_path))

    def make():
        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int = 2
            tags: tuple = dataclasses.field(default=(), compare=False)

        return Point

    plain = make()
    with _startup.compile_cache():
        assert "exec" in vars(dataclasses)
        recorded = make()
    assert "exec" not in vars(dataclasses)  # the hook is gone after the block
    (path,) = tmp_path.iterdir()
    codes = _startup._load(str(path))
    assert any("def __init__(self" in text and "_type_tags" in text for text in codes)  # Point's
    with _startup.compile_cache():
        cached = make()
    for cls in (recorded, cached):
        p = cls(1, tags=("a",))
        assert repr(p) == repr(plain(1, tags=("a",)))
        assert p == cls(1, 2) and p != cls(1, 3) and hash(p) == hash(cls(1, 2))
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 5
        with pytest.raises(TypeError):
            cls()
        assert cls.__init__.__annotations__ == plain.__init__.__annotations__
        assert cls.__init__.__defaults__ == plain.__init__.__defaults__


def test_compile_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULINT_STARTUP_CACHE", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with _startup.compile_cache():

        @dataclasses.dataclass
        class Unused:
            a: int

    assert Unused(1).a == 1
    assert list(tmp_path.iterdir()) == []


def test_cache_file_keeps_other_runs_texts_only_while_few(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULINT_STARTUP_CACHE", str(tmp_path))
    path = _startup._cache_file()

    def seed(n: int) -> None:
        texts = [f"def __create_fn__():\n def f{i}(self):\n  return {i}\n return f{i}" for i in range(n)]
        _startup._save(path, {t: compile(t, "<string>", "exec", dont_inherit=True) for t in texts})

    def run() -> dict:
        with _startup.compile_cache():
            for fields in ("a b", "c d", "e f"):  # three classes: three texts or more (six each on 3.11)
                dataclasses.make_dataclass("Used", fields.split(), frozen=True)
        return _startup._load(path)

    own = len(run())
    assert own >= 3
    seed(1)  # one text of another run: kept beside this run's
    kept = run()
    assert len(kept) == own + 1 and sum("def f0(" in t for t in kept) == 1
    seed(50)  # fifty: only this run's are kept
    trimmed = run()
    assert len(trimmed) == own and not any("def f0(" in t for t in trimmed)


# ---------------------------------------------------------------------------------------------
# LibCST imported without its metadata providers and helpers until they are used
# ---------------------------------------------------------------------------------------------

OLD_AMP = """import torch
from torch.cuda.amp import autocast, GradScaler

model = torch.nn.Linear(2, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = GradScaler()
for x in range(3):
    with autocast():
        loss = model(torch.randn(2, 2, device="cuda")).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
"""


def test_metadata_path_gives_the_same_results_lazily(tmp_path):
    """A deprecated torch.cuda.amp import makes the AMP analysis resolve scopes with LibCST's
    metadata: the package is completed then, and the report and the fixes are the same."""
    write(tmp_path, {"train.py": OLD_AMP})
    args = ["check", "--no-cache", "--diff", "train.py"]
    lazy_mods, lazy = _modules_after(args, tmp_path, {"GPULINT_STARTUP_CACHE": "0", "GPULINT_LAZY_LIBCST": ""})
    _, plain = _modules_after(args, tmp_path, {"GPULINT_STARTUP_CACHE": "0", "GPULINT_LAZY_LIBCST": "0"})
    assert "libcst.metadata.scope_provider" in lazy_mods  # the path was taken
    assert lazy == plain
    assert "+from torch.amp import autocast, GradScaler" in lazy


_PACKAGE_PROBE = """
import importlib, json, sys
if sys.argv[1] == "lazy":
    from gpulint._startup import lazy_libcst
    lazy_libcst()
import libcst
before = sorted(m for m in sys.modules if m.startswith("libcst."))
initializing = getattr(libcst.__spec__, "_initializing", None)
parsed = type(libcst.parse_module("x = 1\\n").body[0]).__name__
if sys.argv[2] != "-":
    importlib.import_module(sys.argv[2])  # a subpackage first, or
else:
    libcst.MetadataWrapper  # a name of the rest of the package first
names = sorted(n for n in vars(libcst) if not n.startswith("__"))
print(json.dumps({"before": before, "parsed": parsed, "initializing": initializing, "names": names, "all": libcst.__all__,
                  "same": libcst.MetadataWrapper is importlib.import_module("libcst.metadata").MetadataWrapper}))
"""


@pytest.mark.parametrize("first", ["-", "libcst.metadata", "libcst.matchers", "libcst.codemod"])
def test_lazy_libcst_becomes_the_whole_package(first):
    def probe(mode: str) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        p = subprocess.run([sys.executable, "-c", _PACKAGE_PROBE, mode, first], env=env, capture_output=True, text=True, timeout=600, check=False)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    lazy, plain = probe("lazy"), probe("plain")
    assert "libcst.metadata" in plain["before"] and "libcst.metadata" not in lazy["before"]
    assert "libcst._nodes.expression" in lazy["before"]
    assert lazy["parsed"] == plain["parsed"] == "SimpleStatementLine"
    # the spec as importlib leaves it: imports of the package (one per node LibCST's native
    # parser builds) do not look for a missing `_initializing` and drop an AttributeError
    assert lazy["initializing"] is plain["initializing"] is False
    assert lazy["same"] and plain["same"]
    assert lazy["all"] == plain["all"]
    assert set(plain["all"]) <= set(lazy["names"])
    # after completion the package has the names a plain import gives (submodules aside)
    assert [n for n in lazy["names"] if not n.startswith("_")] == [n for n in plain["names"] if not n.startswith("_")]


def test_in_process_runs_do_not_use_the_startup_paths(tmp_path, monkeypatch):
    """click's test runner (and an editor) run the commands inside their own process: no cache
    file is written and LibCST is not replaced there; the results are the same."""
    from cli_support import gl

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("GPULINT_STARTUP_CACHE", raising=False)
    write(tmp_path, {"train.py": BUGGY})
    r = gl(["check", "--no-cache", "train.py"], tmp_path)
    assert [p[3] for p in problems(r.stdout)] == ["GL103"]
    assert not (tmp_path / "xdg").exists()
    assert "exec" not in vars(dataclasses)
    import libcst

    assert "__getattr__" not in vars(libcst)


_PARSE_PROBE = """
import json, sys
if sys.argv[1] == "lazy":
    from gpulint._startup import lazy_libcst
    lazy_libcst()
import libcst
texts = ["x = 1\\n", "x = 1", "if a:\\r\\n\\tb = 2\\r\\n", "\\ufeffdef f():\\n    return 1\\n", "", "# c\\n\\n",
         "# -*- coding: latin-1 -*-\\ns = 'caf\\u00e9'\\n", "async def g():\\n    await h()\\n"]
out = [repr(libcst.parse_module(t)) for t in texts]
out.append(sorted(m for m in sys.modules if m.startswith("libcst._parser")))
out.append(repr(libcst.parse_module(b"y = 2\\n")))  # bytes: LibCST's own entry point
out.append(sorted(m for m in sys.modules if m.startswith("libcst._parser")) != [])
print(json.dumps(out))
"""


def test_lazy_parse_module_gives_libcsts_trees():
    """The incomplete package's `parse_module` (the native parser, without LibCST's Python entry
    points) gives the trees LibCST's own gives; bytes go to LibCST's own."""
    def probe(mode: str) -> list:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        p = subprocess.run([sys.executable, "-c", _PARSE_PROBE, mode], env=env, capture_output=True, text=True, timeout=600, check=False)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    lazy, plain = probe("lazy"), probe("plain")
    assert lazy[-3] == []  # texts parsed without the Python entry points
    assert lazy[-1] is True  # bytes: the package was completed, LibCST's own parsed them
    assert lazy[:-3] == plain[:-3] and lazy[-2] == plain[-2]


# the program with an exit handler of its own: printed when the interpreter's finalization runs
_EXIT_PROBE = """
import atexit, sys
atexit.register(lambda: print("finalized", file=sys.stderr))
sys.argv = ["gpulint", *sys.argv[1:]]
from gpulint.cli import program
program()
"""


def _run_probe(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", _EXIT_PROBE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_check_exits_without_finalization_and_with_its_whole_output(tmp_path):
    """A check/fix run of the program exits at once (no finalization) with its exit status and
    its whole report (flushed first: more than a pipe's buffer here); other commands exit the
    usual way."""
    from cli_support import gl

    write(tmp_path, {f"pkg/t{i:03d}.py": BUGGY for i in range(300)})
    p = _run_probe(["check", "--no-cache", "-j", "1", "pkg"], tmp_path)
    assert p.returncode == 1
    assert "finalized" not in p.stderr
    assert p.stdout == gl(["check", "--no-cache", "-j", "1", "pkg"], tmp_path).stdout
    assert len(problems(p.stdout)) == 300 and len(p.stdout) > 4 * 8192  # (io.DEFAULT_BUFFER_SIZE)
    ok = _run_probe(["check", "--no-cache", "--exit-zero", "pkg/t000.py"], tmp_path)
    assert ok.returncode == 0 and "finalized" not in ok.stderr and len(problems(ok.stdout)) == 1
    bad = _run_probe(["check", "--no-cache", "missing.py"], tmp_path)
    assert bad.returncode == 2 and "finalized" not in bad.stderr and "path does not exist" in bad.stderr
    listed = _run_probe(["rules"], tmp_path)
    assert listed.returncode == 0 and "finalized" in listed.stderr and "GL103" in listed.stdout


def test_exit_now_returns_when_the_output_cannot_be_flushed(monkeypatch):
    from gpulint import cli

    class Broken:
        def flush(self):
            raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", Broken())
    assert cli._exit_now(1) is None  # not exited: the usual exit reports the broken pipe
    monkeypatch.undo()
    assert cli._exit_now("a message") is None
