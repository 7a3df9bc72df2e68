"""Latency of `gpulint server`: a change to a ~300-line training script -> its diagnostics.

    python benchmarks/bench_server.py                 # 50 changes, the default
    python benchmarks/bench_server.py --changes 100 --lines 300

A real stdio session (`python -m gpulint server`, JSON-RPC with Content-Length framing, the
client in tests/lsp_support.py): didOpen of the script from benchmarks/bench_check.py, then one
incremental didChange at a time (a number on a varying line is edited, as when typing), each
waiting for the textDocument/publishDiagnostics of that version. The latency is the time from
writing the didChange to reading the publish. Reported: median, p95, min, max; the server's CPU
time per change (from /proc: on a busy shared machine wall time includes waiting for a core,
CPU time is what an idle core would take); and for context the engine alone on the same text in
this process (parse + ScriptModel + rules, no LSP), wall and CPU.

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


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def peak_rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


def engine_only(text: str, runs: int) -> tuple[list[float], list[float]]:
    from gpulint.engine import Options, run_text
    from gpulint.registry import Registry

    reg = Registry.load([])
    rules = [r() for r in reg.resolve(None)]
    run_text("train.py", text, rules, Options())  # warm: imports, knowledge base
    wall, cpu = [], []
    for i in range(runs):
        t, c = time.perf_counter(), time.process_time()
        run_text("train.py", text + f"\n# {i}\n", rules, Options())
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return wall, cpu


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
            cpu0 = cpu_seconds(client.proc.pid)
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
            cpu1 = cpu_seconds(client.proc.pid)
            rss = peak_rss_mib(client.proc.pid)
            code = client.close()
        finally:
            client.kill()

    engine, engine_cpu = engine_only(text, args.engine_runs)
    ms = [x * 1000 for x in latencies]
    print(f"gpulint server latency, {n_lines}-line script, {len(ms)} changes, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"  start + initialize + didOpen -> first diagnostics: {t_open * 1000:.0f} ms ({len(first)} diagnostics)")
    print(
        f"  didChange -> publishDiagnostics: median {statistics.median(ms):.0f} ms, p95 {pct(ms, 95):.0f} ms, "
        f"min {min(ms):.0f} ms, max {max(ms):.0f} ms"
    )
    if cpu0 is not None and cpu1 is not None:
        print(f"  server CPU time per change: {(cpu1 - cpu0) * 1000 / len(ms):.0f} ms (what the latency would be on an idle core)")
    if rss is not None:
        print(f"  server peak RSS: {rss:.0f} MiB")
    em = [x * 1000 for x in engine]
    ec = [x * 1000 for x in engine_cpu]
    print(
        f"  the engine alone on the same text (run_text, {len(em)} runs): median {statistics.median(em):.0f} ms wall, "
        f"{statistics.median(ec):.0f} ms CPU; min {min(em):.0f} ms wall"
    )
    print(f"  goal: within 150 ms -> {'OK' if statistics.median(ms) <= 150 else 'MISSED'} (median); server exit code {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
