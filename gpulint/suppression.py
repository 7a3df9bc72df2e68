"""`# noqa`, `# gpulint: ignore[...]` and `# gpulint: skip-file` comments.

Only real comments count (found with the tokenizer, so `"# noqa"` inside a string does not
suppress anything). A suppression applies to the line it is written on.
"""

from __future__ import annotations

import io
import re
import tokenize

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*gpulint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*gpulint:\s*skip-file\b", re.IGNORECASE)
_ALL = "*"


def might_skip_file(source: str) -> bool:
    return _SKIP_FILE.search(source) is not None


class Suppressions:
    def __init__(self, source: str) -> None:
        self.by_line: dict[int, set[str]] = {}
        self.skip_file = False
        if "#" not in source:
            return
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            tokens = []
        for tok in tokens:
            if tok.type != tokenize.COMMENT:
                continue
            text = tok.string
            line = tok.start[0]
            if _SKIP_FILE.match(text):
                self.skip_file = True
            for regex in (_NOQA, _IGNORE):
                for m in regex.finditer(text):
                    codes = m.group("codes")
                    entry = self.by_line.setdefault(line, set())
                    if not codes:
                        entry.add(_ALL)
                    else:
                        entry.update(c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c)

    def suppressed(self, line: int, code: str) -> bool:
        codes = self.by_line.get(line)
        if not codes:
            return False
        return _ALL in codes or code in codes
