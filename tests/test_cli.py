"""The command line: exit codes, the text report, rule selection, output options, stdin."""

from __future__ import annotations

import json
import os
import re

import pytest

import gpulint
from cli_support import BOTH, BUGGY, BUGGY_FIXED, CLEAN, MOVE, builtin_codes, gl, gl_proc, problems, rule_pack, write

SUMMARY_RE = re.compile(r"^(Found \d+ problems?.*\.|All checks passed!)$", re.MULTILINE)


# ---------------------------------------------------------------------------------------------
# exit codes and the text report
# ---------------------------------------------------------------------------------------------


def test_version(tmp_path):
    r = gl(["--version"], tmp_path)
    assert r.exit_code == 0
    assert r.stdout.strip() == f"gpulint {gpulint.__version__}"


def test_clean_file_exit_0(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = gl(["check", "ok.py"], tmp_path)
    assert r.exit_code == 0
    assert r.stdout == "All checks passed!\n"


def test_problem_line_format_and_exit_1(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "bug.py"], tmp_path)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("bug.py:4:7: GL103 [*] ")
    assert len(lines[0]) > len("bug.py:4:7: GL103 [*] ") + 10  # a real message follows
    assert lines[-1] == "Found 1 problem (1 fixable with 'gpulint fix')."
    assert len(lines) == 2


def test_default_path_is_current_directory(tmp_path):
    write(tmp_path, {"a/bug.py": BUGGY, "b/ok.py": CLEAN})
    r = gl(["check"], tmp_path)
    assert r.exit_code == 1
    assert problems(r.stdout) == [(os.path.join("a", "bug.py"), 4, 7, "GL103")]


def test_paths_are_relative_to_the_current_directory(tmp_path):
    write(tmp_path, {"pkg/bug.py": BUGGY, "work/.keep": ""})
    # an absolute path is shown relative to cwd
    r = gl(["check", str(tmp_path / "pkg" / "bug.py")], tmp_path)
    assert problems(r.stdout) == [(os.path.join("pkg", "bug.py"), 4, 7, "GL103")]
    # from a sibling directory
    r = gl(["check", "../pkg"], tmp_path / "work")
    assert problems(r.stdout) == [(os.path.join("..", "pkg", "bug.py"), 4, 7, "GL103")]


def test_columns_are_one_based_and_count_characters(tmp_path):
    # a two-byte character before the call: the column counts characters, not bytes
    src = BUGGY.replace("opt = ", "é = 1; opt = ")
    write(tmp_path, {"bug.py": src})
    r = gl(["check", "bug.py"], tmp_path)
    assert problems(r.stdout) == [("bug.py", 4, 14, "GL103")]


def test_summary_counts_several_files_and_problems(tmp_path):
    write(tmp_path, {"a.py": BOTH, "b.py": MOVE, "c.py": CLEAN})
    r = gl(["check", "."], tmp_path)
    assert r.exit_code == 1
    assert [p[3] for p in problems(r.stdout)] == ["GL103", "GL104", "GL104"]
    assert r.stdout.splitlines()[-1] == "Found 3 problems (3 fixable with 'gpulint fix')."


def test_summary_safe_and_unsafe_counts(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": 'aa = 1\nprint(aa)\n'})  # TST002 (safe fix) + TST001 (unsafe fix)
    r = gl(["check", "a.py"], tmp_path)
    assert r.exit_code == 1
    assert r.stdout.splitlines()[-1] == "Found 3 problems (2 fixable with 'gpulint fix', 1 more with --unsafe-fixes)."
    # the unsafe fix is not marked [*] without --unsafe-fixes
    lines = {ln.split()[1]: ln for ln in r.stdout.splitlines()[:-1]}
    assert "[*]" not in lines["TST001"]
    r = gl(["check", "a.py", "--unsafe-fixes"], tmp_path)
    assert r.stdout.splitlines()[-1] == "Found 3 problems (3 fixable with 'gpulint fix')."
    assert all("[*]" in ln for ln in r.stdout.splitlines()[:-1])


def test_summary_only_unsafe_fixes(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "print(1)\n"})
    r = gl(["check", "a.py"], tmp_path)
    assert r.stdout.splitlines()[-1] == "Found 1 problem (1 fixable with 'gpulint fix --unsafe-fixes')."


def test_summary_no_fix(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "nofix = 1\n"})
    r = gl(["check", "a.py"], tmp_path)
    assert r.exit_code == 1
    assert r.stdout.splitlines()[-1] == "Found 1 problem."


@pytest.mark.parametrize(
    "args, needle",
    [
        (["check", "--select", "GL999", "x.py"], "GL999"),
        (["check", "--ignore", "no-such-rule", "x.py"], "no-such-rule"),
        (["check", "--extend-select", "XYZ", "x.py"], "XYZ"),
        (["check", "missing.py"], "missing.py"),
        (["check", "x.py", "missing_dir"], "missing_dir"),
        (["explain", "GL999"], "GL999"),
    ],
)
def test_usage_errors_exit_2_and_name_the_culprit(tmp_path, args, needle):
    write(tmp_path, {"x.py": BUGGY})
    r = gl(args, tmp_path)
    assert r.exit_code == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_unknown_option_exit_2(tmp_path):
    r = gl(["check", "--frobnicate"], tmp_path)
    assert r.exit_code == 2


def test_unknown_config_key_exit_2_real_process(tmp_path):
    write(tmp_path, {"x.py": BUGGY, "pyproject.toml": '[tool.gpulint]\nselect = ["GL103"]\nslect = ["GL104"]\n'})
    p = gl_proc(["check", "x.py"], tmp_path)
    assert p.returncode == 2
    assert b"slect" in p.stderr
    assert b"Traceback" not in p.stderr


def test_missing_path_real_process(tmp_path):
    p = gl_proc(["check", "nope.py"], tmp_path)
    assert p.returncode == 2
    assert b"nope.py" in p.stderr
    assert b"Traceback" not in p.stderr


def test_stdin_combined_with_paths_is_an_error(tmp_path):
    write(tmp_path, {"x.py": CLEAN})
    r = gl(["check", "-", "x.py"], tmp_path, input=CLEAN)
    assert r.exit_code == 2


# ---------------------------------------------------------------------------------------------
# rule selection
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, codes",
    [
        ([], ["GL103", "GL104"]),
        (["--select", "GL103"], ["GL103"]),
        (["--select", "gl104"], ["GL104"]),
        (["--select", "GL1"], ["GL103", "GL104"]),
        (["--select", "GL10"], ["GL103", "GL104"]),
        (["--select", "ALL"], ["GL103", "GL104"]),
        (["--select", "tensor-move-discarded"], ["GL104"]),
        (["--select", "GL103,GL104"], ["GL103", "GL104"]),
        (["--select", "GL103", "--extend-select", "GL104"], ["GL103", "GL104"]),
        (["--ignore", "GL103"], ["GL104"]),
        (["--ignore", "GL1"], []),
        (["--ignore", "optimizer-moved-like-module"], ["GL104"]),
        (["--select", "GL1", "--ignore", "GL104"], ["GL103"]),
    ],
)
def test_select_extend_select_ignore(tmp_path, args, codes):
    write(tmp_path, {"both.py": BOTH})
    r = gl(["check", "both.py", *args], tmp_path)
    assert [p[3] for p in problems(r.stdout)] == codes
    assert r.exit_code == (1 if codes else 0)


def test_cli_select_replaces_config_select_and_extend_select_adds(tmp_path):
    write(tmp_path, {"both.py": BOTH, "pyproject.toml": '[tool.gpulint]\nselect = ["GL103"]\n'})
    assert [p[3] for p in problems(gl(["check", "both.py"], tmp_path).stdout)] == ["GL103"]
    assert [p[3] for p in problems(gl(["check", "both.py", "--select", "GL104"], tmp_path).stdout)] == ["GL104"]
    r = gl(["check", "both.py", "--extend-select", "GL104"], tmp_path)
    assert [p[3] for p in problems(r.stdout)] == ["GL103", "GL104"]


def test_default_off_rule_needs_selecting(tmp_path):
    rule_pack(tmp_path)
    src = (tmp_path / "myrules" / "test_rules.py").read_text()
    (tmp_path / "myrules" / "test_rules.py").write_text(src.replace('    code = "TST005"', '    code = "TST005"\n    default = False'))
    write(tmp_path, {"a.py": "nofix = 1\n"})
    assert gl(["check", "a.py"], tmp_path).exit_code == 0
    r = gl(["check", "a.py", "--extend-select", "TST005"], tmp_path)
    assert [p[3] for p in problems(r.stdout)] == ["TST005"]


# ---------------------------------------------------------------------------------------------
# output options
# ---------------------------------------------------------------------------------------------


def test_statistics(tmp_path):
    write(tmp_path, {"a.py": BOTH, "b.py": MOVE})
    r = gl(["check", ".", "--statistics"], tmp_path)
    assert r.exit_code == 1
    assert problems(r.stdout) == []  # no per-problem lines
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.strip()]
    assert rows[:2] == [
        ["2", "GL104", "[*]", "tensor-move-discarded"],
        ["1", "GL103", "[*]", "optimizer-moved-like-module"],
    ]
    # issue 9: a total line
    assert rows[2][:2] == ["3", "total"]
    assert "3 problems in 2 files, 3 fixable" in r.stdout
    assert len(rows) == 3


def test_statistics_json(tmp_path):
    # issue 9: --statistics is no longer ignored with JSON output
    write(tmp_path, {"a.py": BOTH, "b.py": MOVE})
    r = gl(["check", ".", "--statistics", "--output-format", "json"], tmp_path)
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["total"] == 3 and doc["files"] == 2 and doc["fixable"] == 3
    assert [(x["code"], x["count"], x["fixable"]) for x in doc["rules"]] == [("GL104", 2, 2), ("GL103", 1, 1)]


def test_exit_zero(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "bug.py", "--exit-zero"], tmp_path)
    assert r.exit_code == 0
    assert problems(r.stdout) == [("bug.py", 4, 7, "GL103")]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path, command):
    write(tmp_path, {"bug.py": BUGGY})
    before = (tmp_path / "bug.py").stat()
    r = gl([command, "--diff", "bug.py"], tmp_path)
    assert r.exit_code == 1
    assert (tmp_path / "bug.py").read_text() == BUGGY
    assert (tmp_path / "bug.py").stat().st_mtime_ns == before.st_mtime_ns
    out = r.stdout.splitlines()
    assert out[0] == "--- a/bug.py"
    assert out[1] == "+++ b/bug.py"
    assert out[2].startswith("@@ ")
    assert '-opt = torch.optim.SGD(model.parameters(), lr=0.1).to("cpu")' in out
    assert "+opt = torch.optim.SGD(model.parameters(), lr=0.1)" in out
    assert "Would fix 1 problem." in r.stderr
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".gpulint-")]


def test_diff_without_fixes_exit_0(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = gl(["check", "--diff", "ok.py"], tmp_path)
    assert r.exit_code == 0
    assert r.stdout == ""


def test_show_fixes_check_and_fix(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "--show-fixes", "bug.py"], tmp_path)
    assert "Available fixes:" in r.stdout
    assert re.search(r"bug\.py:4:7: GL103 \(safe\) \S", r.stdout)
    r = gl(["fix", "--show-fixes", "bug.py"], tmp_path)
    assert r.exit_code == 0
    assert "Fixed 1 problem" in r.stdout
    assert "bug.py" in r.stdout and "GL103" in r.stdout
    assert (tmp_path / "bug.py").read_text() == BUGGY_FIXED


def test_fix_applies_safe_fixes_and_reports_the_rest(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "aa = 1\nprint(aa)\n"})
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 1  # the unsafe print fix remains
    assert (tmp_path / "a.py").read_text() == "a = 1\nprint(a)\n"
    assert problems(r.stdout) == [("a.py", 2, 1, "TST001")]
    assert r.stdout.splitlines()[-1] == "Found 3 problems (2 fixed, 1 remaining)."
    r = gl(["fix", "a.py", "--unsafe-fixes"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "a.py").read_text() == "a = 1\nlog(a)\n"


def test_unsafe_fixes_from_config(tmp_path):
    rule_pack(tmp_path, "unsafe-fixes = true\n")
    write(tmp_path, {"a.py": "print(1)\n"})
    r = gl(["fix", "a.py"], tmp_path)
    assert r.exit_code == 0
    assert (tmp_path / "a.py").read_text() == "log(1)\n"


def test_output_file(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "bug.py", "-o", "report.txt"], tmp_path)
    assert r.exit_code == 1
    assert r.stdout == ""
    report = (tmp_path / "report.txt").read_text()
    assert problems(report) == [("bug.py", 4, 7, "GL103")]
    r = gl(["check", "bug.py", "--output-format", "json", "--output-file", "report.json"], tmp_path)
    assert r.stdout == ""
    assert [d["code"] for d in json.loads((tmp_path / "report.json").read_text())] == ["GL103"]


def test_quiet(tmp_path):
    write(tmp_path, {"bug.py": BUGGY, "ok.py": CLEAN})
    r = gl(["check", "-q", "bug.py"], tmp_path)
    assert r.exit_code == 1
    assert problems(r.stdout) == [("bug.py", 4, 7, "GL103")]
    assert not SUMMARY_RE.search(r.stdout)
    r = gl(["check", "--quiet", "ok.py"], tmp_path)
    assert r.exit_code == 0
    assert r.stdout == ""


# ---------------------------------------------------------------------------------------------
# stdin
# ---------------------------------------------------------------------------------------------


def test_check_stdin_with_filename(tmp_path):
    r = gl(["check", "-", "--stdin-filename", "train.py"], tmp_path, input=BUGGY)
    assert r.exit_code == 1
    assert problems(r.stdout) == [("train.py", 4, 7, "GL103")]
    assert not (tmp_path / "train.py").exists()


def test_check_stdin_without_filename(tmp_path):
    r = gl(["check", "-"], tmp_path, input=BUGGY)
    assert problems(r.stdout) == [("-", 4, 7, "GL103")]
    r = gl(["check", "-"], tmp_path, input=CLEAN)
    assert r.exit_code == 0


def test_fix_stdin_prints_the_fixed_code(tmp_path):
    r = gl(["fix", "-", "--stdin-filename", "train.py"], tmp_path, input=BUGGY)
    assert r.exit_code == 0
    assert r.stdout == BUGGY_FIXED
    assert "1 fixed" in r.stderr
    assert not (tmp_path / "train.py").exists()


def test_fix_stdin_unparseable_input_is_echoed_unchanged(tmp_path):
    bad = b"def f(:\n  x = '\xff'\n"
    r = gl(["fix", "-", "--stdin-filename", "bad.py"], tmp_path, input=bad)
    assert r.exit_code == 1
    assert r.stdout_bytes == bad
    assert "GL000" in r.stderr


def test_fix_stdin_keeps_the_declared_encoding(tmp_path):
    src = ('# -*- coding: latin-1 -*-\ns = "café"\n' + MOVE).encode("latin-1")
    r = gl(["fix", "-", "--stdin-filename", "t.py"], tmp_path, input=src)
    assert r.exit_code == 0
    assert r.stdout_bytes == src.replace(b'x.to("cpu")', b'x = x.to("cpu")')


def test_stdin_uses_the_config_of_the_stdin_filename(tmp_path):
    write(tmp_path, {"proj/pyproject.toml": '[tool.gpulint]\nper-file-ignores = {"scripts/*" = ["GL103"]}\n'})
    r = gl(["check", "-", "--stdin-filename", "proj/scripts/t.py"], tmp_path, input=BUGGY)
    assert r.exit_code == 0
    r = gl(["check", "-", "--stdin-filename", "proj/t.py"], tmp_path, input=BUGGY)
    assert r.exit_code == 1


# ---------------------------------------------------------------------------------------------
# rules and explain
# ---------------------------------------------------------------------------------------------


def test_rules_table_lists_every_rule_module(tmp_path):
    r = gl(["rules"], tmp_path)
    assert r.exit_code == 0
    header, *rows = r.stdout.splitlines()
    assert header.split()[:5] == ["code", "name", "fix", "default", "summary"]
    codes = [row.split()[0] for row in rows]
    assert codes == sorted(codes)
    assert set(codes) == builtin_codes()
    row103 = next(row.split() for row in rows if row.startswith("GL103"))
    assert row103[1:4] == ["optimizer-moved-like-module", "safe", "on"]


def test_rules_json(tmp_path):
    r = gl(["rules", "--output-format", "json"], tmp_path)
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert {d["code"] for d in data} == builtin_codes()
    for d in data:
        assert set(d) >= {"code", "name", "fix", "default", "summary"}
        assert d["fix"] in ("safe", "unsafe", "mixed", "none")
        assert isinstance(d["fix_partial"], bool)
        assert isinstance(d["default"], bool)
        assert d["summary"]
    by_code = {d["code"]: d for d in data}
    # GL110's fix is safe (map_location="cpu" for state dicts) or unsafe (the script's device), or absent
    assert (by_code["GL110"]["fix"], by_code["GL110"]["fix_partial"]) == ("mixed", True)
    assert (by_code["GL601"]["fix"], by_code["GL601"]["fix_partial"]) == ("safe", True)


def test_rules_include_user_rule_dirs(tmp_path):
    rule_pack(tmp_path)
    data = json.loads(gl(["rules", "--output-format", "json"], tmp_path).stdout)
    codes = {d["code"] for d in data}
    assert {"TST001", "TST005"} <= codes
    assert builtin_codes() <= codes


@pytest.mark.parametrize("key", ["GL103", "gl103", "optimizer-moved-like-module"])
def test_explain(tmp_path, key):
    r = gl(["explain", key], tmp_path)
    assert r.exit_code == 0
    assert r.stdout.startswith("# GL103 optimizer-moved-like-module\n")
    assert "Bad" in r.stdout and "Good" in r.stdout
    assert "Fix: safe" in r.stdout


def test_help(tmp_path):
    r = gl(["--help"], tmp_path)
    assert r.exit_code == 0
    for cmd in ("check", "fix", "rules", "explain"):
        assert cmd in r.stdout
    r = gl(["check", "--help"], tmp_path)
    for opt in ("--select", "--extend-select", "--ignore", "--output-format", "--output-file", "--statistics",
                "--exit-zero", "--diff", "--show-fixes", "--unsafe-fixes", "--config", "--no-cache",
                "--stdin-filename", "--quiet"):
        assert opt in r.stdout


def test_console_entry_point_module(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    p = gl_proc(["check", "bug.py"], tmp_path)
    assert p.returncode == 1
    assert p.stdout.decode().startswith("bug.py:4:7: GL103 [*] ")


# ---------------------------------------------------------------------------------------------
# issue 9: ruff's fix conventions, click 9
# ---------------------------------------------------------------------------------------------


def test_check_fix_is_fix(tmp_path):
    write(tmp_path, {"a.py": BUGGY, "b.py": BUGGY})
    r1 = gl(["check", "--fix", "a.py"], tmp_path)
    r2 = gl(["fix", "b.py"], tmp_path)
    assert (r1.exit_code, r1.stdout.replace("a.py", "X")) == (r2.exit_code, r2.stdout.replace("b.py", "X"))
    assert (tmp_path / "a.py").read_text() == BUGGY_FIXED
    # fix --no-fix only checks
    write(tmp_path, {"c.py": BUGGY})
    assert gl(["fix", "--no-fix", "c.py"], tmp_path).exit_code == 1
    assert (tmp_path / "c.py").read_text() == BUGGY


def test_fix_only_and_exit_non_zero_on_fix(tmp_path):
    # NoFix (TST005) has no fix: it remains after fixing
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": BUGGY + "nofix = 1\n"})
    r = gl(["check", "--fix-only", "a.py"], tmp_path)
    assert r.exit_code == 0  # the remaining problem neither shown nor failing
    assert problems(r.stdout) == [] and r.stdout.strip() == "Fixed 1 problem."
    assert (tmp_path / "a.py").read_text() == BUGGY_FIXED + "nofix = 1\n"
    write(tmp_path, {"b.py": BUGGY})
    assert gl(["fix", "b.py"], tmp_path).exit_code == 0
    write(tmp_path, {"b.py": BUGGY})
    r = gl(["fix", "--exit-non-zero-on-fix", "b.py"], tmp_path)
    assert r.exit_code == 1 and (tmp_path / "b.py").read_text() == BUGGY_FIXED
    # nothing to fix: 0
    assert gl(["fix", "--exit-non-zero-on-fix", "b.py"], tmp_path).exit_code == 0


def test_fix_stdin_uses_no_click_api_deprecated_for_click_9(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        r = gl(["fix", "-"], tmp_path, input=MOVE)
    assert r.stdout == MOVE.replace('x.to("cpu")', 'x = x.to("cpu")')
    src = (gpulint.__file__.rsplit("/", 1)[0]) + "/cli.py"
    assert "click.get_binary_stream" not in open(src, encoding="utf-8").read()


def test_empty_select_is_a_usage_error(tmp_path):
    # issue 11: `--select ""` ran no rule and passed
    write(tmp_path, {"bug.py": BUGGY})
    p = gl_proc(["check", "--select", "", "bug.py"], tmp_path)
    assert p.returncode == 2 and b"--select" in p.stderr and b"Traceback" not in p.stderr


RANKS = """import os
print("hello from", os.environ["LOCAL_RANK"])
"""


def test_run_rank_prefix_prefixes_each_ranks_lines(tmp_path):
    (tmp_path / "ranks.py").write_text(RANKS)
    p = gl_proc(["run", "--nproc-per-node", "2", "--rank-prefix", "[${role_name}${local_rank}]:", "ranks.py"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.decode().splitlines()) == ["[default0]:hello from 0", "[default1]:hello from 1"]
    plain = gl_proc(["run", "--nproc-per-node", "2", "ranks.py"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert sorted(plain.stdout.decode().splitlines()) == ["hello from 0", "hello from 1"]


def test_run_rank_prefix_needs_nproc_per_node(tmp_path):
    (tmp_path / "ranks.py").write_text(RANKS)
    r = gl(["run", "--rank-prefix", "[${local_rank}]:", "ranks.py"], tmp_path)
    assert r.exit_code == 2
    assert "--rank-prefix needs --nproc-per-node" in r.stderr
