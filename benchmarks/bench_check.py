"""Benchmark `gpulint check` against `ruff check` on a tree of real Python code.

    python benchmarks/bench_check.py                      # the real-code corpus (~380k lines)
    python benchmarks/bench_check.py --path DIR --path DIR2 --select ALL --jobs 4
    python benchmarks/bench_check.py --lines 100000       # a smaller corpus (faster)
    python benchmarks/bench_check.py --max-files 300      # an evenly spread subset (faster)
    python benchmarks/bench_check.py --profile            # + where the time goes (cProfile, one process)

The tree is copied (its .py/.pyi files only) into a temporary directory outside any git
repository, so that both tools see the same files whatever .gitignore files sit above the
original (site-packages inside a pyenv checkout is git-ignored, for example) and so that the
cache is written into the temporary directory.

Measured, each as a separate process (what a user runs):
  cold        gpulint check --no-cache
  cold+write  gpulint check with a fresh cache directory (writes the cache)
  warm        the same again over the unchanged tree (reads the cache)
  script      one ~300-line training script end to end, --no-cache (what pre-commit does); median
  ruff        ruff check --no-cache --isolated (its default rules) on the same tree

For each: wall seconds, CPU seconds (user+sys of the process and its workers), the peak RSS of
the largest process, and the peak of the summed RSS of the process tree (sampled every 20 ms).
The default tree is /work/corpus plus accelerate and lightning from /work/corpusvenv, topped up
with an evenly spread subset of transformers until it holds --lines lines (all files of every
path but the last, then files of the last path). The goals (issue 14): cold CPU time within 25x
ruff's CPU time, warm under 0.3 s per 100k lines, the script under 200 ms, peak memory under
400 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def compile_snapshot(folder: Path) -> None:
    """Write the .pyc files of a copied package (what pip does when it installs a wheel)."""
    import compileall

    compileall.compile_dir(str(folder), quiet=1)


# ---------------------------------------------------------------------------------------------
# measuring one process tree
# ---------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kb(root: int) -> int:
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss_kb(pid)
        todo.extend(_children(pid))
    return total


class Run:
    def __init__(self, name: str, wall: float, cpu: float, maxrss_mb: float, tree_mb: float, rc: int, out: str):
        self.name, self.wall, self.cpu, self.maxrss_mb, self.tree_mb, self.rc, self.out = name, wall, cpu, maxrss_mb, tree_mb, rc, out


def measure(name: str, cmd: list[str], cwd: Path, env: dict | None = None, timeout: float | None = None, preexec=None) -> Run:
    """Run cmd; with a timeout, kill it (SIGKILL) past that many wall seconds (rc -9)."""
    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=preexec)
    done = threading.Event()
    if timeout:
        killer = threading.Timer(timeout, lambda: proc.kill() if proc.returncode is None else None)
        killer.daemon = True
        killer.start()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = b"".join(chunks).decode("utf-8", "replace")
    # ru_maxrss of a waited-for child covers its own waited-for children too (the largest one)
    return Run(name, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, peak[0] / 1024, proc.returncode, out)


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------


def default_path() -> Path:
    out = subprocess.run(
        [sys.executable, "-c", "import torch,os;print(os.path.dirname(torch.__file__))"],
        capture_output=True, text=True, check=True,
    )
    return Path(out.stdout.strip())


CORPUS = [
    Path("/work/corpus"),
    Path("/work/corpusvenv/lib/python3.11/site-packages/accelerate"),
    Path("/work/corpusvenv/lib/python3.11/site-packages/lightning"),
    Path("/work/corpusvenv/lib/python3.11/site-packages/transformers"),
]


def _py_files(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*") if p.suffix in (".py", ".pyi") and p.is_file() and not p.is_symlink())


def _spread(files: list[Path], n: int) -> list[Path]:
    if n >= len(files):
        return files
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


def copy_trees(srcs: list[Path], dest: Path, max_files: int | None, max_lines: int | None) -> list[Path]:
    """Copy the sources' Python files under dest/<name>; the last source fills up to max_lines."""
    chosen: list[tuple[Path, Path]] = []
    lines = 0
    for i, src in enumerate(srcs):
        files = _py_files(src)
        if max_lines and i == len(srcs) - 1 and lines < max_lines:
            # an evenly spread subset of the last source, growing until the total is reached
            counts = {f: f.read_bytes().count(b"\n") for f in files}
            total = sum(counts.values())
            want = max_lines - lines
            if total > want:
                n = max(1, int(len(files) * want / total))
                while True:
                    sub = _spread(files, n)
                    if sum(counts[f] for f in sub) >= want or n >= len(files):
                        break
                    n += max(1, len(files) // 200)
                files = sub
        elif max_lines and lines >= max_lines:
            break
        for f in files:
            chosen.append((src, f))
            lines += f.read_bytes().count(b"\n")
    if max_files and len(chosen) > max_files:
        step = len(chosen) / max_files
        chosen = [chosen[int(i * step)] for i in range(max_files)]
    out = []
    for src, f in chosen:
        target = dest / src.name / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        out.append(target)
    return out


SCRIPT_HEAD = '''"""Train a small classifier (benchmark input: a realistic training script)."""
import argparse
import json
import math
import os
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--out", default="ckpt.pt")
    return p.parse_args()


class ToyDataset(Dataset):
    def __init__(self, n=1024, dim=16, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, dim, generator=g)
        self.y = (self.x.sum(dim=1) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self, dim=16, hidden=64, classes=2):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.drop(F.relu(self.fc2(x)))
        return self.head(x)

'''

SCRIPT_HELPER = '''
def metric_{i}(logits, target):
    """Accuracy-like metric number {i}."""
    pred = logits.argmax(dim=1)
    correct = (pred == target).float()
    score = correct.mean().item()
    if math.isnan(score):
        return 0.0
    return score * {w}

'''

SCRIPT_TAIL = '''
def evaluate(model, loader, device):
    model.eval()
    total, correct = 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        correct += (logits.argmax(1) == y).sum().item()
        total += y.numel()
    return correct / max(total, 1)


def main():
    args = parse_args()
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train = DataLoader(ToyDataset(seed=1), batch_size=args.batch_size, shuffle=True)
    val = DataLoader(ToyDataset(seed=2), batch_size=args.batch_size)
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr).to(device)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    scaler = torch.amp.GradScaler(enabled=args.amp)
    history = []
    for epoch in range(args.epochs):
        model.train()
        for step, (x, y) in enumerate(train):
            x.to(device)
            y = y.to(device)
            with torch.autocast(device_type=device.type, enabled=args.amp):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            history.append(loss)
        scheduler.step()
        acc = evaluate(model, val, device)
        print(json.dumps({"epoch": epoch, "acc": acc}))
    torch.save(model.state_dict(), args.out)


if __name__ == "__main__":
    main()
'''


def training_script(lines: int = 300) -> str:
    body = SCRIPT_HEAD
    i = 0
    while body.count("\n") + SCRIPT_TAIL.count("\n") + SCRIPT_HELPER.count("\n") <= lines:
        body += SCRIPT_HELPER.format(i=i, w=1 + i % 3)
        i += 1
    return body + SCRIPT_TAIL


# ---------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", type=Path, action="append", help="tree to check (repeatable; default: the real-code corpus)")
    ap.add_argument("--lines", type=int, default=380_000, help="fill the tree up to this many lines (default 380000; 0: all)")
    ap.add_argument("--select", help="gpulint --select (e.g. ALL); default: the default rule set")
    ap.add_argument("--ignore", help="gpulint --ignore (e.g. rules too slow to include)")
    ap.add_argument("--jobs", type=int, help="gpulint -j (default: one worker per core)")
    ap.add_argument("--max-files", type=int, help="check an evenly spread subset of this many files")
    ap.add_argument("--script-runs", type=int, default=5)
    ap.add_argument("--skip-ruff", action="store_true")
    ap.add_argument("--quick", action="store_true", help="skip the --no-cache cold run: the cold run that writes the cache is the cold figure")
    ap.add_argument("--profile", action="store_true", help="also profile one in-process cold run (-j 1)")
    ap.add_argument("--profile-files", type=int, default=150, help="files for --profile (a spread subset)")
    args = ap.parse_args()

    srcs = args.path or [p for p in CORPUS if p.is_dir()] or [default_path()]
    snapshot = Path(tempfile.mkdtemp(prefix="gpulint-bench-pkg-"))
    # run a frozen copy of this checkout: the cache fingerprint covers gpulint's own sources, so
    # edits made to the working tree during the benchmark would turn the warm run into a cold one
    shutil.copytree(REPO / "gpulint", snapshot / "gpulint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rules", snapshot / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    # byte-compiled like an installed wheel: with PYTHONDONTWRITEBYTECODE set (as on the team's
    # machine) every process would otherwise compile all of gpulint's and the rules' sources
    compile_snapshot(snapshot)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(snapshot) + os.pathsep + env.get("PYTHONPATH", "")
    gl = [sys.executable, "-m", "gpulint", "check", "--exit-zero", "-q"]
    if args.select:
        gl += ["--select", args.select]
    if args.ignore:
        gl += ["--ignore", args.ignore]
    if args.jobs:
        gl += ["-j", str(args.jobs)]

    with tempfile.TemporaryDirectory(prefix="gpulint-bench-") as tmp:
        tmp = Path(tmp)
        work = tmp / "tree"
        files = copy_trees(srcs, work, args.max_files, args.lines or None)
        tree = work
        n_lines = sum(f.read_bytes().count(b"\n") for f in files)
        print(f"tree: {', '.join(map(str, srcs))} -> {len(files)} files, {n_lines} lines (copied to {tree})")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}")
        (tmp / "gpulint.toml").write_text(f'cache-dir = "{(tmp / "cache").as_posix()}"\n', encoding="utf-8")

        runs: list[Run] = []
        if not args.quick:
            runs.append(measure("gpulint cold (--no-cache)", gl + ["--no-cache", str(tree)], tmp, env))
        runs.append(measure("gpulint cold, writing the cache", gl + ["--config", str(tmp / "gpulint.toml"), str(tree)], tmp, env))
        if args.quick:
            runs.insert(0, runs[0])
        runs.append(measure("gpulint warm (cache)", gl + ["--config", str(tmp / "gpulint.toml"), str(tree)], tmp, env))
        ruff = None
        ruff_bin = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
        if not args.skip_ruff and ruff_bin:
            ruff = measure("ruff check (default rules, --no-cache)", [ruff_bin, "check", "--no-cache", "--isolated", "--exit-zero", "-q", str(tree)], tmp)
            runs.append(ruff)

        script = tmp / "train.py"
        script.write_text(training_script(300), encoding="utf-8")
        n_script = script.read_text().count("\n")
        script_runs = [measure("script", gl + ["--no-cache", str(script)], tmp, env) for _ in range(args.script_runs)]
        best = sorted(script_runs, key=lambda r: r.wall)[len(script_runs) // 2]
        best.name = f"one {n_script}-line script end to end (median of {len(script_runs)})"
        runs.append(best)

        print()
        print(f"{'run':48s} {'wall s':>8s} {'cpu s':>8s} {'max RSS MB':>11s} {'tree RSS MB':>12s} {'rc':>3s}")
        for r in runs[1:] if args.quick else runs:
            print(f"{r.name:48s} {r.wall:8.2f} {r.cpu:8.2f} {r.maxrss_mb:11.0f} {r.tree_mb:12.0f} {r.rc:3d}")
        for r in runs:
            if r.rc not in (0,):
                print(f"\n{r.name} exited {r.rc}:\n{r.out[-2000:]}")
        n_problems = sum(1 for line in runs[0].out.splitlines() if ": GL" in line)
        print(f"\ngpulint found {n_problems} problems in the tree")

        cold, warm = runs[0], runs[2]
        print("\ngoals:")
        if ruff is not None:
            ratio = cold.cpu / max(ruff.cpu, 1e-9)
            print(f"  CPU time: gpulint {cold.cpu:.2f} s, ruff {ruff.cpu:.2f} s, ratio {ratio:.1f}x (goal <= 25x)  {'OK' if ratio <= 25 else 'MISSED'}")
            print(f"  wall time: gpulint {cold.wall:.2f} s, ruff {ruff.wall:.2f} s, ratio {cold.wall / max(ruff.wall, 1e-9):.1f}x")
        per100k = warm.wall / max(n_lines, 1) * 100_000
        per100k_cpu = warm.cpu / max(n_lines, 1) * 100_000
        print(f"  warm under 0.3 s per 100k lines:   {per100k:6.2f} s/100k wall, {per100k_cpu:.2f} s/100k CPU  {'OK' if per100k <= 0.3 else 'MISSED'}")
        print(f"  {n_script}-line script under 200 ms:      {best.wall * 1000:6.0f} ms wall, {best.cpu * 1000:.0f} ms CPU  {'OK' if best.wall <= 0.2 else 'MISSED'}")
        # the run above is the median by wall time; CPU time varies less under load: its own median
        cpus = sorted(r.cpu * 1000 for r in script_runs)
        print(f"  script CPU over {len(cpus)} runs: median {statistics.median(cpus):.0f} ms, min {cpus[0]:.0f} ms")
        print("  (on a loaded machine wall times are inflated; CPU times are comparable between runs)")
        peak = max(r.tree_mb for r in runs if r is not ruff)
        print(f"  peak memory under 400 MB:          {peak:6.0f} MB (process tree)  {'OK' if peak < 400 else 'MISSED'}")

        if args.profile:
            profile(tree, args, env)
    shutil.rmtree(snapshot, ignore_errors=True)
    return 0


def profile(tree: Path, args, env: dict) -> None:
    """cProfile of one cold run in a single process over a spread subset of the tree."""
    files = sorted(str(p) for p in tree.rglob("*.py"))
    if len(files) > args.profile_files:
        step = len(files) / args.profile_files
        files = [files[int(i * step)] for i in range(args.profile_files)]
    code = (
        "import cProfile, pstats, sys\n"
        "from gpulint.cli import cli\n"
        "argv = sys.argv[1:]\n"
        "pr = cProfile.Profile(); pr.enable()\n"
        "try:\n    cli.main(args=argv, standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "pr.disable()\n"
        "st = pstats.Stats(pr, stream=sys.stderr)\n"
        "st.sort_stats('cumulative').print_stats(r'gpulint|rules|libcst/_parser/entrypoints', 30)\n"
        "st.sort_stats('tottime').print_stats(15)\n"
    )
    cmd = [sys.executable, "-c", code, "check", "--no-cache", "--exit-zero", "-q", "-j", "1", *files]
    if args.select:
        cmd[4:4] = ["--select", args.select]
    if args.ignore:
        cmd[4:4] = ["--ignore", args.ignore]
    print(f"\nprofile: {len(files)} files, one process")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(p.stderr[-12000:])


if __name__ == "__main__":
    sys.exit(main())
