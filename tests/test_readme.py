"""The README's rules table is the registry's (regenerate with `python scripts/readme_rules.py`)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_rules_table_matches_the_rules():
    spec = importlib.util.spec_from_file_location("readme_rules", ROOT / "scripts" / "readme_rules.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert mod.render(readme) == readme, "README rules table is stale: run python scripts/readme_rules.py"


def test_readme_commands_are_the_ci_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = 'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest'
    assert test_command in readme
    assert test_command in ci.splitlines()
    assert "pip install . && gpulint check examples/" in readme
