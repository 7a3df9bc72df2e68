"""What a file's path says about it (used by rules that stay silent in test suites)."""

from __future__ import annotations

import re

_TEST_NAME = re.compile(r"^(?:test_.*|.*_test|conftest)\.pyi?$")
_TEST_DIRS = frozenset({"test", "tests", "testing"})
_FIXTURE_DIRS = frozenset({"fixtures", "fixtures_pending"})


def is_test_path(path: str | None) -> bool:
    """A file of a test suite: `test_*.py`, `*_test.py`, `conftest.py`, or a file under a
    `test`/`tests`/`testing` folder. Fixture scripts (`tests/fixtures/...`, and gpulint's own
    `tests/fixtures_pending/...`) are not test code: they stand for the scripts a user writes."""
    if not path:
        return False
    parts = [p for p in re.split(r"[\\/]+", path) if p]
    if not parts:
        return False
    if _TEST_NAME.match(parts[-1]):
        return True
    folders = parts[:-1]
    for i, p in enumerate(folders):
        if p in _TEST_DIRS and not _FIXTURE_DIRS.intersection(folders[i + 1:]):
            return True
    return False
