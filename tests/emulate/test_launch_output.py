"""``--nproc-per-node``: every line a rank prints reaches the launcher's output whole.

Two ranks printing at the same moment must never tear a line into another rank's; a last line
without a newline still comes out (ended with one). No prefix by default (as torchrun), one with
``--rank-prefix``.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading

import pytest
import torch

from gpulint.emulate import launch as launch_mod

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LINES = 1000
WIDTH = 3000  # long lines: the two ranks write for long enough to overlap (about 6 MB each in all)

CHATTY = r"""
import os, sys, time
rank = int(os.environ["RANK"])
fill = "ab"[rank]
open(f"ready{rank}", "w").close()  # start printing together (the ranks start a few seconds apart)
deadline = time.monotonic() + 60
while not all(os.path.exists(f"ready{r}") for r in (0, 1)) and time.monotonic() < deadline:
    time.sleep(0.001)
for i in range(LINES):
    print(f"OUT{rank} {i} " + fill * WIDTH)
    print(f"ERR{rank} {i} " + fill * WIDTH, file=sys.stderr)
sys.stdout.write(f"TAIL{rank} no newline")
sys.stderr.write(f"ERRTAIL{rank}\n")  # (the rank's runner writes its last message to stderr after this)
""".replace("LINES", str(LINES)).replace("WIDTH", str(WIDTH))


def _launch(tmp_path, *options: str) -> subprocess.CompletedProcess:
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # unbuffered (as in many CI images): print() writes the text and its newline in two write()s,
    # so two ranks sharing one pipe tear each other's lines (what broke the DDP test's RESULT lines)
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "gpulint.emulate", "--nproc-per-node", "2", *options, str(script)],
        capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300, check=False,
    )  # fmt: skip


def _check(lines: list[str], tag: str, prefix: str = "") -> None:
    whole = re.compile(rf"{re.escape(prefix)}{tag}(\d) (\d+) ([ab]+)")
    tail = re.compile(rf"{re.escape(prefix)}(?:TAIL(\d) no newline|ERRTAIL(\d))")
    seen: dict[int, list[int]] = {0: [], 1: []}
    tails = []
    for line in lines:
        m = whole.fullmatch(line)
        if m:
            rank, i, fill = int(m[1]), int(m[2]), m[3]
            assert fill == "ab"[rank] * WIDTH, f"torn line: {line[:80]}...{line[-80:]}"
            seen[rank].append(i)
            continue
        m = tail.fullmatch(line)
        assert m, f"not one rank's whole line: {line[:120]!r}"
        tails.append(int(m[1] or m[2]))
    assert seen == {0: list(range(LINES)), 1: list(range(LINES))}
    assert sorted(tails) == [0, 1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the emulated launcher")
def test_two_ranks_printing_at_once_never_tear_a_line(tmp_path):
    proc = _launch(tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    _check(proc.stdout.splitlines(), "OUT")
    err = [line for line in proc.stderr.splitlines() if not line.startswith("gpulint run")]
    _check(err, "ERR")
    assert proc.stderr.startswith("gpulint run: emulating 2 CUDA devices")
    assert "gpulint run [rank 0]: emulated cuda peak memory" in proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the emulated launcher")
def test_rank_prefix_when_asked(tmp_path):
    proc = _launch(tmp_path, "--rank-prefix", "[${role_name}${local_rank}]:")
    assert proc.returncode == 0, proc.stderr[-2000:]
    unprefixed = []
    for line in proc.stdout.splitlines():
        m = re.match(r"\[default(\d)\]:", line)
        assert m, f"no rank prefix: {line[:120]!r}"
        rank = m[1]
        body = line[m.end() :]
        assert body.startswith((f"OUT{rank} ", f"TAIL{rank} ")), f"line under another rank's prefix: {line[:120]!r}"
        unprefixed.append(body)
    _check(unprefixed, "OUT")


def _relay_bytes(chunks: list[bytes], prefix: bytes = b"") -> str:
    read_fd, write_fd = os.pipe()
    out = io.StringIO()
    with os.fdopen(read_fd, "rb", buffering=0) as source:
        thread = threading.Thread(target=launch_mod._relay, args=(source, out, prefix))
        thread.start()
        for chunk in chunks:
            os.write(write_fd, chunk)
        os.close(write_fd)
        thread.join(timeout=30)
    assert not thread.is_alive()
    return out.getvalue()


def test_relay_joins_pieces_into_lines():
    assert _relay_bytes([b"hel", b"lo\nwor", b"ld\n", b"last"]) == "hello\nworld\nlast\n"


def test_relay_keeps_crlf_and_progress_redraws():
    assert _relay_bytes([b"10%\r", b"\n", b"20%\r30%\r", b"done\r\n"]) == "10%\r\n20%\r30%\rdone\r\n"
    assert _relay_bytes([b"1/3\r2/3\r3/3"]) == "1/3\r2/3\r3/3\n"


def test_relay_prefix_goes_before_every_line():
    assert _relay_bytes([b"a\nb", b"\nc"], prefix=b"[0]:") == "[0]:a\n[0]:b\n[0]:c\n"


def test_split_leaves_a_final_cr_pending():
    assert launch_mod._split(b"abc") == 0
    assert launch_mod._split(b"abc\nde") == 4
    assert launch_mod._split(b"abc\r") == 0  # may be the start of \r\n
    assert launch_mod._split(b"ab\rc") == 3
