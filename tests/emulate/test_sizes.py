"""Sizes for --gpu-memory (no torch needed)."""

from __future__ import annotations

import pytest

from gpulint.emulate.sizes import format_cuda_size, format_size, parse_size


@pytest.mark.parametrize(
    "text,expected",
    [
        ("16GiB", 16 * 1024**3),
        ("16gib", 16 * 1024**3),
        ("512MB", 512 * 1000**2),
        ("512MiB", 512 * 1024**2),
        ("1.5G", int(1.5 * 1024**3)),
        ("2 KiB", 2048),
        ("1048576", 1048576),
        ("10kB", 10000),
        ("1TiB", 1024**4),
        (4096, 4096),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "16 parsecs", "-1GiB", "0", "GiB", True])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_size():
    assert format_size(100) == "100 B"
    assert format_size(12.3 * 1024**2) == "12.3 MiB"
    assert format_size(3 * 1024**3) == "3.0 GiB"
    assert format_cuda_size(20 * 1024**2) == "20.00 MiB"
    assert format_cuda_size(1000) == "1000 bytes"
