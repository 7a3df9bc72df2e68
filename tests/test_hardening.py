"""Issue 11: no crash, no hang, no lost edit. One regression test (or more) per numbered item.

Inputs are generated here; expected outcomes come from CPython's documented behaviour (its
"too many nested parentheses" limit, its acceptance of long elif chains) and from the item's
description, not from running gpulint.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gpulint.engine
import gpulint.runner
from cli_support import BUGGY, BUGGY_FIXED, MOVE, MOVE_FIXED, REPO, gl, gl_proc, problems, write
from gpulint.engine import BadInput, Options, TooComplex, run_text
from gpulint.registry import Registry
from gpulint.rule import split_lines

DEEP_PARENS = "x = " + "(" * 1500 + "1" + ")" * 1500 + "\n"
PARENS_201 = "x = " + "(" * 201 + "1" + ")" * 201 + "\n"
CHAIN = "x = a" + "[0]" * 10_000 + "\n"
AND_CHAIN = "x = " + " and ".join(["a"] * 10_000) + "\n"
ELIF_500 = "x = 0\nif x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 500))


def gl000(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        if " GL000 " in line:
            path = line.split(":", 1)[0]
            out[path] = line.split(" GL000 ", 1)[1]
    return out


def _rules(*codes):
    reg = Registry.load()
    return [reg.by_code(c)() for c in codes]


# ---------------------------------------------------------------------------------------------
# 1. deep nesting and huge input
# ---------------------------------------------------------------------------------------------


def test_deep_parens_is_cpythons_syntax_error_not_a_segfault(tmp_path):
    write(tmp_path, {"deep.py": DEEP_PARENS, "p201.py": PARENS_201, "bug.py": BUGGY})
    p = gl_proc(["check", "--no-cache", "-j", "1", "."], tmp_path)
    out = p.stdout.decode()
    assert p.returncode == 1, p.stderr.decode()
    errors = gl000(out)
    # CPython: "too many nested parentheses" past 200 levels (its tokenizer's MAXLEVEL)
    assert "too many nested parentheses" in errors["deep.py"]
    assert "too many nested parentheses" in errors["p201.py"]
    assert ("bug.py", 4, 7, "GL103") in problems(out)


def test_deep_nesting_in_parallel_does_not_break_the_pool(tmp_path):
    files = {f"f{i}.py": MOVE for i in range(6)}
    files.update({"deep.py": DEEP_PARENS, "chain.py": CHAIN})
    write(tmp_path, files)
    p = gl_proc(["fix", "--no-cache", "-j", "2", "."], tmp_path)
    err = p.stderr.decode()
    assert "Traceback" not in err and "BrokenProcessPool" not in err
    assert set(gl000(p.stdout.decode())) == {"deep.py", "chain.py"}
    for i in range(6):
        assert (tmp_path / f"f{i}.py").read_text() == MOVE_FIXED
    assert not list(tmp_path.glob(".gpulint-*.tmp"))


@pytest.mark.parametrize("text", [CHAIN, AND_CHAIN, "x = a" + ".a" * 10_000 + "\n", "x = " + "-" * 5000 + "1\n"])
def test_long_chains_are_reported_quickly_not_analysed_for_minutes(text):
    with pytest.raises(TooComplex):
        run_text("t.py", text, _rules("GL104"), Options())


def test_500_branch_elif_agrees_with_cpython():
    compile(ELIF_500, "t.py", "exec")  # CPython accepts it
    out = run_text("t.py", "import torch\n" + ELIF_500 + "t = torch.zeros(2)\nt.to('cpu')\n", _rules("GL104"), Options())
    assert [d.code for d in out.diagnostics] == ["GL104"]


def test_node_bound(monkeypatch):
    monkeypatch.setattr(gpulint.engine, "MAX_NODES", 1000)
    text = "x = [" + ", ".join(["1"] * 2000) + "]\n"
    with pytest.raises(TooComplex, match="syntax nodes"):
        run_text("t.py", text, _rules("GL104"), Options())


def test_time_bound_stops_a_runaway_analysis(monkeypatch, tmp_path):
    """A rule that never ends is stopped by the per-file CPU bound; the other files are checked."""
    monkeypatch.setattr(gpulint.engine, "MAX_FILE_SECONDS", 0.5)
    from gpulint.rule import Rule

    class Forever(Rule):
        code = "TST900"
        name = "forever"
        summary = message = "x"

        def check(self, ctx):
            if "spin" in ctx.source:
                while True:
                    pass
            return ()

    write(tmp_path, {"a.py": "spin = 1\n", "b.py": MOVE})
    res_a = gpulint.engine.process_file(str(tmp_path / "a.py"), "a.py", [Forever()], Options())
    assert [d.code for d in res_a.diagnostics] == ["GL000"]
    assert "CPU time" in res_a.diagnostics[0].message
    res_b = gpulint.engine.process_file(str(tmp_path / "b.py"), "b.py", _rules("GL104"), Options())
    assert [d.code for d in res_b.diagnostics] == ["GL104"]


def test_recursion_error_in_analysis_is_gl000_not_a_rule_bug(tmp_path):
    from gpulint.rule import Rule

    class Deep(Rule):
        code = "TST901"
        name = "deep"
        summary = message = "x"

        def check(self, ctx):
            def f(n):
                return f(n + 1)

            f(0)
            return ()

    res = gpulint.engine.process_file(str(write(tmp_path, {"a.py": "x = 1\n"}) / "a.py"), "a.py", [Deep()], Options())
    assert [d.code for d in res.diagnostics] == ["GL000"]
    assert "too deeply nested" in res.diagnostics[0].message


def test_dead_worker_is_replaced_and_its_file_reported(tmp_path, monkeypatch):
    """A worker killed mid-file (as by a native crash): the file is a GL000, the rest checked."""
    files = {f"f{i}.py": MOVE for i in range(8)}
    files["crash.py"] = "crash_me = 1\n"
    write(tmp_path, files)
    real = gpulint.runner.process_file

    def crashing(path, display, rules, opts):
        if path.endswith("crash.py"):
            import faulthandler

            faulthandler.disable()  # pytest's handler would print this worker's stack
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, display, rules, opts)

    monkeypatch.setattr(gpulint.runner, "process_file", crashing)
    r = gl(["check", "--no-cache", "-j", "2", "."], tmp_path)
    assert r.exit_code == 1
    errors = gl000(r.stdout)
    assert list(errors) == ["crash.py"] and "signal 11" in errors["crash.py"]
    assert sorted(p for p, *_ in problems(r.stdout) if p != "crash.py") == sorted(f"f{i}.py" for i in range(8))


def test_dead_worker_mid_write_leaves_no_temp_file(tmp_path, monkeypatch):
    files = {f"f{i}.py": MOVE for i in range(4)}
    files["dies.py"] = MOVE
    write(tmp_path, files)
    real_replace = os.replace

    def dying_replace(src, dst, *a, **k):
        if str(dst).endswith("dies.py"):
            os.kill(os.getpid(), signal.SIGKILL)  # between writing the temp file and the rename
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(gpulint.engine.os, "replace", dying_replace)
    r = gl(["fix", "--no-cache", "-j", "2", "."], tmp_path)
    assert "dies.py" in gl000(r.stdout)
    assert not list(tmp_path.glob(".gpulint-*.tmp"))
    assert (tmp_path / "dies.py").read_text() == MOVE
    assert all((tmp_path / f"f{i}.py").read_text() == MOVE_FIXED for i in range(4))


# ---------------------------------------------------------------------------------------------
# 2. lost update
# ---------------------------------------------------------------------------------------------


def test_file_edited_while_fix_runs_is_not_overwritten(tmp_path, monkeypatch):
    write(tmp_path, {"a.py": MOVE})
    real = gpulint.engine.run_text
    edited = MOVE + "# the user's new line\n"

    def then_edit(path, text, rules, opts):
        out = real(path, text, rules, opts)
        (tmp_path / "a.py").write_text(edited)  # an editor saves while gpulint analyses
        return out

    monkeypatch.setattr(gpulint.engine, "run_text", then_edit)
    r = gl(["fix", "--no-cache", "-j", "1", "."], tmp_path)
    assert (tmp_path / "a.py").read_text() == edited
    assert "changed on disk" in gl000(r.stdout)["a.py"]
    assert "Fixed 1" not in r.stdout and r.exit_code == 1


# ---------------------------------------------------------------------------------------------
# 3. workers die with their parent
# ---------------------------------------------------------------------------------------------

_PARENT = r"""
import os, sys, time
sys.path.insert(0, {repo!r})
import gpulint.runner as runner
real = runner.process_file
def slow(path, display, rules, opts):
    with open({log!r}, "a") as fh:
        fh.write(f"{{os.getpid()}} {{display}}\n")
    time.sleep(0.3)
    return real(path, display, rules, opts)
runner.process_file = slow
from gpulint.cli import cli
cli.main(args=["fix", "--no-cache", "-j", "2", {tree!r}], standalone_mode=False)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_their_parent(tmp_path, sig):
    tree = tmp_path / "tree"
    write(tree, {f"f{i:02d}.py": MOVE for i in range(40)})
    log = tmp_path / "log"
    script = tmp_path / "parent.py"
    script.write_text(_PARENT.format(repo=str(REPO), log=str(log), tree=str(tree)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 4):
        time.sleep(0.05)
    workers = {int(line.split()[0]) for line in log.read_text().splitlines()}
    assert workers and proc.pid not in workers
    proc.send_signal(sig)
    proc.wait(60)
    if sig == signal.SIGTERM:  # unwound like Ctrl-C: workers stopped, temporary files removed
        assert proc.returncode == 143
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() and _alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() and _alive(w) for w in workers)
    n_started = len(log.read_text().splitlines())
    time.sleep(1.0)
    assert len(log.read_text().splitlines()) == n_started  # nothing processed after the parent died
    assert n_started < 40
    assert not list(tree.glob(".gpulint-*.tmp"))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# 6. FIFOs and devices
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifo_named_like_a_python_file_does_not_block(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    os.mkfifo(tmp_path / "x.py")
    p = gl_proc(["check", "--no-cache", "-j", "1", "x.py", "bug.py"], tmp_path)
    out = p.stdout.decode()
    assert "not a regular file" in gl000(out)["x.py"]
    assert ("bug.py", 4, 7, "GL103") in problems(out)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_symlink_to_dev_zero_is_not_read(tmp_path):
    os.symlink("/dev/zero", tmp_path / "x.py")
    p = gl_proc(["check", "--no-cache", "-j", "1", "x.py"], tmp_path)
    assert p.returncode == 1
    assert "not a regular file" in gl000(p.stdout.decode())["x.py"]


def test_read_is_bounded_whatever_the_size_claims(tmp_path, monkeypatch):
    """A file whose size says small but that keeps giving bytes (a growing file, a /proc-like
    file) is read only up to the limit."""
    monkeypatch.setattr(gpulint.engine, "MAX_FILE_BYTES", 100)
    f = tmp_path / "a.py"
    f.write_text("x = 1\n" * 50)  # 300 bytes
    real_stat, real_fstat = os.stat, os.fstat

    def small(st):
        fields = list(st)
        fields[6] = 10  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(gpulint.engine.os, "stat", lambda p, *a, **k: small(real_stat(p, *a, **k)))
    monkeypatch.setattr(gpulint.engine.os, "fstat", lambda fd: small(real_fstat(fd)))
    with pytest.raises(BadInput, match="too large"):
        gpulint.engine.read_source(str(f))


# ---------------------------------------------------------------------------------------------
# 7. re-indentation splits lines on \n, \r\n, \r only
# ---------------------------------------------------------------------------------------------


def test_split_lines_keeps_unicode_line_separators():
    text = 'a = "x\u2028y\x0cz\x85w"\r\nb = 1\rc = 2\n'
    assert split_lines(text, keepends=True) == ['a = "x\u2028y\x0cz\x85w"\r\n', "b = 1\r", "c = 2\n"]
    assert split_lines("a\n\nb") == ["a", "", "b"]
    assert "".join(split_lines(text, keepends=True)) == text


def test_gl403_fix_does_not_change_a_string_with_u2028():
    src = (
        "import torch\n"
        "model = torch.nn.Linear(2, 2)\n"
        "data = [torch.zeros(2)]\n"
        "model.eval()\n"
        "for x in data:\n"
        '    print("a\u2028b", model(x))\n'
    )
    out = run_text("t.py", src, _rules("GL403"), Options(fix=True, unsafe_fixes=True, write=False))
    assert out.text != src, "the fixture is meant to be fixed by GL403"
    assert '"a\u2028b"' in out.text
    compile(out.text, "t.py", "exec")


# ---------------------------------------------------------------------------------------------
# 8. write semantics
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_fix_writes_through_a_symlink(tmp_path):
    write(tmp_path, {"real/target.py": MOVE})
    os.symlink(tmp_path / "real" / "target.py", tmp_path / "link.py")
    r = gl(["fix", "--no-cache", "-j", "1", "link.py"], tmp_path)
    assert r.exit_code == 0, r.stdout
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real" / "target.py").read_text() == MOVE_FIXED


def test_read_only_file_is_left_alone_with_a_diagnostic(tmp_path):
    write(tmp_path, {"ro.py": MOVE, "rw.py": MOVE})
    (tmp_path / "ro.py").chmod(0o444)
    try:
        r = gl(["fix", "--no-cache", "-j", "1", "."], tmp_path)
        assert (tmp_path / "ro.py").read_text() == MOVE
        assert stat.S_IMODE((tmp_path / "ro.py").stat().st_mode) == 0o444
        assert "read-only" in gl000(r.stdout)["ro.py"]
        assert ("ro.py", 3, 1, "GL104") in problems(r.stdout)  # still there: not fixed
        assert (tmp_path / "rw.py").read_text() == MOVE_FIXED
        assert "(1 fixed, " in r.stdout  # rw.py only
    finally:
        (tmp_path / "ro.py").chmod(0o644)


def test_failed_write_is_reported_not_counted(tmp_path, monkeypatch):
    write(tmp_path, {"a.py": MOVE})

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gpulint.engine.os, "fsync", full_disk)
    r = gl(["fix", "--no-cache", "-j", "1", "."], tmp_path)
    assert (tmp_path / "a.py").read_text() == MOVE
    assert "No space left" in gl000(r.stdout)["a.py"]
    assert ("a.py", 3, 1, "GL104") in problems(r.stdout)  # still in the file: reported, not counted
    assert " fixed, " not in r.stdout
    assert not list(tmp_path.glob(".gpulint-*.tmp"))


# ---------------------------------------------------------------------------------------------
# 9. tracebacks that become a diagnostic or exit 2
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "[1, 2, 3]",
        '{"x": 1}',
        '{"%s": [1]}',
        '{"%s": {"mtime": "a", "size": %z, "hash": "%h", "diagnostics": []}}',
        '{"%s": {"mtime": %m, "size": %z, "hash": "%h", "diagnostics": [{"code": 1}]}}',
        '{"%s": {"mtime": %m, "size": %z, "hash": "%h", "diagnostics": [{"code": "GL104", "name": "n", "message": "m", '
        '"path": "p", "line": "x", "col": 1, "end_line": 1, "end_col": 1}]}}',
    ],
)
def test_cache_of_the_wrong_shape_is_ignored(tmp_path, content):
    write(tmp_path, {"a.py": MOVE})
    r = gl(["check", "-j", "1", "."], tmp_path)  # writes the cache
    assert ("a.py", 3, 1, "GL104") in problems(r.stdout)
    caches = list((tmp_path / ".gpulint_cache").rglob("*.json"))
    assert len(caches) == 1
    # every entry, and the mtime the cache has, point at this file: a stale mtime makes it re-hash
    # the entries carry this file's real stamp (%m, %z, %h), so that they are used, not re-checked
    st = (tmp_path / "a.py").stat()
    digest = gpulint.engine.digest((tmp_path / "a.py").read_bytes())
    content = content.replace("%m", str(st.st_mtime_ns)).replace("%z", str(st.st_size)).replace("%h", digest)
    caches[0].write_text(content.replace("%s", str((tmp_path / "a.py").resolve()).replace("\\", "\\\\")))
    for _ in range(2):
        r = gl(["check", "-j", "1", "."], tmp_path)
        assert r.exit_code == 1
        assert ("a.py", 3, 1, "GL104") in problems(r.stdout)


def test_deep_nesting_on_stdin_is_gl000():
    p = gl_proc(["check", "--no-cache", "-"], REPO, input=CHAIN.encode())
    assert p.returncode == 1
    assert b"Traceback" not in p.stderr
    assert b"GL000" in p.stdout and b"too deeply nested" in p.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that takes any bytes in names")
def test_non_utf8_file_name_with_sarif_output(tmp_path):
    name = b"caf\xe9.py"
    with open(os.path.join(os.fsencode(tmp_path), name), "w") as fh:
        fh.write(MOVE)
    p = gl_proc(["check", "--no-cache", "--output-format", "sarif", "."], tmp_path)
    assert b"Traceback" not in p.stderr, p.stderr.decode(errors="replace")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["runs"][0]["results"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a process group")
def test_ctrl_c_exits_130_and_leaves_no_temp_file(tmp_path):
    tree = tmp_path / "tree"
    write(tree, {f"f{i:02d}.py": MOVE for i in range(40)})
    log = tmp_path / "log"
    script = tmp_path / "parent.py"
    # A terminal's foreground job gets SIGINT with Python's default handler. The process running
    # this test may have inherited SIGINT ignored or blocked (both survive exec), which would make
    # the child finish its run and exit 0: the child puts the terminal's disposition back first.
    prelude = (
        "import signal\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
    )
    script.write_text(
        prelude
        + _PARENT.format(repo=str(REPO), log=str(log), tree=str(tree)).replace(
            "cli.main(args=", "cli.main(prog_name='gpulint', args="
        ).replace("standalone_mode=False", "standalone_mode=True")
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 4):
        time.sleep(0.05)
    started = len(log.read_text().splitlines()) if log.exists() else 0
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    out, err = proc.communicate(timeout=60)
    n_logged = len(log.read_text().splitlines()) if log.exists() else 0
    assert proc.returncode == 130, (started, n_logged, err.decode())
    assert n_logged < 40  # stopped part-way, not a run that finished before the signal
    assert b"Traceback" not in err and b"Aborted" not in err
    assert not list(tree.glob(".gpulint-*.tmp"))


# ---------------------------------------------------------------------------------------------
# 10. CR-only prefilters, --select ""
# ---------------------------------------------------------------------------------------------


def test_anchored_prefilter_matches_in_a_cr_only_file():
    # GL104's prefilter is anchored with ^: with CR-only line endings it never matched
    src = MOVE.replace("\n", "\r")
    out = run_text("t.py", src, _rules("GL104"), Options())
    assert [(d.code, d.line) for d in out.diagnostics] == [("GL104", 3)]


@pytest.mark.parametrize("sel", ["", ",", " "])
def test_empty_select_is_a_usage_error(tmp_path, sel):
    write(tmp_path, {"a.py": BUGGY})
    r = gl(["check", "--no-cache", "--select", sel, "."], tmp_path)
    assert r.exit_code == 2
    assert "--select" in r.stderr


def test_huge_literal_is_bounded_before_pythons_parser(monkeypatch):
    """A 5 MB list literal: reported from a token count, without building its syntax tree."""
    text = "x = [" + ", ".join(str(i % 1000) for i in range(1_300_000)) + "]\n"
    monkeypatch.setattr(gpulint.engine, "python_syntax", lambda t: pytest.fail("the tree was built"))
    with pytest.raises(TooComplex, match="tokens"):
        run_text("t.py", text, _rules("GL104"), Options())


def test_concurrent_analyses_keep_the_raised_recursion_limit():
    """The editor server analyses in threads: an analysis that finishes must not put the
    process-wide recursion limit back while another one is still recursing deeply."""
    base = sys.getrecursionlimit()
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    results: dict = {}

    def deep(n: int) -> int:
        return 0 if n == 0 else 1 + deep(n - 1)

    def quick():
        a_in.set()
        assert b_in.wait(60)
        return "a"

    def deep_after_a():
        b_in.set()
        assert a_done.wait(60)  # A has finished (and, before the fix, lowered the limit)
        return deep(base + 4000)

    def run(name, fn, then=None):
        try:
            results[name] = gpulint.engine.guarded(fn)
        except BaseException as exc:  # noqa: B036 - reported by the assertion below
            results[name] = exc
        if then is not None:
            then.set()

    ta = threading.Thread(target=run, args=("a", quick, a_done))
    ta.start()
    assert a_in.wait(60)
    tb = threading.Thread(target=run, args=("b", deep_after_a))
    tb.start()
    ta.join(120)
    tb.join(120)
    assert results == {"a": "a", "b": base + 4000}
    assert sys.getrecursionlimit() == base  # the last analysis to finish put it back


def test_two_deeply_nested_analyses_at_once_agree_with_one_alone():
    text = "import torch\n" + ELIF_500 + "t = torch.zeros(2)\nt.to('cpu')\n"
    alone = [(d.code, d.line) for d in run_text("t.py", text, _rules("GL104"), Options()).diagnostics]
    assert alone and all(code == "GL104" for code, _ in alone)
    base = sys.getrecursionlimit()
    outs: dict = {}

    def one(i: int) -> None:
        try:
            outs[i] = [(d.code, d.line) for d in run_text("t.py", text, _rules("GL104"), Options()).diagnostics]
        except BaseException as exc:  # noqa: B036 - reported by the assertion below
            outs[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert outs == {0: alone, 1: alone, 2: alone}
    assert sys.getrecursionlimit() == base
