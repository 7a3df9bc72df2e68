"""Property test of the fixes over real code: whatever the default rules fix (unsafe fixes
included), the fixed module still compiles, and fixing it again changes nothing.

By default it runs over code that is in this repository: every fixture input (tests/fixtures)
and every example (examples/). Whether the fixed *runnable* fixtures still train is proven by
test_fixtures.py (CPU, CUDA, emulated CUDA) and test_torchrun.py.

Real code that is not in the repository (never commit it) is checked when an environment
variable names it:

    GPULINT_FIX_CORPUS=/path/to/repos:/path/to/site-packages/torch \\
        python -m pytest tests/test_fix_property.py -q
    GPULINT_FIX_CORPUS_EVERY=5   # optional: only every 5th file (in sorted order), for a quick run

Each folder is walked for `*.py` files; the corpus test reports how many files were fixed, how
many of those compiled, and how many were idempotent (printed with -s), and fails listing the
files that did not compile or changed on a second fix.

With the same variable, the real scripts among them that can run one training step here (CPU,
offline, synthetic data, no package beyond torch and numpy) are fixed and run:
`test_fixed_real_script_runs_a_step` copies the script's repository to a temporary folder, writes
the synthetic data it reads, applies the default fixes (unsafe included), and runs the fixed
script for a step or two; it must exit 0 and print its step line. The unfixed script is run the
same way first: when it does not run here either, the case is skipped (nothing to compare).
The runnable scripts are listed in RUNNABLE below; a script is found when its path relative to a
corpus folder (or to a folder beside it) ends with the listed path, and the case is skipped when the
default rules fix nothing in it. Scripts of the measured corpus that are fixed but cannot run here:
  - pytorch/examples dcgan, vae, imagenet, super_resolution, fast_neural_style, the
    pytorch-tutorial scripts, pytorch-cifar, yolov5, mae, dino, detectron2: they import
    torchvision / timm / detectron2 (not installed) or read datasets that are downloaded;
  - pytorch/examples distributed/tensor_parallelism/*: need an accelerator
    (`torch.accelerator.current_accelerator().type`) and several GPUs;
  - pytorch/examples distributed/minGPT-ddp: needs hydra and torchrun over GPUs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_support import fix
from gpulint.engine import BadInput

ROOT = Path(__file__).resolve().parents[1]


def _default_codes() -> set[str]:
    from gpulint.registry import Registry

    return {r.code for r in Registry.load().resolve(None)}


def _repo_files() -> list[Path]:
    files = [p for p in sorted((ROOT / "tests" / "fixtures").rglob("*.py")) if not p.name.endswith(".fixed.py")]
    files += sorted((ROOT / "examples").rglob("*.py"))
    return files


def _corpus_files() -> list[Path]:
    spec = os.environ.get("GPULINT_FIX_CORPUS", "")
    files: list[Path] = []
    for folder in (f for f in spec.split(os.pathsep) if f):
        for d, dirs, names in os.walk(folder):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
            files.extend(Path(d) / n for n in sorted(names) if n.endswith(".py"))
    every = int(os.environ.get("GPULINT_FIX_CORPUS_EVERY", "1") or 1)
    return files[::max(every, 1)]


def _fix_twice(path: Path, codes: set[str]):
    """(changed, compiles, idempotent, detail); None when the file is not Python gpulint reads."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    try:
        first = fix(text, codes, True, path=str(path))
    except BadInput:
        return None
    if first.text == text:
        return (False, True, True, "")
    try:
        compile(first.text, str(path), "exec", dont_inherit=True)
        compiles = True
        detail = ""
    except SyntaxError as exc:
        compiles = False
        detail = f"does not compile after the fix: {exc}"
    second = fix(first.text, codes, True, path=str(path))
    idempotent = second.text == first.text
    if not idempotent:
        fixed_again = sorted({d.code for d in second.fixed})
        detail += f" a second fix changed it again ({', '.join(fixed_again)})"
    return (True, compiles, idempotent, detail.strip())


REPO_FILES = _repo_files()


@pytest.mark.parametrize("path", REPO_FILES, ids=[str(p.relative_to(ROOT)) for p in REPO_FILES])
def test_fixed_repo_file_compiles_and_is_stable(path: Path):
    result = _fix_twice(path, _default_codes())
    if result is None:
        pytest.skip("not a file gpulint analyses")
    _changed, compiles, idempotent, detail = result
    assert compiles and idempotent, detail


def test_the_property_runs_on_something():
    """The repository sample is not empty, and some of it is actually fixed (else the property
    test proves nothing)."""
    codes = _default_codes()
    changed = [p for p in REPO_FILES[:80] if (_fix_twice(p, codes) or (False,))[0]]
    assert len(REPO_FILES) > 100 and changed


@pytest.mark.skipif(not os.environ.get("GPULINT_FIX_CORPUS"), reason="GPULINT_FIX_CORPUS is not set")
def test_fixed_corpus_compiles_and_is_stable():
    codes = _default_codes()
    files = _corpus_files()
    fixed = compiled = stable = 0
    bad = []
    for path in files:
        result = _fix_twice(path, codes)
        if result is None or not result[0]:
            continue
        fixed += 1
        compiled += result[1]
        stable += result[2]
        if not (result[1] and result[2]):
            bad.append(f"{path}: {result[3]}")
    print(f"\ncorpus: {len(files)} files, {fixed} fixed, {compiled} compiled, {stable} idempotent")
    assert not bad, "\n".join(bad[:50])


# -- fixed real scripts still run a step ---------------------------------------------------------


def _nanogpt_data(repo: Path) -> None:
    import numpy as np

    d = repo / "data" / "gpulint_synth"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        rng.integers(0, 64, size=4096, dtype=np.uint16).tofile(d / f"{split}.bin")


# script path (relative, as in the upstream repository) -> (write its data, argv, a line a step prints)
RUNNABLE = {
    "nanoGPT/train.py": (
        _nanogpt_data,
        [
            "--dataset=gpulint_synth", "--device=cpu", "--compile=False", "--dtype=float32",
            "--max_iters=2", "--eval_interval=1", "--eval_iters=1", "--log_interval=1",
            "--n_layer=1", "--n_head=1", "--n_embd=16", "--block_size=8", "--batch_size=2",
            "--gradient_accumulation_steps=1", "--always_save_checkpoint=False", "--out_dir=gpulint_out",
            "--warmup_iters=1", "--lr_decay_iters=2",
        ],
        "iter 1: loss",
    ),
}


def _runnable_cases() -> list[tuple[str, Path, Path]]:
    """(listed path, the repository folder to copy, the script inside it)."""
    spec = os.environ.get("GPULINT_FIX_CORPUS", "")
    roots = [Path(f) for f in spec.split(os.pathsep) if f]
    cases = []
    for rel in RUNNABLE:
        repo_name, _, inside = rel.partition("/")
        for root in roots:
            for repo in (root / repo_name, root):
                if repo.name == repo_name and (repo / inside).is_file():
                    cases.append((rel, repo, repo / inside))
                    break
            else:
                continue
            break
    return cases


RUNNABLE_CASES = _runnable_cases()


def _run(script: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)  # the script runs as its users run it, without gpulint on its path
    return subprocess.run([sys.executable, script.name, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not os.environ.get("GPULINT_FIX_CORPUS"), reason="GPULINT_FIX_CORPUS is not set")
@pytest.mark.parametrize("case", RUNNABLE_CASES, ids=[c[0] for c in RUNNABLE_CASES])
def test_fixed_real_script_runs_a_step(case, tmp_path: Path):
    rel, repo, script = case
    make_data, argv, step_line = RUNNABLE[rel]
    text = script.read_text(encoding="utf-8")
    fixed = fix(text, _default_codes(), True, path=str(script))
    if fixed.text == text:
        pytest.skip(f"{rel}: the default rules fix nothing in it")
    work = tmp_path / repo.name
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    make_data(work)
    target = work / script.relative_to(repo)
    before = _run(target, argv, target.parent)
    if before.returncode != 0 or step_line not in before.stdout:
        pytest.skip(f"{rel}: the unfixed script does not run here: {before.stderr[-500:]}")
    target.write_text(fixed.text, encoding="utf-8")
    after = _run(target, argv, target.parent)
    codes = sorted({d.code for d in fixed.fixed})
    assert after.returncode == 0, f"{rel} fixed by {codes} no longer runs:\n{after.stderr[-2000:]}"
    assert step_line in after.stdout, f"{rel} fixed by {codes} ran no step:\n{after.stdout[-2000:]}"
