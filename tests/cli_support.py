"""Helpers for the engine/CLI tests: run gpulint in-process or as a subprocess, build projects.

The snippets here are small scripts whose findings are known by reading them, not by running
gpulint: BUGGY moves an optimizer with `.to()` (GL103, line 4, column 7: the call starts after
`opt = `), MOVE discards a tensor move (GL104, line 3, column 1).

TEST_RULES is a tiny rule pack used through `rule-dirs`, so engine behaviour (unsafe fixes,
fixes that break the syntax, the fix loop) is tested independently of the built-in rules.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from click.testing import CliRunner, Result

REPO = Path(__file__).resolve().parents[1]

BUGGY = (
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(2, 2)\n"
    'opt = torch.optim.SGD(model.parameters(), lr=0.1).to("cpu")\n'
)
BUGGY_FIXED = BUGGY.replace('.to("cpu")', "")
MOVE = 'import torch\nx = torch.zeros(2)\nx.to("cpu")\n'
MOVE_FIXED = 'import torch\nx = torch.zeros(2)\nx = x.to("cpu")\n'
CLEAN = MOVE_FIXED
# both rules on one file: GL103 at 4:7 and GL104 at 6:1
BOTH = BUGGY + 'x = torch.zeros(2)\nx.to("cpu")\n'

TEST_RULES = '''
import libcst as cst
from gpulint.rule import Rule


def _names(module):
    found = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node):
            found.append(node)

    module.visit(V())
    return found


class NoPrint(Rule):
    code = "TST001"
    name = "no-print"
    summary = "A print() call."
    message = "print() call: use log()"
    fix_safety = "unsafe"
    prefilter = r"print"
    explanation = "Bad: print(x). Good: log(x)."

    def check(self, ctx):
        for node in _names(ctx.module):
            if node.value == "print":
                yield ctx.finding(node, fix=ctx.fix(ctx.replace(node, "log"), message="Use log()"))


class Shrink(Rule):
    """Fixpoint test: `aaaa` -> `aaa` -> `aa` -> `a`, one step per round."""

    code = "TST002"
    name = "shrink-name"
    summary = "A name of several a's."
    message = "name is too long"
    fix_safety = "safe"
    prefilter = r"aa"

    def check(self, ctx):
        for node in _names(ctx.module):
            if len(node.value) > 1 and set(node.value) == {"a"}:
                yield ctx.finding(node, fix=ctx.fix(ctx.replace(node, node.value[1:]), message="Shorten"))


class BreakSyntax(Rule):
    """Its fix leaves the file unparseable."""

    code = "TST003"
    name = "break-syntax"
    summary = "The name breakme."
    message = "breakme found"
    fix_safety = "safe"
    prefilter = r"breakme"

    def check(self, ctx):
        for node in _names(ctx.module):
            if node.value == "breakme":
                yield ctx.finding(node, fix=ctx.fix(ctx.replace(node, "(("), message="Break it"))


class PingPong(Rule):
    """A fix that never converges: ping -> pong -> ping ..."""

    code = "TST004"
    name = "ping-pong"
    summary = "ping or pong."
    message = "ping/pong"
    fix_safety = "safe"
    prefilter = r"ping|pong"

    def check(self, ctx):
        for node in _names(ctx.module):
            if node.value in ("ping", "pong"):
                new = "pong" if node.value == "ping" else "ping"
                yield ctx.finding(node, fix=ctx.fix(ctx.replace(node, new), message="Swap"))


class NoFix(Rule):
    code = "TST005"
    name = "no-fix"
    summary = "The name nofix, with a message: 100% wrong, surely."
    message = "nofix: 100% wrong,\\nreally"
    fix_safety = "none"
    prefilter = r"nofix"

    def check(self, ctx):
        for node in _names(ctx.module):
            if node.value == "nofix":
                yield ctx.finding(node)
'''


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_bytes(content.encode("utf-8"))
    return root


def rule_pack(root: Path, extra_config: str = "") -> Path:
    """A project in `root` whose config loads TEST_RULES from `root/myrules`."""
    write(root, {"myrules/test_rules.py": TEST_RULES})
    (root / "pyproject.toml").write_text(
        '[tool.gpulint]\nrule-dirs = ["myrules"]\n' + textwrap.dedent(extra_config), encoding="utf-8"
    )
    return root


def gl(args: list[str], cwd: Path, input: str | bytes | None = None) -> Result:
    """Run the CLI in-process (fast) from the directory `cwd`."""
    from gpulint.cli import cli

    with contextlib.chdir(cwd):
        return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def gl_proc(args: list[str], cwd: Path, input: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m gpulint` as a real process (exit codes, stdout/stderr, no traceback)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gpulint", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env=full_env,
        timeout=900,
    )


LINE_RE = re.compile(r"^(?P<path>[^\n]+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<fix>\[\*\] )?(?P<message>.*)$")


def problems(output: str) -> list[tuple[str, int, int, str]]:
    """(path, line, col, code) of every problem line of a text report."""
    out = []
    for line in output.splitlines():
        m = LINE_RE.match(line)
        if m:
            out.append((m["path"], int(m["line"]), int(m["col"]), m["code"]))
    return out


def builtin_codes() -> set[str]:
    """Rule codes declared in the rules/ folder, read from the source text (not the registry)."""
    codes = set()
    for f in (REPO / "rules").glob("*.py"):
        if f.name.startswith("_"):
            continue
        codes.update(re.findall(r'^\s+code\s*=\s*"([A-Z]+[0-9]+)"', f.read_text(encoding="utf-8"), re.MULTILINE))
    return codes
