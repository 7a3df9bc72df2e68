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


# ---------------------------------------------------------------------------------------------
# issue 9: malformed / unknown noqa, unused noqa (GL002), --add-noqa, a cheap scan
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comment",
    ["# noqa: some-name", "# noqa: GL999", "# noqa:", "# gpulint: ignore[nope]", "# noqa: GL13"],
)
def test_malformed_or_unknown_noqa_is_not_a_blanket_suppression_and_is_reported(tmp_path, comment):
    write(tmp_path, {"bug.py": BUGGY.rstrip("\n") + f"  {comment}\n"})
    r = gl(["check", "bug.py"], tmp_path)
    assert r.exit_code == 1
    found = [(p[1], p[3]) for p in problems(r.stdout)]
    assert (4, "GL103") in found  # not suppressed
    assert (4, "GL001") in found  # the comment is reported


def test_rule_names_and_valid_codes_in_a_list_still_suppress(tmp_path):
    write(tmp_path, {
        "a.py": BUGGY.rstrip("\n") + "  # noqa: optimizer-moved-like-module\n",
        "b.py": BUGGY.rstrip("\n") + "  # noqa: GL103, GL999\n",  # the valid entry counts, the bad one is reported
    })
    found = sorted((p[0], p[3]) for p in problems(gl(["check", "."], tmp_path).stdout))
    assert found == [("b.py", "GL001")]


def test_unused_noqa_is_opt_in(tmp_path):
    src = (
        "import torch\nx = torch.zeros(2)\n"
        'x = x.to("cpu")  # noqa: GL104\n'  # 3: unused (GL104 ran on the file: line 4)
        'x.to("cpu")  # noqa: GL104\n'  # 4: used
        "y = 1  # noqa\n"  # 5: a blanket noqa: other linters' too, not reported
        "z = 2  # noqa: E501\n"  # 6: another tool's code: not reported
        "w = 3  # gpulint: ignore\n"  # 7: gpulint's own blanket suppression, unused
    )
    write(tmp_path, {"a.py": src})
    assert gl(["check", "a.py"], tmp_path).exit_code == 0  # off by default
    r = gl(["check", "--extend-select", "GL002", "a.py"], tmp_path)
    assert [(p[1], p[3]) for p in problems(r.stdout)] == [(3, "GL002"), (7, "GL002")]
    assert "GL104" in r.stdout and "blanket" in r.stdout
    # a used one is not reported
    write(tmp_path, {"b.py": MOVE.rstrip("\n") + "  # noqa: GL104\n"})
    assert gl(["check", "--extend-select", "GL002", "b.py"], tmp_path).exit_code == 0


def test_add_noqa(tmp_path):
    src = (
        BUGGY
        + 'x = torch.zeros(2)\nx.to("cpu")  # noqa: E501\n'  # merged into the existing list
        + 's = """\nx.to("cpu")\n"""\n'
    )
    write(tmp_path, {"a.py": src, "ok.py": "x = 1\n"})
    r = gl(["check", "--add-noqa", "."], tmp_path)
    assert r.exit_code == 0
    assert "Added 2 noqa directives." in r.stderr
    new = (tmp_path / "a.py").read_text()
    assert new.splitlines()[3].endswith('.to("cpu")  # noqa: GL103')
    assert new.splitlines()[5] == 'x.to("cpu")  # noqa: E501, GL104'
    assert (tmp_path / "ok.py").read_text() == "x = 1\n"
    # now clean, and a second run adds nothing
    assert gl(["check", "."], tmp_path).exit_code == 0
    r = gl(["check", "--add-noqa", "."], tmp_path)
    assert "Added 0 noqa directives." in r.stderr and (tmp_path / "a.py").read_text() == new


def test_add_noqa_leaves_lines_inside_strings_alone():
    from gpulint.suppression import add_noqa

    text = 'a = 1\ns = """\nline\n"""\nb = 2 + \\\n    3\n'
    new, added, skipped = add_noqa(text, {1: {"GL103"}, 2: {"GL104"}, 3: {"GL104"}, 5: {"GL104"}})
    assert added == 1 and skipped == [2, 3, 5]
    assert new.splitlines()[0] == "a = 1  # noqa: GL103" and new.splitlines()[1:] == text.splitlines()[1:]


def test_files_without_a_directive_are_not_tokenized(monkeypatch):
    import gpulint.suppression as sup_mod

    def boom(*a, **k):
        raise AssertionError("tokenized")

    monkeypatch.setattr(sup_mod.tokenize, "generate_tokens", boom)
    sup = Suppressions("x = 1  # a comment\n# another\ny = '#'\n")
    assert not sup.suppressed(1, "GL103") and not sup.skip_file
    monkeypatch.undo()
    assert Suppressions("x = 1  # noqa\n").suppressed(1, "GL103")


def test_unused_noqa_fix_removes_only_what_is_unused(tmp_path):
    src = (
        "import torch\nx = torch.zeros(2)\n"
        'x = x.to("cpu")  # noqa: GL104\n'  # unused: the comment goes
        'x.to("cpu")  # noqa: GL104\n'  # used: kept (and its move is left alone: suppressed)
        "w = 3  # noqa: GL104, E501\n"  # the unused code goes, the other tool's stays
        "y = 1  # noqa  # why: legacy\n"  # a blanket noqa (other linters' too): untouched
        "v = 2  # noqa: E501 long line\n"  # another tool's, with prose: untouched
    )
    write(tmp_path, {"a.py": src})
    r = gl(["fix", "--extend-select", "GL002", "a.py"], tmp_path)
    assert r.exit_code == 0, r.stdout
    assert (tmp_path / "a.py").read_text() == (
        "import torch\nx = torch.zeros(2)\n"
        'x = x.to("cpu")\n'
        'x.to("cpu")  # noqa: GL104\n'
        "w = 3  # noqa: E501\n"
        "y = 1  # noqa  # why: legacy\n"
        "v = 2  # noqa: E501 long line\n"
    )
