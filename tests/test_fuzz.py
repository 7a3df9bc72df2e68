"""A bounded fuzz run (issue 11): mutated real scripts and the nasty cases, with a fixed seed.

The seeds are the repository's own fixture scripts (real training code written for the rules).
Every mutated input goes through check and fix with every rule enabled; asserted for each: no
exception other than a GL000 (BadInput), no hang (the per-file time bound is lowered, and a
time-bound GL000 on an ordinary-sized input counts as a hang), a fixed text that Python parses
and that a second fix leaves unchanged. A smaller tree then goes through the real command line
in parallel: exit codes in {0, 1, 2}, no traceback, every file still parseable after `fix`, no
file lost, no temporary file left.
"""

from __future__ import annotations

import codecs
import random
import sys
import warnings
from pathlib import Path

import pytest

import gpulint.engine
from cli_support import REPO, gl_proc
from gpulint.engine import BadInput, Options, TooComplex, decode, run_text
from gpulint.registry import Registry

SEED = 20261123
N_MUTANTS = 300

NASTY = [
    b"x = " + b"(" * 1500 + b"1" + b")" * 1500 + b"\n",
    b"x = " + b"f(" * 1000 + b"1" + b")" * 1000 + b"\n",
    b"import torch\nx = a" + b"[0]" * 10_000 + b"\n",
    b"import torch\nx = a" + b".a" * 10_000 + b"\n",
    b"import torch\nx = " + b" and ".join([b"a"] * 10_000) + b"\n",
    b"import torch\nx = " + b"-" * 5000 + b"1\n",
    b"import torch\nx = 0\nif x == 0:\n    pass\n" + b"".join(b"elif x == %d:\n    pass\n" % i for i in range(1, 500)),
    b"import torch\nx = 'a\xe2\x80\xa8b'\nmodel.eval()\nfor b in data:\n    model(b)\n",
    b"import torch\r" + b"x = torch.zeros(2)\rx.to('cpu')\r",
    b"\xef\xbb\xbfimport torch\nx = torch.zeros(2)\nx.to('cpu')\n",
    b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\nx = torch.zeros(2)\nx.to('cpu')\n",
    b"import torch\n\x00\n",
    b"import torch\nx = '\xff'\n",
    b"",
    b"\n\n\n",
    b"import torch\n" + b"    " * 101 + b"x\n",
    b"import torch\ndef f(:\n",
    b"import torch\nx = (\n",
    b"import torch\n\tif True:\n  x = 1\n",
    b"import torch\nx = [" + b", ".join(b"%d" % i for i in range(20_000)) + b"]\n",
]

_UNICODE = ["\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x85", "\ufeff", "\u200b", "é", "𝔘", "\t", "\r", "\r\n"]
_TOKENS = ["(", ")", "[", "]", "{", "}", ":", ",", "'", '"', '"""', "#", "\\", "lambda", "await ", "yield", "*", "**",
           ".to(device)", ".cuda()", "torch.", "with torch.no_grad():", "model.eval()", "loss.backward()", "\n    ", "\n"]


def _mutate(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines(keepends=True) or [""]
    op = rng.randrange(12)
    if op == 0 and len(lines) > 1:  # delete a line
        del lines[rng.randrange(len(lines))]
    elif op == 1:  # duplicate a line elsewhere
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
    elif op == 2 and len(lines) > 1:  # swap two lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:  # insert a token somewhere
        s = "".join(lines)
        k = rng.randrange(len(s) + 1)
        return (s[:k] + rng.choice(_TOKENS) + s[k:]).encode("utf-8")
    elif op == 4:  # insert an odd character
        s = "".join(lines)
        k = rng.randrange(len(s) + 1)
        return (s[:k] + rng.choice(_UNICODE) + s[k:]).encode("utf-8")
    elif op == 5:  # truncate
        s = "".join(lines)
        return s[: rng.randrange(len(s) + 1)].encode("utf-8")
    elif op == 6:  # re-indent a line
        i = rng.randrange(len(lines))
        lines[i] = rng.choice(["", " ", "\t", "        "]) + lines[i].lstrip(" \t")
    elif op == 7:  # other line endings
        s = "".join(lines).replace("\r\n", "\n")
        return s.replace("\n", rng.choice(["\r\n", "\r"])).encode("utf-8")
    elif op == 8:  # another encoding, declared or not
        s = "".join(lines)
        if rng.random() < 0.5:
            return codecs.BOM_UTF8 + s.encode("utf-8")
        return ("# -*- coding: latin-1 -*-\n" + s).encode("latin-1", "replace")
    elif op == 9:  # a random byte
        raw = bytearray("".join(lines).encode("utf-8"))
        raw.insert(rng.randrange(len(raw) + 1), rng.randrange(256))
        return bytes(raw)
    elif op == 10:  # wrap a line's expression in brackets, deeply
        i = rng.randrange(len(lines))
        depth = rng.choice([5, 50, 199, 250])
        stripped = lines[i].rstrip("\r\n")
        if "=" in stripped:
            a, b = stripped.split("=", 1)
            lines[i] = a + "= " + "(" * depth + b.strip() + ")" * depth + "\n"
    else:  # splice two scripts
        return "".join(lines + lines[: rng.randrange(len(lines) + 1)]).encode("utf-8")
    return "".join(lines).encode("utf-8")


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<fuzz>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _inputs() -> list[tuple[str, bytes]]:
    seeds = sorted(p for p in (REPO / "tests" / "fixtures").rglob("*.py") if not p.name.endswith(".fixed.py"))
    rng = random.Random(SEED)
    out = [(f"nasty_{i}.py", raw) for i, raw in enumerate(NASTY)]
    for i in range(N_MUTANTS):
        seed = rng.choice(seeds)
        raw = _mutate(rng, seed.read_text(encoding="utf-8"))
        if rng.random() < 0.2:  # a second mutation now and then
            try:
                raw = _mutate(rng, raw.decode("utf-8"))
            except UnicodeDecodeError:
                pass
        out.append((f"m{i:03d}_{seed.stem}.py", raw))
    return out


def test_fuzz_engine(monkeypatch, capsys):
    monkeypatch.setattr(gpulint.engine, "MAX_FILE_SECONDS", 20.0)
    reg = Registry.load()
    rules = [r() for r in reg.rules]
    counts = {"inputs": 0, "gl000": 0, "fixed": 0, "tracebacks": 0, "hangs": 0, "unparseable fixes": 0, "not idempotent": 0}
    failures = []
    for name, raw in _inputs():
        counts["inputs"] += 1
        try:
            src = decode(raw)
            out = run_text(name, src.text, rules, Options(fix=True, unsafe_fixes=True, write=False))
        except TooComplex as exc:
            counts["gl000"] += 1
            if "CPU time" in str(exc) and not name.startswith("nasty"):
                counts["hangs"] += 1
                failures.append((name, f"time bound hit: {exc}"))
            continue
        except BadInput:
            counts["gl000"] += 1
            continue
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            counts["tracebacks"] += 1
            failures.append((name, f"{type(exc).__name__}: {exc}"))
            continue
        if out.text != src.text:
            counts["fixed"] += 1
            if _parses(src.text) and not _parses(out.text):
                counts["unparseable fixes"] += 1
                failures.append((name, "fix output does not parse"))
                continue
            again = run_text(name, out.text, rules, Options(fix=True, unsafe_fixes=True, write=False))
            if again.text != out.text:
                counts["not idempotent"] += 1
                failures.append((name, "a second fix changed the text again"))
    with capsys.disabled():
        print(f"\nfuzz (seed {SEED}): {counts}")
    assert counts["inputs"] == N_MUTANTS + len(NASTY)
    assert counts["fixed"] > 20  # the mutants still exercise the fixes
    assert not failures, failures[:10]


def test_fuzz_cli_parallel(tmp_path):
    """A slice of the inputs through the real command line, in parallel: check, then fix."""
    inputs = _inputs()
    picked = inputs[: len(NASTY)] + inputs[len(NASTY) :: 10]
    for name, raw in picked:
        (tmp_path / name).write_bytes(raw)
    before = {name: raw for name, raw in picked}
    for cmd in (["check"], ["check", "--output-format", "sarif"], ["fix", "--unsafe-fixes"]):
        p = gl_proc([*cmd, "--no-cache", "-j", "2", "."], tmp_path)
        err = p.stderr.decode(errors="replace")
        assert p.returncode in (0, 1, 2), err
        assert "Traceback" not in err, err
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(before)  # no file lost, no temp file
    for name, raw in before.items():
        now = (tmp_path / name).read_bytes()
        if now != raw:  # gpulint wrote it: the fixed file parses
            assert _parses(decode(now).text), name
