"""Helpers shared by the fixture tests: reading expectations, running the engine and scripts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
TRAIN_LINE = re.compile(r"^GPULINT-TRAIN (\{.*\})\s*$")
HEADER_LINES = 15


@lru_cache(maxsize=None)
def registry() -> Registry:
    return Registry.load()


def rules_for(codes) -> list:
    reg = registry()
    return [reg.by_code(c)() for c in sorted(set(codes))]


@dataclass
class Case:
    code: str  # the folder's rule
    path: Path

    @property
    def id(self) -> str:
        return f"{self.code}/{self.path.name}"

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def is_negative(self) -> bool:
        return self.path.name.startswith("ok_")

    @property
    def fixed_path(self) -> Path:
        return self.path.with_name(self.path.name[: -len(".py")] + ".fixed.py")

    def header(self) -> list[str]:
        return self.text.splitlines()[:HEADER_LINES]

    @property
    def static(self) -> bool:
        return any(re.search(r"#\s*fixture:\s*static\b", line) for line in self.header())

    @property
    def cpu_only(self) -> bool:
        """A script that trains on the CPU by design (`# fixture: cpu-only`): on (emulated) CUDA it
        must still train, on the CPU."""
        return any(re.search(r"#\s*fixture:\s*cpu-only\b", line) for line in self.header())

    @property
    def torchrun(self) -> int | None:
        for line in self.header():
            m = re.search(r"#\s*fixture:\s*torchrun\s+(\d+)", line)
            if m:
                return int(m.group(1))
        return None

    @property
    def fails_on_cuda(self) -> str | None:
        for line in self.header():
            m = re.search(r"#\s*fails-on-cuda:\s*(.+?)\s*$", line)
            if m:
                return m.group(1)
        return None

    def expected(self) -> set[tuple[int, str]]:
        out = set()
        for i, line in enumerate(self.text.splitlines(), 1):
            m = EXPECT.search(line)
            if m:
                for c in re.split(r"\s*,\s*", m.group("codes")):
                    out.add((i, c))
        return out

    def selected_codes(self) -> set[str]:
        return {self.code} | {c for _, c in self.expected()} | self.also_fix()

    def also_fix(self) -> set[str]:
        """`# fixture: also-fix GL101`: rules that only fire once the folder's rule has fixed the
        script (a real script with a second bug the first one hid: the model moved by GL112's fix
        now meets the unmoved validation batch GL101 reports); they run in the snapshot and
        stability checks too, as `gpulint fix` runs every rule on each round."""
        out: set[str] = set()
        for line in self.header():
            m = re.search(r"#\s*fixture:\s*also-fix\s+([A-Z0-9, ]+)", line)
            if m:
                out |= {c for c in re.split(r"[\s,]+", m.group(1)) if c}
        return out

    def unsafe(self) -> bool:
        """Fix with --unsafe-fixes: for unsafe rules, and for a safe rule's case whose header says
        `# fixture: unsafe-fixes` (a rule whose fix is safe in some cases and unsafe in others)."""
        if any(re.search(r"#\s*fixture:\s*unsafe-fixes\b", line) for line in self.header()):
            return True
        return registry().by_code(self.code).fix_safety == "unsafe"


def cases() -> list[Case]:
    out = []
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir() and re.fullmatch(r"GL\d{3}", p.name)):
        for f in sorted(folder.glob("*.py")):
            if f.name.endswith(".fixed.py"):
                continue
            out.append(Case(folder.name, f))
    return out


def check(text: str, codes, path: str = "fixture.py"):
    return run_text(path, text, rules_for(codes), Options()).diagnostics


def fix(text: str, codes, unsafe: bool, path: str = "fixture.py"):
    return run_text(path, text, rules_for(codes), Options(fix=True, unsafe_fixes=unsafe, write=False))


@lru_cache(maxsize=None)
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def fork_path() -> bool:
    """Whether run_script may use the fork server (tests/forkrun.py) instead of a fresh process.

    Never on a machine with CUDA (a script on a real GPU gets a fresh process) nor with
    GPULINT_TEST_SUBPROCESS=1; forkrun itself declines what it cannot run faithfully (torchrun,
    interpreter options, environment variables read at interpreter start)."""
    return os.environ.get("GPULINT_TEST_SUBPROCESS") != "1" and not _cuda_available()


def run_script(path: Path, cwd: Path, env_extra: dict | None = None, timeout: int = 900, argv_prefix=None):
    """``python SCRIPT`` (or ``argv_prefix + [SCRIPT]``) in ``cwd``: a CompletedProcess with text output.

    A fresh process, or, where fork_path() allows, a fork of this worker's warm interpreter that
    stands for one (tests/forkrun.py: same exit status, output, argv, path, environment and
    __main__; about half the time, as torch is imported once per worker)."""
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    cmd = (argv_prefix or [sys.executable]) + [str(path)]
    if fork_path():
        import forkrun

        proc = forkrun.run(cmd, cwd, env, env_extra, timeout=timeout)
        if proc is not None:
            return proc
    env.update(env_extra or {})
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def train_result(stdout: str) -> dict | None:
    lines = [l for l in stdout.splitlines() if l.strip()]
    if not lines:
        return None
    m = TRAIN_LINE.match(lines[-1])
    return json.loads(m.group(1)) if m else None


def trained(result: dict) -> bool:
    """The loss went clearly down: by at least 5% of the first loss."""
    first, last = result["first_loss"], result["last_loss"]
    return last <= first - 0.05 * abs(first)
