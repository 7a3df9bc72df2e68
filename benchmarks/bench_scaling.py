"""How gpulint's cost grows with file size: one file of 1k, 5k, 20k and 50k lines.

    python benchmarks/bench_scaling.py                   # sizes 1000 5000 20000 50000
    python benchmarks/bench_scaling.py --sizes 1000 5000 --timeout 120
    python benchmarks/bench_scaling.py --source DIR      # take training code from DIR

Each file is built at run time by concatenating real training scripts (files of the corpus that
call `.backward(` and define or use an optimizer, each one checked to parse) until it has the
wanted number of lines; nothing of the corpus is stored in this repository. Every size is checked
by `gpulint check --no-cache -j 1` in its own process; the start-up (the same command on an empty
file) is measured too and subtracted for the per-1k-lines figure. Printed per size: wall and CPU
seconds, CPU milliseconds per 1k lines (start-up excluded), peak RSS. The goal (issue 14): the
per-1k-lines cost flat within 1.5x from 1k to 50k lines, peak memory under 400 MB at every size.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import REPO, compile_snapshot, measure  # noqa: E402

DEFAULT_SOURCE = Path("/work/corpus")


def training_sources(root: Path) -> list[str]:
    """Real training scripts under root: they call .backward( and use an optimizer, and parse."""
    out = []
    for p in sorted(root.rglob("*.py")):
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if ".backward(" not in text or "optim" not in text or len(text) > 200_000:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        out.append(text if text.endswith("\n") else text + "\n")
    return out


def build(sources: list[str], lines: int) -> str:
    parts, n, i = [], 0, 0
    while n < lines:
        text = sources[i % len(sources)]
        parts.append(text)
        n += text.count("\n")
        i += 1
    out = "".join(parts)
    # cut at a top-level statement boundary near the wanted size, keeping the file parseable
    keep = out.splitlines(keepends=True)
    if len(keep) > lines:
        tree = ast.parse(out)
        cut = len(keep)
        for node in tree.body:
            if node.lineno - 1 >= lines:
                cut = node.lineno - 1
                break
        keep = keep[:cut]
    return "".join(keep)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 50000])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--select", help="gpulint --select (default: the default rule set)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per size before giving up")
    args = ap.parse_args()

    sources = training_sources(args.source)
    if not sources:
        print(f"no training scripts found under {args.source}", file=sys.stderr)
        return 2
    snapshot = Path(tempfile.mkdtemp(prefix="gpulint-bench-pkg-"))
    shutil.copytree(REPO / "gpulint", snapshot / "gpulint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rules", snapshot / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    # byte-compiled like an installed wheel: with PYTHONDONTWRITEBYTECODE set (as on the team's
    # machine) every process would otherwise compile all of gpulint's and the rules' sources
    compile_snapshot(snapshot)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(snapshot) + os.pathsep + env.get("PYTHONPATH", "")
    gl = [sys.executable, "-m", "gpulint", "check", "--exit-zero", "-q", "--no-cache", "-j", "1"]
    if args.select:
        gl += ["--select", args.select]
    prefix = ["timeout", "-s", "KILL", str(int(args.timeout))] if shutil.which("timeout") else []
    print(f"{len(sources)} training scripts from {args.source}; machine: {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="gpulint-scaling-") as tmp:
        tmp = Path(tmp)
        empty = tmp / "empty.py"
        empty.write_text("", encoding="utf-8")
        base = min((measure("start-up", gl + [str(empty)], tmp, env) for _ in range(3)), key=lambda r: r.cpu)
        print(f"\nstart-up (empty file): wall {base.wall:.2f} s, cpu {base.cpu:.2f} s, peak RSS {base.maxrss_mb:.0f} MB\n")
        print(f"{'lines':>7s} {'KB':>6s} {'wall s':>8s} {'cpu s':>8s} {'cpu ms/1k lines':>16s} {'peak RSS MB':>12s} {'rc':>4s}")
        per_k = []
        for size in args.sizes:
            text = build(sources, size)
            f = tmp / f"train_{size}.py"
            f.write_text(text, encoding="utf-8")
            n = text.count("\n")
            r = measure(str(size), prefix + gl + [str(f)], tmp, env)
            ms = (r.cpu - base.cpu) / (n / 1000) * 1000
            note = "" if r.rc in (0, 1) else ("  (killed: over the timeout)" if r.rc in (-9, 137) else "")
            if "GL000" in r.out and "too large" in r.out:
                note += "  (GL000: stopped at the engine's per-file bound, not fully analysed)"
            print(f"{n:7d} {len(text) / 1024:6.0f} {r.wall:8.2f} {r.cpu:8.2f} {ms:16.1f} {r.maxrss_mb:12.0f} {r.rc:4d}{note}")
            if r.rc in (0, 1):
                per_k.append(ms)
            elif r.rc not in (-9, 137):
                print(r.out[-1500:])
        if len(per_k) >= 2:
            print(f"\nper-1k-lines cost, largest / smallest: {max(per_k) / min(per_k):.2f}x (goal <= 1.5x)")
    shutil.rmtree(snapshot, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
