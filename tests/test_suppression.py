"""`# noqa`, `# gpulint: ignore[...]` and `# gpulint: skip-file`."""

from __future__ import annotations

import pytest

from cli_support import BOTH, BUGGY, MOVE, gl, problems, write
from gpulint.suppression import Suppressions


# ---------------------------------------------------------------------------------------------
# the comment parser
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comment, suppressed, not_suppressed",
    [
        ("# noqa", ["GL103", "GL104"], []),
        ("#noqa", ["GL103"], []),
        ("# NOQA", ["GL103"], []),
        ("# noqa: GL103", ["GL103"], ["GL104"]),
        ("# noqa:GL103", ["GL103"], ["GL104"]),
        ("# noqa: GL103, GL104", ["GL103", "GL104"], ["GL105"]),
        ("# noqa: GL103 GL104", ["GL103", "GL104"], ["GL105"]),
        ("# noqa: E501", [], ["GL103"]),  # another tool's code does not silence gpulint
        ("# gpulint: ignore[GL103]", ["GL103"], ["GL104"]),
        ("# gpulint: ignore[GL103, GL104]", ["GL103", "GL104"], ["GL105"]),
        ("# gpulint: ignore", ["GL103", "GL104"], []),
        ("# type: ignore  # noqa: GL104", ["GL104"], ["GL103"]),
        ("# a note, not a suppression", [], ["GL103"]),
    ],
)
def test_suppression_comments(comment, suppressed, not_suppressed):
    sup = Suppressions(f"x = 1\ny = 2  {comment}\nz = 3\n")
    for code in suppressed:
        assert sup.suppressed(2, code), (comment, code)
        assert not sup.suppressed(1, code) and not sup.suppressed(3, code)
    for code in not_suppressed:
        assert not sup.suppressed(2, code), (comment, code)


@pytest.mark.parametrize(
    "source",
    [
        'y = "# noqa"\n',
        "y = '# gpulint: ignore[GL103]'\n",
        'y = """\n# noqa\n"""\n',
        'y = f"{x} # noqa"\n',
    ],
)
def test_noqa_inside_a_string_does_not_suppress(source):
    sup = Suppressions(source)
    for line in range(1, source.count("\n") + 2):
        assert not sup.suppressed(line, "GL103")


def test_skip_file_only_as_a_comment():
    assert Suppressions("# gpulint: skip-file\nx = 1\n").skip_file
    assert Suppressions("x = 1\n\n# gpulint: skip-file\n").skip_file
    assert not Suppressions('x = "# gpulint: skip-file"\n').skip_file


def test_unparseable_source_does_not_raise():
    sup = Suppressions('x = (1,  # noqa\n"unterminated\n')
    assert sup.skip_file is False


# ---------------------------------------------------------------------------------------------
# end to end
# ---------------------------------------------------------------------------------------------


def test_noqa_end_to_end(tmp_path):
    lines = MOVE.splitlines()
    src = "\n".join(lines[:2]) + "\n"
    src += 'x.to("cpu")  # noqa\n'
    src += 'x.to("cpu")  # noqa: GL104\n'
    src += 'x.to("cpu")  # noqa: GL103\n'  # wrong code: still reported
    src += 'x.to("cpu")  # gpulint: ignore[GL104]\n'
    src += 'x.to("cpu")  # gpulint: ignore[GL103]\n'  # wrong code: still reported
    src += 'x.to("cpu"); s = "# noqa"\n'  # inside a string: still reported
    write(tmp_path, {"a.py": src})
    r = gl(["check", "a.py"], tmp_path)
    assert problems(r.stdout) == [("a.py", 5, 1, "GL104"), ("a.py", 7, 1, "GL104"), ("a.py", 8, 1, "GL104")]
    assert r.stdout.splitlines()[-1].startswith("Found 3 problems")


def test_suppression_applies_to_the_reported_line_only(tmp_path):
    # GL103 is reported on the line where the call starts; a noqa on its last line does not count
    src = BUGGY.replace('.to("cpu")', '.to(\n    "cpu"\n)  # noqa')
    write(tmp_path, {"a.py": src})
    assert problems(gl(["check", "a.py"], tmp_path).stdout) == [("a.py", 4, 7, "GL103")]
    src = BUGGY.replace('.to("cpu")', '.to(  # noqa: GL103\n    "cpu"\n)')
    write(tmp_path, {"a.py": src})
    assert gl(["check", "a.py"], tmp_path).exit_code == 0


def test_skip_file_end_to_end(tmp_path):
    write(tmp_path, {"a.py": "# gpulint: skip-file\n" + BOTH, "b.py": BOTH + 'x = "# gpulint: skip-file"\n'})
    r = gl(["check", "."], tmp_path)
    assert {p[0] for p in problems(r.stdout)} == {"b.py"}
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "a.py").read_text() == "# gpulint: skip-file\n" + BOTH


def test_engine_errors_cannot_be_suppressed(tmp_path):
    write(tmp_path, {"a.py": "def f(:  # noqa\n"})
    r = gl(["check", "a.py"], tmp_path)
    assert r.exit_code == 1
    assert [p[3] for p in problems(r.stdout)] == ["GL000"]
