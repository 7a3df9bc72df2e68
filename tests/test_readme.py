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


def _readme_rules_module():
    spec = importlib.util.spec_from_file_location("readme_rules", ROOT / "scripts" / "readme_rules.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_rules_md_is_generated_from_the_rules():
    mod = _readme_rules_module()
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert mod.rules_doc() == doc, "docs/rules.md is stale: run python scripts/readme_rules.py"


def test_every_rule_link_resolves_to_an_anchor_in_docs_rules_md():
    # SARIF helpUri and the terminal's links point at docs/rules.md#<code>
    import re

    from gpulint import reporters
    from gpulint.registry import Registry

    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([a-z0-9]+)"></a>', doc))
    for r in Registry.load().rules:
        url = reporters.rule_url(r.code)
        assert url.split("#", 1)[0].endswith("/docs/rules.md")
        assert url.split("#", 1)[1] in anchors, r.code


def test_readme_install_and_pre_commit_snippets_are_honest():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # no package-index install and no tag that does not exist
    assert "pip install gpulint\n" not in readme and "pip install gpulint " not in readme
    assert "rev: v0.1.0" not in readme
    assert "git clone" in readme and "commit SHA" in readme
    # the trust model is documented
    assert "loading rules from" in readme
