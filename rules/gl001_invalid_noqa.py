"""GL001 invalid-noqa and GL002 unused-noqa: findings about suppression comments.

The engine's suppression step (gpulint/suppression.py) produces these diagnostics when the rules
are enabled; their `check` finds nothing by itself.
"""

from __future__ import annotations

from gpulint.rule import Context, Rule

_PREFILTER = r"#[^\n\r]*?(?:[Nn][Oo][Qq][Aa]|[Gg][Pp][Uu][Ll][Ii][Nn][Tt]\s*:\s*[Ii][Gg][Nn][Oo][Rr][Ee])"


class InvalidNoqa(Rule):
    code = "GL001"
    name = "invalid-noqa"
    summary = "A `# noqa:` / `# gpulint: ignore[...]` names an unknown gpulint code or is not a list of codes."
    message = "suppression comment with unknown or malformed entries: they suppress nothing"
    fix_safety = "none"
    default = True
    kind = "silent"
    prefilter = _PREFILTER
    ast_prefilter = r"(?!)"
    explanation = '''
A suppression comment that names a gpulint code that does not exist (`GL1010`, a typo like
`GL13`), or a misspelt rule name (`# noqa: hardcoded-cudaa`), suppresses nothing: only its valid
entries count (it is never read as a blanket `# noqa`). The comment is reported so that the typo
is found. Rule names work as well as codes (`# noqa: hardcoded-cuda`).

A `# noqa` comment is shared with the project's other linters, so their entries are left to them:
codes (`# noqa: E501`), words that are not shaped like a rule name (torch's sources write
`# noqa: set_linter` and `# noqa: GB_REGISTRY` for linters of their own), and kebab-case words
close to no gpulint rule name (`# noqa: max-complexity`, written for a flake8 plugin). Such an
entry, an empty `# noqa:` and a rule name gpulint does not have (`# noqa: some-name`) are
reported only on a line where a gpulint finding shows anyway: the comment was meant to silence
it and does not. `# gpulint: ignore[...]` is gpulint's own: every entry it does not know is
reported.

Bad:

```python
optimizer.to(device)  # noqa: GL13
optimizer.to(device)  # noqa: optimiser-moved
```

Good:

```python
optimizer.to(device)  # noqa: GL103
optimizer.to(device)  # noqa: optimizer-moved-like-module
```
'''

    def check(self, ctx: Context):
        return ()  # reported by the suppression step


class UnusedNoqa(Rule):
    code = "GL002"
    name = "unused-noqa"
    summary = "A suppression comment that suppresses nothing (opt in with `extend-select = [\"GL002\"]`)."
    message = "unused suppression: no such problem on this line"
    fix_safety = "safe"
    default = False
    kind = "slow"
    prefilter = _PREFILTER
    ast_prefilter = r"(?!)"
    explanation = '''
A `# noqa: GL103` on a line where GL103 no longer fires (the bug was fixed, the code moved) hides
the next real problem on that line. This opt-in rule reports suppressions that suppressed
nothing: a blanket `# gpulint: ignore` on a line with no gpulint finding, or codes of rules that
ran on the file and found nothing on that line. Codes of rules that are not enabled, other tools'
codes and a blanket `# noqa` (which flake8 and ruff read too) are not reported. Enable it with `extend-select = ["GL002"]` or `--extend-select GL002`. The fix
removes the unused codes (or the whole comment when none is used) when the directive ends its
line.

Bad:

```python
model = model.to(device)  # noqa: GL103
```

Good:

```python
model = model.to(device)
```
'''

    def check(self, ctx: Context):
        return ()  # reported by the suppression step
