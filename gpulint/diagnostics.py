"""Findings as plain data: diagnostics, fixes and text edits.

Everything here is picklable and JSON-friendly, so results travel between worker processes and
into the cache unchanged. Offsets are character offsets into the decoded source text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Edit:
    start: int  # character offsets into the source
    end: int
    content: str
    # 1-based (row, column) of start and end, for reporters
    location: tuple[int, int] = (0, 0)
    end_location: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Fix:
    edits: tuple[Edit, ...]
    applicability: str = SAFE  # "safe" or "unsafe"
    message: str = ""

    @property
    def span(self) -> tuple[int, int]:
        return (min(e.start for e in self.edits), max(e.end for e in self.edits))


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    path: str
    line: int  # 1-based
    col: int  # 1-based
    end_line: int
    end_col: int
    fix: Fix | None = None
    # Offsets of the reported range, used by the engine for fixes; not part of the output.
    extra: dict = field(default_factory=dict)
    # In a notebook: the 1-based cell number (line and column are then in that cell)
    cell: int | None = None

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.col, self.code, self.message)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Diagnostic":
        """A diagnostic from `to_dict`'s output; ValueError/TypeError/KeyError on another shape
        (a cache file is read with it: a wrong shape must fail here, not in a reporter)."""
        for key in ("code", "name", "message", "path"):
            if not isinstance(data[key], str):
                raise ValueError(f"diagnostic field {key!r} is not a string")
        for key in ("line", "col", "end_line", "end_col"):
            if type(data[key]) is not int:
                raise ValueError(f"diagnostic field {key!r} is not an integer")
        if not isinstance(data.get("extra", {}), dict):
            raise ValueError("diagnostic field 'extra' is not an object")
        fix = data.get("fix")
        if fix is not None:
            edits = tuple(
                Edit(e["start"], e["end"], e["content"], tuple(e["location"]), tuple(e["end_location"]))
                for e in fix["edits"]
            )
            for e in edits:
                if not (type(e.start) is int and type(e.end) is int and isinstance(e.content, str)):
                    raise ValueError("fix edit of the wrong shape")
            if not isinstance(fix["applicability"], str) or not isinstance(fix["message"], str):
                raise ValueError("fix of the wrong shape")
            fix = Fix(
                edits=edits,
                applicability=fix["applicability"],
                message=fix["message"],
            )
        return cls(**{**data, "fix": fix})


@dataclass
class FileResult:
    """What processing one file produced."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    original_source: str | None = None  # set with fixed_source
    fixed_source: str | None = None  # the new text when fixes changed it
    applied: int = 0  # number of fixes applied
    fixed: list[str] = field(default_factory=list)  # codes of the diagnostics fixed
    notes: list[str] = field(default_factory=list)  # e.g. fixes dropped because they broke parsing
    error: str | None = None  # unrecoverable problem writing the file
    # (mtime_ns, size, content digest) of the bytes the diagnostics were computed from (after a
    # fix was written: of the new file), for the cache; None when the file could not be read
    stamp: tuple[int, int, str] | None = None

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "applied": self.applied,
        }
