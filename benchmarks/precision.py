"""Count what the default rules report on real code, per rule, so precision can be reviewed.

    python benchmarks/precision.py                         # the default list of folders (below)
    python benchmarks/precision.py DIR [DIR ...]           # any folders of real code
    python benchmarks/precision.py --json findings.json    # + every finding, for review
    python benchmarks/precision.py --select GL102,GL501    # other rules than the default set
    python benchmarks/precision.py --jobs 2                # worker processes (default 1)

The real code is never part of this repository: pass its folders as arguments. Without
arguments the folders below are used when they exist (each subfolder of /work/corpus is one
repository; each installed package is one repository):

    /work/corpus/*
    /work/corpusvenv/lib/python3.11/site-packages/{torch,transformers,accelerate,lightning}

A folder given on the command line counts as one repository, unless --split is given, in which
case each of its subfolders is one (what the default list does with /work/corpus).

Printed: the number of findings per rule (total, in test files, elsewhere), the share of the
total each rule makes, and a rule x repository table. A file is a test file when a part of its
path is `test`/`tests`/`testing`, or its name is `test_*.py` / `*_test.py` / `conftest.py`.

The files are those `gpulint check` reads by default: `*.py`, `*.pyi` and Jupyter notebooks
(`*.ipynb`: their code cells as one script, gpulint/notebook.py; a notebook's findings carry its
cell number, `path:cell N:line`). Each file goes through the engine's own `process_file`, the way
`gpulint check` runs it, without the cache, without .gitignore filtering (site-packages is often
git-ignored) and without a project configuration (no torch-version: fixes assume a current torch).
A file the engine cannot read gives its GL000 diagnostic, listed apart from the rules' findings.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_SPLIT = ["/work/corpus"]
DEFAULT_PACKAGES = [
    f"/work/corpusvenv/lib/python3.11/site-packages/{p}" for p in ("torch", "transformers", "accelerate", "lightning")
]
SKIP_DIRS = {"__pycache__", ".git", ".venv", "venv", "node_modules", "build", "dist"}
SUFFIXES = (".py", ".pyi", ".ipynb")  # gpulint.config.DEFAULT_INCLUDE


def is_test_file(rel: str) -> bool:
    parts = rel.replace(os.sep, "/").split("/")
    name = parts[-1]
    if any(p in ("test", "tests", "testing") for p in parts[:-1]):
        return True
    stem = name.rsplit(".", 1)[0]
    return name.startswith("test_") or stem.endswith("_test") or name == "conftest.py"


def python_files(root: str) -> list[str]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        out.extend(os.path.join(d, f) for f in sorted(files) if f.endswith(SUFFIXES))
    return out


def repositories(folders: list[str], split: list[str]) -> list[tuple[str, str]]:
    """(repository name, folder) pairs."""
    repos = []
    for f in split:
        if os.path.isdir(f):
            for sub in sorted(os.listdir(f)):
                p = os.path.join(f, sub)
                if os.path.isdir(p) and not sub.startswith("."):
                    repos.append((sub, p))
    for f in folders:
        if os.path.isdir(f):
            repos.append((os.path.basename(os.path.normpath(f)), f))
        else:
            print(f"precision: {f}: not a folder, skipped", file=sys.stderr)
    return repos


_RULES = None


def _rules(codes: tuple[str, ...]):
    global _RULES
    if _RULES is None:
        from gpulint.registry import Registry

        reg = Registry.load()
        _RULES = [reg.by_code(c)() for c in codes]
    return _RULES


def _lines(path: str) -> int:
    """Lines the analysis reads: a .py file's, a notebook's code cells joined into one script."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        if path.endswith(".ipynb"):
            from gpulint.notebook import parse

            return parse(raw).script.count("\n")
        return raw.count(b"\n")
    except Exception:  # unreadable: the engine reports it
        return 0


def _check(item):
    repo, root, path, codes = item
    from gpulint.engine import Options, process_file

    rel = os.path.relpath(path, root)
    try:
        # what `gpulint check` does with one file (.py or notebook), without writing anything
        res = process_file(path, path, _rules(codes), Options(write=False))
    except Exception as exc:  # an engine crash is a finding of its own
        return repo, rel, [], f"crash: {type(exc).__name__}: {exc}", 0
    found = []
    for d in res.diagnostics:
        found.append(
            {
                "rule": d.code,
                "repo": repo,
                "path": rel,
                "cell": d.cell,
                "line": d.line,
                "message": d.message,
                "test": is_test_file(rel),
                "fix": d.fix.applicability if d.fix is not None else None,
            }
        )
    return repo, rel, found, None, _lines(path)


def _where(f: dict) -> str:
    cell = f"cell {f['cell']}:" if f.get("cell") else ""
    return f"{f['repo']}/{f['path']}:{cell}{f['line']}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", help="folders of real code (default: the list in this file's docstring)")
    ap.add_argument("--split", action="append", default=[], help="a folder whose subfolders are repositories")
    ap.add_argument("--select", help="comma-separated rule codes (default: the default rule set)")
    ap.add_argument("--json", help="write every finding to this JSON file")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)

    from gpulint.registry import ENGINE_CODE, Registry

    reg = Registry.load()
    if args.select:
        rules = [r for s in args.select.split(",") for r in reg.match(s)]
    else:
        rules = reg.resolve(None)
    codes = tuple(sorted({r.code for r in rules}))

    folders, split = args.folders, args.split
    if not folders and not split:
        folders = [p for p in DEFAULT_PACKAGES if os.path.isdir(p)]
        split = [p for p in DEFAULT_SPLIT if os.path.isdir(p)]
    repos = repositories(folders, split)
    items = [(name, root, p, codes) for name, root in repos for p in python_files(root)]

    t0 = time.monotonic()
    if args.jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(args.jobs) as pool:
            results = list(pool.imap_unordered(_check, items, chunksize=8))
    else:
        results = [_check(i) for i in items]
    elapsed = time.monotonic() - t0

    findings = []
    problems = []
    lines = Counter()
    files = Counter()
    for repo, rel, found, problem, nlines in results:
        findings.extend(found)
        lines[repo] += nlines
        files[repo] += 1
        if problem:
            problems.append(f"{repo}/{rel}: {problem}")
    findings.sort(key=lambda f: (f["rule"], f["repo"], f["path"], f["cell"] or 0, f["line"]))

    engine = [f for f in findings if f["rule"] == ENGINE_CODE]
    per_rule = Counter(f["rule"] for f in findings if f["rule"] != ENGINE_CODE)
    total = sum(per_rule.values())
    in_tests = Counter(f["rule"] for f in findings if f["test"] and f["rule"] != ENGINE_CODE)
    by_repo: dict[str, Counter] = defaultdict(Counter)
    files_with = defaultdict(set)
    for f in findings:
        by_repo[f["rule"]][f["repo"]] += 1
        files_with[f["rule"]].add((f["repo"], f["path"]))

    print(f"{sum(files.values())} files, {sum(lines.values())} lines, {len(repos)} repositories, "
          f"{len(codes)} rules, {elapsed:.0f} s")
    print(f"{total} findings ({sum(in_tests.values())} in test files)\n")
    print(f"{'rule':<7} {'total':>6} {'share':>6} {'files':>6} {'tests':>6} {'other':>6}  fix")
    for code in codes:
        n = per_rule.get(code, 0)
        if not n:
            continue
        fixes = Counter(f["fix"] or "none" for f in findings if f["rule"] == code)
        fx = ", ".join(f"{k} {v}" for k, v in sorted(fixes.items()))
        print(f"{code:<7} {n:>6} {100 * n / total:>5.1f}% {len(files_with[code]):>6} {in_tests[code]:>6} "
              f"{n - in_tests[code]:>6}  {fx}")
    silent = [c for c in codes if not per_rule.get(c)]
    if silent:
        print(f"silent: {' '.join(silent)}")
    if engine:
        print(f"\n{len(engine)} engine diagnostics ({ENGINE_CODE}):")
        for f in engine[:20]:
            print(f"  {_where(f)}: {f['message'][:160]}")
    if problems:
        print(f"\n{len(problems)} files not analysed:")
        for p in problems[:20]:
            print(f"  {p}")

    names = [n for n, _ in repos if any(by_repo[c][n] for c in per_rule)]
    if names:
        print("\nper repository (rule x repository):")
        short = {n: n[:10] for n in names}
        print(f"{'rule':<7} " + " ".join(f"{short[n]:>10}" for n in names))
        for code in sorted(per_rule):
            print(f"{code:<7} " + " ".join(f"{by_repo[code][n] or '.':>10}" for n in names))
        print(f"{'total':<7} " + " ".join(f"{sum(by_repo[c][n] for c in per_rule):>10}" for n in names))

    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"repositories": [{"name": n, "folder": r, "files": files[n], "lines": lines[n]} for n, r in repos],
                       "rules": list(codes), "findings": findings, "problems": problems}, fh, indent=1)
        print(f"\nfindings written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
