"""Time and peak memory of `gpulint check` on the pathological inputs of issue 11.

    python benchmarks/bench_nasty.py                  # every case, 120 s and 3 GiB each
    python benchmarks/bench_nasty.py --timeout 60 --memory-gb 2

Each case is one generated file checked by `gpulint check --no-cache -j 1` in its own process,
under a wall-clock limit and an address-space limit (RLIMIT_AS) so that a runaway case cannot
take the machine down. Printed per case: exit status, wall and CPU seconds, peak RSS, and the
first GL000 message (when there is one).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import REPO, compile_snapshot, measure, training_script  # noqa: E402


def cases() -> dict[str, str]:
    script = training_script(300)
    big = []
    n = 0
    while n < 50_000:
        big.append(script.replace("def main(", f"def main_{n}(").replace('if __name__ == "__main__":\n    main()\n', ""))
        n += big[-1].count("\n")
    # every case starts with a line that the rules' prefilters match, so that the file is
    # analysed (a file no rule can fire on is only syntax-checked)
    head = "import torch\nmodel = torch.nn.Linear(2, 2).to('cuda')\n"
    cases = {
        "1,500 nested parens": "x = " + "(" * 1500 + "1" + ")" * 1500 + "\n",
        "1,000 nested calls": "x = " + "f(" * 1000 + "1" + ")" * 1000 + "\n",
        "10,000 chained a[0]": "x = a" + "[0]" * 10_000 + "\n",
        "10,000 chained .a": "x = a" + ".a" * 10_000 + "\n",
        "10,000-term and chain": "x = " + " and ".join(["a"] * 10_000) + "\n",
        "5 MB list literal": "x = [" + ", ".join(str(i % 1000) for i in range(1_300_000)) + "]\n",
        "50,000-line script": "".join(big),
        "500-branch elif": "x = 0\nif x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 500)),
    }
    return {name: (text if name.startswith("50,000") else head + text) for name, text in cases.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--memory-gb", type=float, default=3.0)
    ap.add_argument("--only", help="run the cases whose name contains this text")
    args = ap.parse_args()
    snapshot = Path(tempfile.mkdtemp(prefix="gpulint-bench-pkg-"))
    shutil.copytree(REPO / "gpulint", snapshot / "gpulint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rules", snapshot / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    # byte-compiled like an installed wheel: with PYTHONDONTWRITEBYTECODE set (as on the team's
    # machine) every process would otherwise compile all of gpulint's and the rules' sources
    compile_snapshot(snapshot)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(snapshot) + os.pathsep + env.get("PYTHONPATH", "")
    limit = int(args.memory_gb * 2**30)

    def preexec() -> None:  # the limit applies to the measured process only
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    gl = [sys.executable, "-m", "gpulint", "check", "--no-cache", "-j", "1"]
    print(f"limits: {args.timeout} s, {args.memory_gb} GiB address space per case; load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':26s} {'KB':>7s} {'rc':>4s} {'wall s':>8s} {'cpu s':>8s} {'RSS MB':>8s}  result")
    with tempfile.TemporaryDirectory(prefix="gpulint-nasty-") as tmp:
        for name, text in cases().items():
            if args.only and args.only not in name:
                continue
            f = Path(tmp) / "case.py"
            f.write_text(text, encoding="utf-8")
            r = measure(name, gl + [str(f)], Path(tmp), env, timeout=args.timeout, preexec=preexec)
            lines = [ln for ln in r.out.splitlines() if ln.strip()]
            gl000 = next((ln.split("GL000", 1)[1].strip() for ln in lines if "GL000" in ln), "")
            if r.rc == -9:
                what = "killed (over the time limit)"
            elif r.rc == -11:
                what = "segmentation fault (no output)"
            elif "Traceback" in r.out or "MemoryError" in r.out:
                what = "traceback: " + (lines[-1] if lines else "")
            elif gl000:
                what = "GL000 " + gl000[:70]
            elif r.rc in (0, 1):
                what = f"analysed ({sum(1 for ln in lines if ': GL' in ln)} findings)"
            else:
                what = (lines[-1] if lines else "no output")[:80]
            print(f"{name:26s} {len(text) / 1024:7.0f} {r.rc:4d} {r.wall:8.2f} {r.cpu:8.2f} {max(r.maxrss_mb, r.tree_mb):8.0f}  {what}", flush=True)
    shutil.rmtree(snapshot, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
