"""Latency of `gpulint server`: a change to a ~300-line training script -> its diagnostics.

    python benchmarks/bench_server.py                 # 50 changes, the default
    python benchmarks/bench_server.py --changes 100 --lines 300

A real stdio session (`python -m gpulint server`, JSON-RPC with Content-Length framing, the
client in tests/lsp_support.py): didOpen of the script from benchmarks/bench_check.py, then one
incremental didChange at a time (a number on a varying line is edited, as when typing), each
waiting for the textDocument/publishDiagnostics of that version. The latency is the time from
writing the didChange to reading the publish. Reported: median, p95, min, max, and for context
the engine alone on the same text in this process (parse + ScriptModel + rules, no LSP).

The goal (issue 13): diagnostics within 150 ms of a change for a 300-line file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

from bench_check import training_script  # noqa: E402
from lsp_support import LspClient  # noqa: E402


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def engine_only(text: str, runs: int) -> list[float]:
    from gpulint.engine import Options, run_text
    from gpulint.registry import Registry

    reg = Registry.load([])
    rules = [r() for r in reg.resolve(None)]
    run_text("train.py", text, rules, Options())  # warm: imports, knowledge base
    out = []
    for i in range(runs):
        t = time.perf_counter()
        run_text("train.py", text + f"\n# {i}\n", rules, Options())
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=50)
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--engine-runs", type=int, default=10)
    args = ap.parse_args()

    text = training_script(args.lines)
    n_lines = text.count("\n")
    lines = text.splitlines(keepends=True)
    # lines holding a number to edit: the edit keeps the script valid Python
    editable = [i for i, line in enumerate(lines) if any(ch.isdigit() for ch in line) and not line.lstrip().startswith("#")]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "train.py"
        path.write_text(text, encoding="utf-8")
        client = LspClient(cwd=root)
        try:
            t0 = time.perf_counter()
            client.initialize(root)
            uri = client.open(path, text)
            first = client.diagnostics(uri, 1)
            t_open = time.perf_counter() - t0
            latencies = []
            for k in range(args.changes):
                line = editable[(k * 7) % len(editable)]
                col = next(i for i, ch in enumerate(lines[line]) if ch.isdigit())
                edit = {
                    "range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 1}},
                    "newText": str((int(lines[line][col]) + 1) % 10),
                }
                lines[line] = lines[line][:col] + edit["newText"] + lines[line][col + 1 :]
                start = len(client.notifications)
                sent = time.perf_counter()
                version = client.change(uri, edits=[edit])
                params = client.wait_notification(
                    "textDocument/publishDiagnostics",
                    lambda p: p["uri"] == uri and p.get("version") == version,
                    start=start,
                )
                latencies.append(params["_received"] - sent)
            code = client.close()
        finally:
            client.kill()

    engine = engine_only(text, args.engine_runs)
    ms = [x * 1000 for x in latencies]
    print(f"gpulint server latency, {n_lines}-line script, {len(ms)} changes, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"  start + initialize + didOpen -> first diagnostics: {t_open * 1000:.0f} ms ({len(first)} diagnostics)")
    print(
        f"  didChange -> publishDiagnostics: median {statistics.median(ms):.0f} ms, p95 {pct(ms, 95):.0f} ms, "
        f"min {min(ms):.0f} ms, max {max(ms):.0f} ms"
    )
    em = [x * 1000 for x in engine]
    print(f"  the engine alone on the same text (run_text, {len(em)} runs): median {statistics.median(em):.0f} ms, min {min(em):.0f} ms")
    print(f"  goal: within 150 ms -> {'OK' if statistics.median(ms) <= 150 else 'MISSED'} (median); server exit code {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
