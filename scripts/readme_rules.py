"""Write the rules table of README.md from the rule modules (`python scripts/readme_rules.py`).

tests/test_readme.py fails when the README's table and the rules disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = "<!-- rules-table: generated from the rule modules by `python scripts/readme_rules.py`; tests check it -->"
END = "<!-- end rules-table -->"


def table() -> str:
    sys.path.insert(0, str(ROOT))
    from gpulint.registry import Registry

    rows = ["| code | name | fix | default | what it finds |", "|---|---|---|---|---|"]
    for r in Registry.load().rules:
        summary = r.summary.replace("|", "\\|")
        rows.append(f"| {r.code} | `{r.name}` | {r.fix_safety} | {'on' if r.default else 'off'} | {summary} |")
    return "\n".join(rows)


def render(readme: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    block = f"{START}\n{table()}\n{END}"
    if not pattern.search(readme):
        raise SystemExit("README.md has no rules-table markers")
    return pattern.sub(lambda _m: block, readme)


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
