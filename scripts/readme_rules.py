"""Write the rules table of README.md and docs/rules.md from the rule modules
(`python scripts/readme_rules.py`).

tests/test_readme.py fails when either disagrees with the rules. docs/rules.md is what SARIF's
`helpUri` and the terminal's documentation links point at (`docs/rules.md#gl101`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = "<!-- rules-table: generated from the rule modules by `python scripts/readme_rules.py`; tests check it -->"
END = "<!-- end rules-table -->"
RULES_DOC = ROOT / "docs" / "rules.md"


def _rules():
    sys.path.insert(0, str(ROOT))
    from gpulint.registry import Registry

    return Registry.load().rules


def fix_label(r) -> str:
    """`safe`, `unsafe`, `mixed` (safe or unsafe per fix) or `none`; `(partial)` when some findings
    come without a fix."""
    return r.fix_safety + (" (partial)" if getattr(r, "fix_partial", False) and r.fix_safety != "none" else "")


def table() -> str:
    rows = ["| code | name | fix | default | what it finds |", "|---|---|---|---|---|"]
    for r in _rules():
        summary = r.summary.replace("|", "\\|")
        rows.append(f"| [{r.code}](docs/rules.md#{r.code.lower()}) | `{r.name}` | {fix_label(r)} | {'on' if r.default else 'off'} | {summary} |")
    return "\n".join(rows)


def render(readme: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    block = f"{START}\n{table()}\n{END}"
    if not pattern.search(readme):
        raise SystemExit("README.md has no rules-table markers")
    return pattern.sub(lambda _m: block, readme)


def rules_doc() -> str:
    from gpulint.reporters import severity_of

    out = [
        "# gpulint rules",
        "",
        "<!-- generated from the rule modules by `python scripts/readme_rules.py`; tests check it. Do not edit. -->",
        "",
        "Each rule's code is stable. **Fix**: `safe` fixes are applied by `gpulint fix`, `unsafe` ones only",
        "with `--unsafe-fixes`, `mixed` rules offer safe fixes in some shapes and unsafe ones in others",
        "(each finding says which), `none` means no automatic fix; `(partial)`: some findings of the",
        "rule come without a fix (the rule only reports them). **Severity** follows the rule's kind: a",
        "crash or a silently wrong result is an `error`, performance advice and deprecations are",
        "`warning`s (SARIF `level`, GitHub annotations). Rules marked *off* are enabled with",
        "`extend-select`. `GL000` is not a rule: it reports a file that cannot be read, decoded or parsed.",
        "",
        "| code | name | fix | default | severity |",
        "|---|---|---|---|---|",
    ]
    rules = _rules()
    for r in rules:
        out.append(f"| [{r.code}](#{r.code.lower()}) | `{r.name}` | {fix_label(r)} | {'on' if r.default else 'off'} | {severity_of(r.kind)} |")
    out.append("")
    for r in rules:
        out += [
            f'<a id="{r.code.lower()}"></a>',
            "",
            f"## {r.code} `{r.name}`",
            "",
            r.summary,
            "",
            f"Fix: {fix_label(r)}. Default: {'on' if r.default else 'off'}. Kind: {r.kind} "
            f"(severity: {severity_of(r.kind)}).",
            "",
            re.sub(r"\n{3,}", "\n\n", r.explanation.strip()),
            "",
        ]
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
    RULES_DOC.write_text(rules_doc(), encoding="utf-8")
