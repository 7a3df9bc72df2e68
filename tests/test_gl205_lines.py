"""GL205's positions and fixes in text that holds characters `str.splitlines()` takes for line
breaks but Python does not (form feed, U+2028, "\x1c"): they must not shift line numbers or
the layout of the fixed call."""

from __future__ import annotations

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _gl205():
    return [Registry.load().by_code("GL205")()]


def _lines(text: str) -> list[int]:
    return [d.line for d in run_text("t.py", text, _gl205(), Options()).diagnostics if d.code == "GL205"]


def test_odd_line_breaks_in_strings_and_comments_do_not_shift_lines():
    text = (
        "import torch\n"
        "\x0c\n"  # a form feed line (Python: whitespace)
        "NOTE = 'a\u2028b\x1cc\x0cd'  # comment \u2028 with \x85 odd \x0c breaks\n"
        'DOC = """x\u2029y"""\n'
        "scaler = torch.cuda.amp.GradScaler()\n"
        "with torch.cuda.amp.autocast():\n"
        "    pass\n"
    )
    assert _lines(text) == [5, 6]


def test_fix_keeps_a_form_feed_in_the_first_arguments_indentation():
    text = (
        "import torch\n"
        "NOTE = 'a\u2028b'\n"
        "scaler = torch.cuda.amp.GradScaler(\n"
        "\x0c    init_scale=2.0**14,\n"
        "    enabled=True,\n"
        ")\n"
    )
    out = run_text("t.py", text, _gl205(), Options(fix=True, write=False))
    assert out.text == (
        "import torch\n"
        "NOTE = 'a\u2028b'\n"
        "scaler = torch.amp.GradScaler(\n"
        '\x0c    "cuda",\n'
        "\x0c    init_scale=2.0**14,\n"
        "    enabled=True,\n"
        ")\n"
    )
    compile(out.text, "t.py", "exec")
