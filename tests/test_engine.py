"""The engine: bad input, the fix loop, writing files back, parallel runs and the cache."""

from __future__ import annotations

import json
import os
import stat

import pytest

import gpulint.discovery
import gpulint.engine
import gpulint.runner
from cli_support import BOTH, BUGGY, BUGGY_FIXED, CLEAN, MOVE, MOVE_FIXED, gl, gl_proc, problems, rule_pack, write
from gpulint.engine import BadInput, Options, decode, run_text
from gpulint.registry import Registry


def gl000(result_stdout: str) -> dict[str, tuple[int, int, str]]:
    """path -> (line, col, message) of the GL000 lines of a report."""
    out = {}
    for line in result_stdout.splitlines():
        head, sep, msg = line.partition(": GL000 ")
        if sep:
            path, ln, col = head.rsplit(":", 2)
            out[path] = (int(ln), int(col), msg)
    return out


# ---------------------------------------------------------------------------------------------
# bad input: a GL000 for that file, the others still checked, exit 1, no traceback
# ---------------------------------------------------------------------------------------------


def test_bad_inputs_real_process(tmp_path):
    write(tmp_path, {
        "a_syntax.py": "import torch\nx = (1,\ny = 2\n",
        "b_nonutf8.py": b'import torch\ns = "\xff\xfe"\n',
        "c_binary.py": b"\x7fELF\x00\x01\x02\x00" * 10,
        "d_empty.py": "",
        "e_bug.py": BUGGY,
        "f_late_bad_byte.py": b"import torch\n\n\n# caf\xe9\n",
        "g_bad_cookie.py": b"# -*- coding: no-such-codec -*-\nx = 1\n",
        "h_indent.py": "def f():\nreturn 1\n",
    })
    p = gl_proc(["check", "."], tmp_path)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 1
    assert "Traceback" not in err and "Traceback" not in out
    bad = gl000(out)
    assert set(bad) == {"a_syntax.py", "b_nonutf8.py", "c_binary.py", "f_late_bad_byte.py", "g_bad_cookie.py", "h_indent.py"}
    # positions point at the problem
    assert bad["a_syntax.py"][:2] == (2, 5)  # the unclosed parenthesis
    assert "syntax error" in bad["a_syntax.py"][2]
    assert bad["b_nonutf8.py"][0] == 2
    assert "UTF-8" in bad["b_nonutf8.py"][2] and "0xff" in bad["b_nonutf8.py"][2]
    assert bad["f_late_bad_byte.py"][0] == 4
    assert "UTF-8" in bad["f_late_bad_byte.py"][2]
    assert "binary" in bad["c_binary.py"][2]
    assert "no-such-codec" in bad["g_bad_cookie.py"][2]
    assert bad["h_indent.py"][0] == 2
    # the good file is still checked, the empty one is fine
    assert ("e_bug.py", 4, 7, "GL103") in problems(out)
    assert "d_empty.py" not in out
    assert out.splitlines()[-1].startswith("Found 7 problems")


def test_syntax_error_in_a_file_no_rule_could_fire_on(tmp_path):
    # nothing here matches any rule's prefilter, but the file does not parse
    write(tmp_path, {"s.py": "def f(:\n    pass\n"})
    r = gl(["check", "s.py"], tmp_path)
    assert r.exit_code == 1
    assert gl000(r.stdout)["s.py"][:2] == (1, 7)


def test_newer_syntax_that_parses_is_not_an_error(tmp_path):
    write(tmp_path, {"m.py": "match x:\n    case [a, *rest]:\n        pass\n", "w.py": "x = 1\nprint(f'{x!r:>{10}}')\n"})
    r = gl(["check", "."], tmp_path)
    assert r.exit_code == 0, r.stdout


def test_file_too_large(tmp_path, monkeypatch):
    monkeypatch.setattr(gpulint.engine, "MAX_FILE_BYTES", 1000)
    write(tmp_path, {"big.py": "x = 1\n" * 400, "bug.py": BUGGY})
    r = gl(["check", "--no-cache", "."], tmp_path)
    assert r.exit_code == 1
    assert "too large" in gl000(r.stdout)["big.py"][2]
    assert ("bug.py", 4, 7, "GL103") in problems(r.stdout)


def test_unreadable_file(tmp_path):
    write(tmp_path, {"secret.py": BUGGY, "bug.py": BUGGY})
    secret = tmp_path / "secret.py"
    secret.chmod(0)
    try:
        try:
            open(secret, "rb").close()
        except PermissionError:
            pass
        else:
            pytest.skip("running with privileges that read a chmod 000 file (root)")
        r = gl(["check", "--no-cache", "."], tmp_path)
        assert r.exit_code == 1
        assert "cannot read" in gl000(r.stdout)["secret.py"][2]
        assert ("bug.py", 4, 7, "GL103") in problems(r.stdout)
    finally:
        secret.chmod(0o644)


def test_unreadable_file_simulated(tmp_path, monkeypatch):
    # the same path as above without needing an unprivileged user: opening the file fails
    write(tmp_path, {"secret.py": BUGGY, "bug.py": BUGGY})
    real_open = os.open  # the engine reads with os.open (non-blocking, bounded)

    def guarded_open(path, *a, **k):
        if os.path.basename(str(path)) == "secret.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(gpulint.engine.os, "open", guarded_open)
    r = gl(["check", "--no-cache", "-j", "1", "."], tmp_path)
    assert r.exit_code == 1
    assert gl000(r.stdout)["secret.py"][2] == "cannot read file: Permission denied"
    assert ("bug.py", 4, 7, "GL103") in problems(r.stdout)


def test_directory_named_like_a_python_file_is_walked(tmp_path):
    write(tmp_path, {"pkg.py/inner.py": BUGGY})
    r = gl(["check", "."], tmp_path)
    assert problems(r.stdout) == [(os.path.join("pkg.py", "inner.py"), 4, 7, "GL103")]
    r = gl(["check", "pkg.py"], tmp_path)
    assert problems(r.stdout) == [(os.path.join("pkg.py", "inner.py"), 4, 7, "GL103")]


def _discover_then(action):
    real = gpulint.discovery.discover

    def patched(paths, settings):
        found = real(paths, settings)
        action()
        return found

    return patched


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_file_vanishes_between_discovery_and_processing(tmp_path, monkeypatch, jobs):
    files = {f"f{i}.py": MOVE for i in range(5)}
    write(tmp_path, {**files, "gone.py": BUGGY})
    monkeypatch.setattr(gpulint.discovery, "discover", _discover_then(lambda: (tmp_path / "gone.py").unlink()))
    r = gl(["check", "--no-cache", "-j", jobs, "."], tmp_path)
    assert r.exit_code == 1
    assert "disappeared" in gl000(r.stdout)["gone.py"][2]
    assert len([p for p in problems(r.stdout) if p[3] == "GL104"]) == 5
    assert "Traceback" not in r.output


def test_file_replaced_by_a_directory_mid_run(tmp_path, monkeypatch):
    write(tmp_path, {"x.py": BUGGY, "bug.py": BUGGY})

    def swap():
        (tmp_path / "x.py").unlink()
        (tmp_path / "x.py").mkdir()

    monkeypatch.setattr(gpulint.discovery, "discover", _discover_then(swap))
    r = gl(["check", "--no-cache", "."], tmp_path)
    assert r.exit_code == 1
    assert "directory" in gl000(r.stdout)["x.py"][2]
    assert ("bug.py", 4, 7, "GL103") in problems(r.stdout)


def test_file_vanishes_with_a_warm_cache(tmp_path, monkeypatch):
    write(tmp_path, {"gone.py": BUGGY})
    assert gl(["check", "."], tmp_path).exit_code == 1  # cached now
    monkeypatch.setattr(gpulint.discovery, "discover", _discover_then(lambda: (tmp_path / "gone.py").unlink()))
    r = gl(["check", "."], tmp_path)
    assert "disappeared" in gl000(r.stdout)["gone.py"][2]


def test_decode_unit():
    assert decode(b"x = 1\n").text == "x = 1\n"
    bom = decode("\ufeffx = 'é'\n".encode("utf-8"))
    assert bom.text == "x = 'é'\n" and bom.encoding == "utf-8-sig"
    latin = decode("# coding: latin-1\nx = 'é'\n".encode("latin-1"))
    assert latin.text == "# coding: latin-1\nx = 'é'\n" and latin.encoding == "iso-8859-1"
    with pytest.raises(BadInput) as exc:
        decode(b"x = 1\n\x00")
    assert "binary" in str(exc.value)


# ---------------------------------------------------------------------------------------------
# fixes: writing files back
# ---------------------------------------------------------------------------------------------


def test_fix_writes_and_exit_0_when_everything_is_fixed(tmp_path):
    write(tmp_path, {"bug.py": BOTH})
    r = gl(["fix", "bug.py"], tmp_path)
    assert r.exit_code == 0
    assert r.stdout.splitlines()[-1] == "Found 2 problems (2 fixed, 0 remaining)."
    fixed = (tmp_path / "bug.py").read_text()
    assert fixed == BUGGY_FIXED + 'x = torch.zeros(2)\nx = x.to("cpu")\n'


def test_fix_preserves_crlf(tmp_path):
    write(tmp_path, {"crlf.py": MOVE.replace("\n", "\r\n").encode()})
    assert gl(["fix", "crlf.py"], tmp_path).exit_code == 0
    assert (tmp_path / "crlf.py").read_bytes() == MOVE_FIXED.replace("\n", "\r\n").encode()


def test_fix_preserves_utf8_bom(tmp_path):
    src = "\ufeff# café\n" + MOVE
    write(tmp_path, {"bom.py": src.encode("utf-8")})
    assert gl(["fix", "bom.py"], tmp_path).exit_code == 0
    assert (tmp_path / "bom.py").read_bytes() == ("\ufeff# café\n" + MOVE_FIXED).encode("utf-8")


def test_fix_keeps_a_latin1_coding_cookie_encoding(tmp_path):
    head = '# -*- coding: latin-1 -*-\ns = "café"\n'
    write(tmp_path, {"latin.py": (head + MOVE).encode("latin-1")})
    r = gl(["fix", "latin.py"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "latin.py").read_bytes() == (head + MOVE_FIXED).encode("latin-1")


def test_fix_preserves_permissions_and_leaves_no_temp_files(tmp_path):
    write(tmp_path, {"run.py": MOVE})
    (tmp_path / "run.py").chmod(0o751)
    before = sorted(os.listdir(tmp_path))
    assert gl(["fix", "--no-cache", "run.py"], tmp_path).exit_code == 0
    assert stat.S_IMODE((tmp_path / "run.py").stat().st_mode) == 0o751
    assert (tmp_path / "run.py").read_text() == MOVE_FIXED
    assert sorted(os.listdir(tmp_path)) == before


def test_write_is_atomic_a_failed_write_leaves_the_original(tmp_path, monkeypatch):
    write(tmp_path, {"bug.py": BUGGY})

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gpulint.engine.os, "replace", fail)
    r = gl(["fix", "--no-cache", "bug.py"], tmp_path)
    assert r.exit_code == 1
    assert "cannot write" in gl000(r.stdout)["bug.py"][2]
    assert (tmp_path / "bug.py").read_text() == BUGGY
    assert sorted(os.listdir(tmp_path)) == ["bug.py"]


def test_fix_that_breaks_the_syntax_is_dropped_and_reported(tmp_path):
    rule_pack(tmp_path)
    src = "breakme = 1\naa = 2\n"
    write(tmp_path, {"a.py": src})
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 1
    # the good fix is applied, the breaking one is not
    assert (tmp_path / "a.py").read_text() == "breakme = 1\na = 2\n"
    assert "TST003" in r.stderr and "dropped" in r.stderr
    assert [p[3] for p in problems(r.stdout)] == ["TST003"]
    # --diff does the same without writing
    write(tmp_path, {"b.py": src})
    r = gl(["fix", "--diff", "b.py"], tmp_path)
    assert "+a = 2" in r.stdout and "((" not in r.stdout
    assert (tmp_path / "b.py").read_text() == src


def test_fix_loop_reaches_a_fixpoint(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "aaaa = 1\n"})
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "a.py").read_text() == "a = 1\n"
    assert "3 fixed, 0 remaining" in r.stdout


def test_fix_loop_is_bounded(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "ping = 1\n"})
    r = gl(["fix", "a.py"], tmp_path)  # would swap forever
    assert r.exit_code == 1
    assert (tmp_path / "a.py").read_text() in ("ping = 1\n", "pong = 1\n")
    assert [p[3] for p in problems(r.stdout)] == ["TST004"]


def test_fix_is_idempotent(tmp_path):
    write(tmp_path, {"a.py": BOTH, "b.py": MOVE})
    assert gl(["fix", "."], tmp_path).exit_code == 0
    first = {f: (tmp_path / f).read_bytes() for f in ("a.py", "b.py")}
    mtimes = {f: (tmp_path / f).stat().st_mtime_ns for f in first}
    r = gl(["fix", "--no-cache", "."], tmp_path)
    assert r.exit_code == 0
    assert r.stdout == "All checks passed!\n"
    assert {f: (tmp_path / f).read_bytes() for f in first} == first
    assert {f: (tmp_path / f).stat().st_mtime_ns for f in first} == mtimes


def test_suppressed_diagnostic_is_not_fixed(tmp_path):
    src = MOVE.replace('x.to("cpu")', 'x.to("cpu")  # noqa: GL104')
    write(tmp_path, {"a.py": src})
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "a.py").read_text() == src


def test_fix_does_not_touch_clean_files(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    m = (tmp_path / "ok.py").stat().st_mtime_ns
    assert gl(["fix", "ok.py"], tmp_path).exit_code == 0
    assert (tmp_path / "ok.py").stat().st_mtime_ns == m


def test_run_text_api():
    reg = Registry.load()
    rules = [reg.by_code("GL103")(), reg.by_code("GL104")()]
    out = run_text("t.py", BOTH, rules, Options(fix=False))
    assert [(d.code, d.line, d.col) for d in out.diagnostics] == [("GL103", 4, 7), ("GL104", 6, 1)]
    assert out.text == BOTH
    out = run_text("t.py", BOTH, rules, Options(fix=True))
    assert out.diagnostics == []
    assert sorted(d.code for d in out.fixed) == ["GL103", "GL104"]
    assert run_text("t.py", out.text, rules, Options(fix=True)).text == out.text


# ---------------------------------------------------------------------------------------------
# many files: determinism and the cache
# ---------------------------------------------------------------------------------------------


def _many(tmp_path, n=12):
    files = {}
    for i in range(n):
        files[f"pkg{i % 3}/m{i:02d}.py"] = [BOTH, MOVE, CLEAN, BUGGY][i % 4]
    files["pkg0/broken.py"] = "def f(:\n"
    return write(tmp_path, files)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_output_is_identical_serial_and_parallel(tmp_path, fmt):
    _many(tmp_path)
    one = gl(["check", "--no-cache", "-j", "1", "--output-format", fmt, "."], tmp_path)
    two = gl(["check", "--no-cache", "-j", "2", "--output-format", fmt, "."], tmp_path)
    assert one.stdout == two.stdout
    assert one.exit_code == two.exit_code == 1
    if fmt == "text":
        found = problems(one.stdout)
        assert found == sorted(found)
        assert len(found) == 3 * 2 + 3 + 3 + 1


def _count_process_file(monkeypatch):
    calls = []
    real = gpulint.runner.process_file

    def counting(path, *a, **k):
        calls.append(os.path.basename(path))
        return real(path, *a, **k)

    monkeypatch.setattr(gpulint.runner, "process_file", counting)
    return calls


def test_cache_second_run_hits_and_changed_file_is_rechecked(tmp_path, monkeypatch):
    write(tmp_path, {"a.py": BUGGY, "b.py": MOVE, "c.py": CLEAN})
    calls = _count_process_file(monkeypatch)
    first = gl(["check", "-j", "1", "."], tmp_path)
    assert sorted(calls) == ["a.py", "b.py", "c.py"]
    cache_files = list((tmp_path / ".gpulint_cache").rglob("*.json"))
    assert len(cache_files) == 1
    entries = json.loads(cache_files[0].read_text())
    assert {os.path.basename(k) for k in entries} == {"a.py", "b.py", "c.py"}

    calls.clear()
    second = gl(["check", "-j", "1", "."], tmp_path)
    assert calls == []  # every file from the cache
    assert second.stdout == first.stdout and second.exit_code == 1

    # a changed file (same size, so the content hash decides) is re-checked; the others are not
    (tmp_path / "b.py").write_text(MOVE.replace("zeros", "empty"))
    (tmp_path / "c.py").write_text(BUGGY)
    calls.clear()
    third = gl(["check", "-j", "1", "."], tmp_path)
    assert sorted(calls) == ["b.py", "c.py"]
    assert ("c.py", 4, 7, "GL103") in problems(third.stdout)

    # touching a file without changing it does not re-check it
    os.utime(tmp_path / "a.py", ns=(1, 1))
    calls.clear()
    gl(["check", "-j", "1", "."], tmp_path)
    assert calls == []


def test_cache_depends_on_the_selected_rules(tmp_path, monkeypatch):
    write(tmp_path, {"a.py": BOTH})
    calls = _count_process_file(monkeypatch)
    gl(["check", "-j", "1", "a.py"], tmp_path)
    calls.clear()
    r = gl(["check", "-j", "1", "--select", "GL104", "a.py"], tmp_path)
    assert calls == ["a.py"]
    assert [p[3] for p in problems(r.stdout)] == ["GL104"]


def test_cache_paths_follow_the_current_directory(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.gpulint]\n", "sub/a.py": BUGGY})
    gl(["check", "."], tmp_path)
    r = gl(["check", "."], tmp_path / "sub")  # cached, but shown relative to the new cwd
    assert problems(r.stdout) == [("a.py", 4, 7, "GL103")]


def test_no_cache_writes_nothing(tmp_path, monkeypatch):
    write(tmp_path, {"a.py": BUGGY, "b.py": CLEAN})
    calls = _count_process_file(monkeypatch)
    gl(["check", "--no-cache", "-j", "1", "."], tmp_path)
    gl(["check", "--no-cache", "-j", "1", "."], tmp_path)
    assert not (tmp_path / ".gpulint_cache").exists()
    assert sorted(calls) == ["a.py", "a.py", "b.py", "b.py"]


def test_unparseable_files_are_not_cached(tmp_path, monkeypatch):
    write(tmp_path, {"bad.py": "def f(:\n"})
    calls = _count_process_file(monkeypatch)
    gl(["check", "-j", "1", "."], tmp_path)
    gl(["check", "-j", "1", "."], tmp_path)
    assert calls == ["bad.py", "bad.py"]


def test_cached_check_then_fix_applies_the_fix(tmp_path):
    write(tmp_path, {"a.py": BUGGY})
    gl(["check", "a.py"], tmp_path)
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "a.py").read_text() == BUGGY_FIXED
    r = gl(["check", "a.py"], tmp_path)
    assert r.exit_code == 0


def test_cache_after_diff_still_reports(tmp_path):
    write(tmp_path, {"a.py": BUGGY})
    gl(["check", "--diff", "a.py"], tmp_path)
    r = gl(["check", "a.py"], tmp_path)
    assert problems(r.stdout) == [("a.py", 4, 7, "GL103")]


def test_corrupt_cache_is_ignored(tmp_path):
    write(tmp_path, {"a.py": BUGGY})
    gl(["check", "a.py"], tmp_path)
    for f in (tmp_path / ".gpulint_cache").rglob("*.json"):
        f.write_text("{not json")
    r = gl(["check", "a.py"], tmp_path)
    assert problems(r.stdout) == [("a.py", 4, 7, "GL103")]


def test_cache_is_keyed_to_the_bytes_that_were_checked(tmp_path, monkeypatch):
    # the file changes right after it was checked: the cached (clean) result must not be
    # attached to the new (buggy) content
    write(tmp_path, {"a.py": CLEAN})
    real = gpulint.runner.process_file

    def then_edit(path, *a, **k):
        res = real(path, *a, **k)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(BUGGY)
        return res

    monkeypatch.setattr(gpulint.runner, "process_file", then_edit)
    assert gl(["check", "-j", "1", "a.py"], tmp_path).exit_code == 0
    monkeypatch.setattr(gpulint.runner, "process_file", real)
    r = gl(["check", "-j", "1", "a.py"], tmp_path)
    assert problems(r.stdout) == [("a.py", 4, 7, "GL103")]


def test_default_jobs_from_files_and_cores(monkeypatch):
    # issue 14: a worker per 8 files at most, never more than the usable cores, at least one;
    # a core already busy (load average) is not counted
    monkeypatch.setattr(gpulint.runner.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(gpulint.runner.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert gpulint.runner.default_jobs(1) == 1
    assert gpulint.runner.default_jobs(8) == 1
    assert gpulint.runner.default_jobs(9) == 2
    assert gpulint.runner.default_jobs(1000) == 4
    monkeypatch.setattr(gpulint.runner.os, "getloadavg", lambda: (3.0, 0.0, 0.0))
    assert gpulint.runner.default_jobs(1000) == 1
    monkeypatch.setattr(gpulint.runner.os, "getloadavg", lambda: (9.0, 0.0, 0.0))
    assert gpulint.runner.default_jobs(1000) == 1


# a large file is parsed by LibCST in pieces of whole top-level statements: the same tree

_PIECES = '''\
#!/usr/bin/env python
# header comment

import os; import sys
x = 1
@decorator
# between decorator and def
def f(a,
      b):
    """doc"""
    return a + b
    # trailing comment of the block

# a comment at column 0 before a class


class C:
    def m(self):
        s = """a
multi-line string
"""
        return s
  # odd indentation comment
y = [
    1,
    2,
]
if x:
    pass
else:
    y = 2
for i in range(3): print(i)
z = 3 \\
    + 4
# the end
'''


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_parse_in_pieces_gives_the_same_tree(size):
    import ast

    import libcst as cst

    from gpulint.engine import chunk_starts, parse_in_pieces

    for text in (_PIECES, _PIECES.rstrip("\n"), "\n\n" + _PIECES + "\n\n# x\n"):
        starts = chunk_starts(ast.parse(text), text, size=size, min_lines=0)
        assert starts  # the text is really cut
        pieces = parse_in_pieces(text, starts)
        assert pieces is not None
        assert pieces.code == text
        assert pieces.deep_equals(cst.parse_module(text))


def test_parse_in_pieces_refuses_pieces_that_disagree():
    import ast

    from gpulint.engine import chunk_starts, parse_in_pieces

    # two-space indentation in the first piece, four in the second: one parse would use the
    # first as the default for the whole file; the pieces cannot be joined, None (one parse)
    text = "def f():\n  return 1\nx = 1\ny = 2\ndef g():\n    return 2\n"
    starts = chunk_starts(ast.parse(text), text, size=2, min_lines=0)
    assert starts
    assert parse_in_pieces(text, starts) is None
    # CR line ends are never cut
    assert chunk_starts(ast.parse("x = 1\ry = 2\r"), "x = 1\ry = 2\r", size=1, min_lines=0) == []


def test_large_file_same_diagnostics_in_pieces(monkeypatch):
    import gpulint.engine as engine

    block = (
        "import torch\n"
        "model = torch.nn.Linear(2, 1).cuda()\n"
        "def evaluate(loader):\n"
        "    model.eval()\n"
        "    for x in loader:\n"
        "        out = model(x)\n"
        "x = torch.zeros(3).cuda()\n"
        "y = torch.ones(3, device='cuda')\n"
    )
    text = block * 120
    rules = [r() for r in Registry.load().resolve(None)]
    monkeypatch.setattr(engine, "CHUNK_MIN_LINES", 10**9)
    whole = engine.run_text("t.py", text, rules, engine.Options()).diagnostics
    monkeypatch.setattr(engine, "CHUNK_MIN_LINES", 100)
    monkeypatch.setattr(engine, "CHUNK_LINES", 50)
    joined = []
    real = engine.parse_in_pieces
    monkeypatch.setattr(engine, "parse_in_pieces", lambda t, s: joined.append(len(s)) or real(t, s))
    pieces = engine.run_text("t.py", text, rules, engine.Options()).diagnostics
    assert joined and joined[0] > 10  # really parsed in pieces
    assert whole and [d.__dict__ for d in pieces] == [d.__dict__ for d in whole]


def test_large_file_fixed_the_same_in_pieces(monkeypatch):
    import gpulint.engine as engine

    block = (
        "import torch\n"
        "model = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model.cuda()\n"
        "opt.cuda()\n"
        "x = torch.zeros(3)\n"
        "x.cuda()\n"
    )
    text = block * 120
    rules = [r() for r in Registry.load().resolve(None)]
    opts = engine.Options(fix=True, unsafe_fixes=True, write=False)
    monkeypatch.setattr(engine, "CHUNK_MIN_LINES", 10**9)
    whole = engine.run_text("t.py", text, rules, opts)
    monkeypatch.setattr(engine, "CHUNK_MIN_LINES", 100)
    monkeypatch.setattr(engine, "CHUNK_LINES", 50)
    joined = []
    real = engine.parse_in_pieces
    monkeypatch.setattr(engine, "parse_in_pieces", lambda t, s: joined.append(len(s)) or real(t, s))
    pieces = engine.run_text("t.py", text, rules, opts)
    assert len(joined) >= 2  # the text and a fixed text were parsed in pieces
    assert whole.applied and pieces.applied == whole.applied
    assert pieces.text == whole.text != text
    assert [d.__dict__ for d in pieces.diagnostics] == [d.__dict__ for d in whole.diagnostics]


# ---------------------------------------------------------------------------------------------
# cheaper analysis, same results
# ---------------------------------------------------------------------------------------------

_TRAIN = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "class Net(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = torch.nn.Linear(2, 1)\n"
    "    def forward(self, x):\n"
    "        return self.fc(x)\n"
    "device = torch.device('cuda')\n"
    "model = Net().to(device)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for x in DataLoader([]):\n"
    "    loss = model(x).sum()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)


def test_release_model_frees_the_analysis_without_the_collector():
    import gc
    import weakref

    import libcst as cst

    from gpulint.analysis.training import TrainingFacts
    from gpulint.engine import release_model
    from gpulint.model import ScriptModel

    model = ScriptModel(cst.parse_module(_TRAIN), _TRAIN)
    flow, facts = model.flow, model.facts(TrainingFacts)
    assert flow.values  # the engine really ran
    refs = [weakref.ref(flow), weakref.ref(facts)]
    del flow, facts
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        assert all(r() is not None for r in refs)  # the model still holds them
        release_model(model)
        assert all(r() is None for r in refs)  # freed by reference counting alone
    finally:
        if was:
            gc.enable()


def test_release_model_keeps_the_diagnostics():
    rules = [r() for r in Registry.load().resolve(None)]
    from gpulint.engine import analyse

    diags, _ = analyse("t.py", _TRAIN + "opt.cuda()\n", rules)
    assert any(d.code == "GL103" for d in diags)


def test_parse_without_validation_same_tree_and_validation_restored():
    import libcst as cst
    from libcst._nodes.base import CSTNode

    import gpulint.engine as engine

    validate = CSTNode.__post_init__
    for text in (_TRAIN, _PIECES, "x = (yield)\nasync def f():\n    await g()\n"):
        got = engine.libcst_parse(text)
        assert got.code == text
        assert got.deep_equals(cst.parse_module(text))
        assert CSTNode.__post_init__ is validate
    with pytest.raises(cst.ParserSyntaxError):
        engine.libcst_parse("x = (\n")
    assert CSTNode.__post_init__ is validate  # restored after a failed parse too
    with pytest.raises(cst.CSTValidationError):  # nodes built outside a parse are validated
        cst.Name("not a name")


def test_parse_without_validation_while_another_parse_runs():
    """Two parses at once (the editor server's threads): validation is back only when both end."""
    import libcst as cst
    from libcst._nodes.base import CSTNode

    import gpulint.engine as engine

    validate = CSTNode.__post_init__
    seen = []
    real = cst.parse_module

    def nested(text):
        if not seen:
            seen.append(CSTNode.__post_init__ is validate)
            engine._parse_module("y = 2\n")  # starts and ends inside the outer parse
            seen.append(CSTNode.__post_init__ is validate)
        return real(text)

    try:
        cst.parse_module = nested
        engine._parse_module("x = 1\n")
    finally:
        cst.parse_module = real
    assert seen == [False, False]
    assert CSTNode.__post_init__ is validate


def test_tune_gc_raises_thresholds_only():
    import gc

    import gpulint.engine as engine

    old = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        engine.tune_gc()
        assert gc.get_threshold() == engine.GC_THRESHOLDS
        gc.set_threshold(100_000, 50, 100)  # the editor server's own
        engine.tune_gc()
        assert gc.get_threshold() == (100_000, 50, 100)
    finally:
        gc.set_threshold(*old)


def test_fast_node_identity_same_meaning():
    import libcst as cst

    import gpulint.engine as engine

    engine.fast_node_identity()
    a, b = cst.Name("x"), cst.Name("x")
    assert type(a).__hash__ is object.__hash__  # really switched (C slots)
    assert a == a and not a != a
    assert a != b and not a == b and a.deep_equals(b)  # equal only to itself, as LibCST says
    assert a != "x" and a != None  # noqa: E711
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2 and len({a, b, a}) == 2
    module = cst.parse_module("y = f(x)\n")
    seen = {n: i for i, n in enumerate([module, *module.body])}
    assert seen[module.body[0]] == 1


def test_fast_node_identity_isinstance_same_answers():
    """The node classes' C instance/subclass checks give ABCMeta's answers for every pair of
    LibCST node classes and for nodes of each parsed kind."""
    import abc

    import libcst as cst
    from libcst._nodes.base import CSTNode

    import gpulint.engine as engine

    engine.fast_node_identity()
    classes, todo = set(), [CSTNode]
    while todo:
        c = todo.pop()
        if c not in classes:
            classes.add(c)
            todo.extend(c.__subclasses__())
    assert type(cst.If) is not abc.ABCMeta and isinstance(cst.If, abc.ABCMeta)  # really switched
    assert type(cst.If).__instancecheck__ is type.__instancecheck__
    for a in classes:
        for b in classes:
            assert issubclass(a, b) == abc.ABCMeta.__subclasscheck__(b, a), (a, b)
    module = cst.parse_module("import os\nclass A(B):\n    def f(self, x=1):\n        return [y async for y in x] if x else {1: 2}\n")
    nodes, todo = [], [module]
    while todo:
        n = todo.pop()
        nodes.append(n)
        todo.extend(n.children)
    for n in nodes:
        for b in classes:
            assert isinstance(n, b) == abc.ABCMeta.__instancecheck__(b, n)
    assert not isinstance(3, cst.Name) and not isinstance(None, (cst.If, cst.BaseExpression))
