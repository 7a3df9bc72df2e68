"""Byte sizes: parse "16GiB" / "512MB" / "1.5G" / "1048576", and format like PyTorch's CUDA allocator.

No torch import here: the CLI parses ``--gpu-memory`` before anything heavy is loaded.
"""

from __future__ import annotations

import re

__all__ = ["format_cuda_size", "format_size", "parse_size"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1000**4,
    "tib": 1024**4,
}

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Parse a human size into bytes.

    ``KiB/MiB/GiB/TiB`` (and the bare letters ``K/M/G/T``) are binary, ``kB/MB/GB/TB`` decimal,
    a bare number is bytes. Units are case-insensitive. Raises ``ValueError`` on anything else,
    including zero and negative sizes.
    """
    if isinstance(text, bool):
        raise ValueError(f"invalid size: {text!r}")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE_RE.match(str(text))
        if not match:
            raise ValueError(f"invalid size: {text!r} (expected e.g. 16GiB, 512MB, 1048576)")
        number, unit = match.groups()
        factor = _UNITS.get(unit.lower())
        if factor is None:
            raise ValueError(f"invalid size unit {unit!r} in {text!r} (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)")
        value = int(float(number) * factor)
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return value


def format_size(nbytes: int) -> str:
    """A short human form with one decimal, e.g. ``12.3 MiB``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover


def format_cuda_size(nbytes: int) -> str:
    """The form PyTorch's CUDA caching allocator uses in its messages (``20.00 MiB``)."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    if nbytes < 1024**2:
        return f"{nbytes / 1024:.2f} KiB"
    if nbytes < 1024**3:
        return f"{nbytes / 1024**2:.2f} MiB"
    return f"{nbytes / 1024**3:.2f} GiB"
