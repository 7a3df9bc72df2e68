"""Reporters: text, JSON, SARIF 2.1.0 and GitHub Actions annotations."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from cli_support import BOTH, BUGGY, CLEAN, gl, gl_proc, problems, rule_pack, write
from gpulint import reporters
from gpulint.diagnostics import Diagnostic, Edit, Fix


def diag(path="a.py", line=3, col=5, code="GL103", message="msg", fix=None):
    return Diagnostic(code, "some-name", message, path, line, col, line, col + 4, fix)


# ---------------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------------


def test_text_unit():
    safe = Fix((Edit(0, 1, "x", (1, 1), (1, 2)),), "safe", "m")
    unsafe = Fix((Edit(0, 1, "x", (1, 1), (1, 2)),), "unsafe", "m")
    out = reporters.text([diag(fix=safe), diag(line=4, fix=unsafe), diag(line=5)])
    assert out == "a.py:3:5: GL103 [*] msg\na.py:4:5: GL103 msg\na.py:5:5: GL103 msg\n"
    assert reporters.text([diag(fix=unsafe)], unsafe_fixes=True) == "a.py:3:5: GL103 [*] msg\n"


def test_summary_unit():
    safe = Fix((Edit(0, 1, "x"),), "safe")
    unsafe = Fix((Edit(0, 1, "x"),), "unsafe")
    assert reporters.summary([]) == "All checks passed!\n"
    assert reporters.summary([diag()]) == "Found 1 problem.\n"
    assert reporters.summary([diag(fix=safe), diag(fix=unsafe), diag()]) == (
        "Found 3 problems (1 fixable with 'gpulint fix', 1 more with --unsafe-fixes).\n"
    )
    assert reporters.summary([], fixed=2) == "Found 2 problems (2 fixed, 0 remaining).\n"


def test_statistics_unit():
    safe = Fix((Edit(0, 1, "x"),), "safe")
    ds = [diag(code="GL104", fix=safe), diag(code="GL104"), diag(code="GL103", fix=safe), diag(code="GL104", fix=safe)]
    rows = [ln.split("\t") for ln in reporters.statistics(ds).splitlines()]
    assert rows == [
        ["    3", "GL104", "[-] some-name"],
        ["    1", "GL103", "[*] some-name"],
        ["    4", "total", "4 problems in 1 file, 3 fixable"],
    ]
    assert reporters.statistics([]) == ""


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def test_json_fields(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": BOTH + "nofix = 1\n", "b.py": CLEAN})
    r = gl(["check", "--output-format", "json", "."], tmp_path)
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    text = gl(["check", "."], tmp_path).stdout
    # the same problems, in the same order, as the text report
    assert [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"]) for d in data] == problems(text)
    for d in data:
        assert set(d) == {"code", "name", "message", "filename", "cell", "location", "end_location", "fix", "severity", "url"}
        assert d["cell"] is None  # not a notebook
        assert d["severity"] in ("error", "warning")
        assert d["url"] is None or d["url"].endswith("#" + d["code"].lower())
        assert set(d["location"]) == set(d["end_location"]) == {"row", "column"}
        assert (d["end_location"]["row"], d["end_location"]["column"]) >= (d["location"]["row"], d["location"]["column"])
    by_code = {d["code"]: d for d in data}
    assert by_code["TST005"]["fix"] is None
    assert by_code["TST005"]["name"] == "no-fix"
    g103 = by_code["GL103"]
    assert g103["name"] == "optimizer-moved-like-module"
    assert g103["filename"] == "a.py"
    # the call spans `torch.optim.SGD(...).to("cpu")` on line 4, columns 7..60 (end exclusive)
    assert g103["location"] == {"row": 4, "column": 7}
    assert g103["end_location"] == {"row": 4, "column": 7 + len('torch.optim.SGD(model.parameters(), lr=0.1).to("cpu")')}
    fix = g103["fix"]
    assert fix["applicability"] == "safe"
    assert isinstance(fix["message"], str) and fix["message"]
    assert fix["edits"] == [
        {
            "content": "torch.optim.SGD(model.parameters(), lr=0.1)",
            "location": {"row": 4, "column": 7},
            "end_location": {"row": 4, "column": 60},
        }
    ]


def test_json_clean_is_an_empty_list(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = gl(["check", "--output-format", "json", "ok.py"], tmp_path)
    assert r.exit_code == 0
    assert json.loads(r.stdout) == []


def test_json_engine_error(tmp_path):
    write(tmp_path, {"bad.py": "def f(:\n"})
    data = json.loads(gl(["check", "--output-format", "json", "bad.py"], tmp_path).stdout)
    assert [(d["code"], d["filename"], d["location"], d["fix"]) for d in data] == [
        ("GL000", "bad.py", {"row": 1, "column": 7}, None)
    ]


# ---------------------------------------------------------------------------------------------
# SARIF 2.1.0 (required fields checked by hand: no SARIF schema is available offline)
# ---------------------------------------------------------------------------------------------


def _check_sarif_shape(doc: dict) -> None:
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json") or "sarif" in doc["$schema"]
    assert isinstance(doc["runs"], list) and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpulint"
    assert isinstance(driver["rules"], list)
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["name"]
    for res in run["results"]:
        assert res["ruleId"] in ids
        if "ruleIndex" in res:
            assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"]
        assert res["level"] in ("none", "note", "warning", "error")
        assert len(res["locations"]) >= 1
        phys = res["locations"][0]["physicalLocation"]
        uri = phys["artifactLocation"]["uri"]
        assert not uri.startswith("/") and "\\" not in uri
        region = phys["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])
        assert res["partialFingerprints"] and all(isinstance(v, str) and v for v in res["partialFingerprints"].values())


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_sarif(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, {"src/train.py": BOTH, "src/other.py": BUGGY, "src/bad.py": "def f(:\n"})
    r = gl(["check", "--output-format", "sarif", "."], tmp_path / "src")  # run from a subdirectory
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    _check_sarif_shape(doc)
    run = doc["runs"][0]
    results = run["results"]
    # URIs are relative to the repository root, not to the current directory
    locs = sorted(
        (x["ruleId"], x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         x["locations"][0]["physicalLocation"]["region"]["startLine"],
         x["locations"][0]["physicalLocation"]["region"]["startColumn"])
        for x in results
    )
    assert locs == [
        ("GL000", "src/bad.py", 1, 7),
        ("GL103", "src/other.py", 4, 7),
        ("GL103", "src/train.py", 4, 7),
        ("GL104", "src/train.py", 6, 1),
    ]
    # a URI with a base id resolves against the repository root
    for x in results:
        base = x["locations"][0]["physicalLocation"]["artifactLocation"].get("uriBaseId")
        if base:
            assert run["originalUriBaseIds"][base]["uri"] == tmp_path.resolve().as_uri() + "/"
    # every enabled rule is described, plus GL000 for the engine error
    enabled = {d["code"] for d in json.loads(gl(["rules", "--output-format", "json"], tmp_path).stdout) if d["default"]}
    assert {x["id"] for x in run["tool"]["driver"]["rules"]} == enabled | {"GL000"}
    # fingerprints are stable across runs and distinct between results
    again = json.loads(gl(["check", "--output-format", "sarif", "."], tmp_path / "src").stdout)
    fps = [x["partialFingerprints"] for x in results]
    assert fps == [x["partialFingerprints"] for x in again["runs"][0]["results"]]
    assert len({json.dumps(f, sort_keys=True) for f in fps}) == len(fps)


def test_sarif_lists_only_the_selected_rules_and_no_results_when_clean(tmp_path):
    write(tmp_path, {"ok.py": CLEAN})
    r = gl(["check", "--output-format", "sarif", "--select", "GL103", "ok.py"], tmp_path)
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    _check_sarif_shape(doc)
    assert [x["id"] for x in doc["runs"][0]["tool"]["driver"]["rules"]] == ["GL103"]
    assert doc["runs"][0]["results"] == []


def test_sarif_fingerprint_survives_a_line_shift(tmp_path):
    write(tmp_path, {"a.py": BUGGY})
    first = json.loads(gl(["check", "--output-format", "sarif", "a.py"], tmp_path).stdout)
    write(tmp_path, {"a.py": "# a new comment line\n" + BUGGY})
    second = json.loads(gl(["check", "--output-format", "sarif", "a.py"], tmp_path).stdout)
    r1, r2 = first["runs"][0]["results"][0], second["runs"][0]["results"][0]
    assert r2["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert r1["partialFingerprints"] == r2["partialFingerprints"]


# ---------------------------------------------------------------------------------------------
# GitHub Actions annotations
# ---------------------------------------------------------------------------------------------


def test_github_format(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "--output-format", "github", "bug.py"], tmp_path)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 1
    m = re.match(r"^::error (?P<props>[^:]*)::(?P<msg>.*)$", lines[0])
    assert m, lines[0]
    props = dict(p.split("=", 1) for p in m["props"].split(","))
    assert props["file"] == "bug.py"
    assert props["line"] == "4" and props["col"] == "7"
    assert props["title"] == "gpulint (GL103)"
    assert m["msg"].startswith("GL103 ")


def test_github_escaping_unit():
    d = diag(path="odd:dir,x/a%b.py", message="100% wrong,\r\nreally: yes")
    out = reporters.github([d])
    assert out.endswith("\n") and out.count("\n") == 1
    head, sep, data = out.rstrip("\n").partition("::GL103 ")
    # data: % and CR/LF escaped; ':' and ',' allowed
    assert data == "100%25 wrong,%0D%0Areally: yes"
    # properties: additionally ':' and ','
    assert "file=odd%3Adir%2Cx/a%25b.py," in head
    props = head[len("::error "):].split(",")
    assert [p.split("=", 1)[0] for p in props] == ["file", "line", "col", "endLine", "endColumn", "title"]


def test_github_escaping_end_to_end(tmp_path):
    rule_pack(tmp_path)
    write(tmp_path, {"a.py": "nofix = 1\n"})
    out = gl(["check", "--output-format", "github", "a.py"], tmp_path).stdout
    assert out == (
        "::error file=a.py,line=1,col=1,endLine=1,endColumn=6,title=gpulint (TST005)::"
        "TST005 nofix: 100%25 wrong,%0Areally\n"
    )


def test_render_dispatch():
    ds = [diag()]
    assert reporters.render("text", ds, []) == reporters.text(ds)
    assert json.loads(reporters.render("json", ds, []))[0]["code"] == "GL103"
    assert reporters.render("github", ds, []).startswith("::error ")
    assert json.loads(reporters.render("sarif", [], []))["version"] == "2.1.0"


def test_output_formats_via_output_file_match_stdout(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    for fmt in ("text", "json", "sarif", "github"):
        out = gl(["check", "--output-format", fmt, "bug.py"], tmp_path).stdout
        gl(["check", "--output-format", fmt, "-o", f"r.{fmt}", "bug.py"], tmp_path)
        assert (tmp_path / f"r.{fmt}").read_text() == out, fmt
        os.remove(tmp_path / f"r.{fmt}")


# ---------------------------------------------------------------------------------------------
# issue 9: severity per rule kind, repository-relative annotations, the full format, -o folders
# ---------------------------------------------------------------------------------------------

# GL103 is a crash rule (an error); GL205 a deprecation (a warning). Both lines are read by eye:
# GL103 at 4:7 (BUGGY), GL205 on the `torch.cuda.amp.GradScaler()` call at 5:10.
AMP = BUGGY + "scaler = torch.cuda.amp.GradScaler()\n"


def test_severity_from_the_rule_kind_in_sarif_json_and_github(tmp_path):
    from gpulint.registry import Registry

    reg = Registry.load()
    assert reg.by_code("GL103").kind == "crash" and reg.by_code("GL205").kind == "future"
    write(tmp_path, {"a.py": AMP})
    doc = json.loads(gl(["check", "--output-format", "sarif", "a.py"], tmp_path).stdout)
    levels = {r["ruleId"]: r["level"] for r in doc["runs"][0]["results"]}
    assert levels == {"GL103": "error", "GL205": "warning"}
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["GL205"]["defaultConfiguration"]["level"] == "warning"
    assert rules["GL103"]["defaultConfiguration"]["level"] == "error"
    assert rules["GL103"]["helpUri"].endswith("docs/rules.md#gl103")
    data = json.loads(gl(["check", "--output-format", "json", "a.py"], tmp_path).stdout)
    assert {d["code"]: d["severity"] for d in data} == {"GL103": "error", "GL205": "warning"}
    gh = gl(["check", "--output-format", "github", "a.py"], tmp_path).stdout.splitlines()
    assert [ln.split(" ", 1)[0] for ln in gh] == ["::error", "::warning"]


def test_severity_unit():
    from gpulint.reporters import severity_of

    assert [severity_of(k) for k in ("crash", "silent", "slow", "future")] == ["error", "error", "warning", "warning"]


def test_github_paths_are_relative_to_the_repository_root(tmp_path):
    # the root is the nearest folder with a `.git` (found without running git), not the cwd
    write(tmp_path, {"repo/.git/HEAD": "ref: refs/heads/main\n", "repo/src/pkg/bug.py": BUGGY})
    out = gl(["check", "--output-format", "github", "bug.py"], tmp_path / "repo" / "src" / "pkg").stdout
    props = dict(p.split("=", 1) for p in out.split("::")[1].split(" ", 1)[1].split(","))
    assert props["file"] == "src/pkg/bug.py"
    # outside any repository: relative to the current directory, as before
    write(tmp_path, {"norepo/bug.py": BUGGY})
    out = gl(["check", "--output-format", "github", "bug.py"], tmp_path / "norepo").stdout
    assert "file=bug.py," in out


def test_full_format_shows_the_source_line_a_caret_and_the_docs_link(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "--output-format", "full", "bug.py"], tmp_path)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("bug.py:4:7: GL103 [*] ")
    call = 'torch.optim.SGD(model.parameters(), lr=0.1).to("cpu")'
    assert lines[2] == '4 | opt = ' + call
    caret = lines[3]
    assert caret.index("^") == lines[2].index("torch") and caret.count("^") == len(call)
    assert lines[4].strip() == f"= docs: {reporters.rule_url('GL103')}"
    assert "\x1b[" not in r.stdout  # not a terminal: no colour
    assert lines[-1].startswith("Found 1 problem")


def test_full_format_colour_only_when_asked(tmp_path):
    write(tmp_path, {"bug.py": BUGGY})
    from gpulint.diagnostics import Diagnostic

    d = Diagnostic("GL103", "x", "msg", str(tmp_path / "bug.py"), 4, 7, 4, 10)
    assert "\x1b[" in reporters.full([d], color=True)
    assert "\x1b[" not in reporters.full([d], color=False)


def test_default_format_is_full_on_a_terminal_and_text_otherwise(tmp_path, monkeypatch):
    from gpulint import cli as cli_mod

    write(tmp_path, {"bug.py": BUGGY})
    assert "4 | opt" not in gl(["check", "bug.py"], tmp_path).stdout
    monkeypatch.setattr(cli_mod, "_is_terminal", lambda: True)
    monkeypatch.setenv("NO_COLOR", "1")
    out = gl(["check", "bug.py"], tmp_path).stdout
    assert "4 | opt" in out and "\x1b[" not in out
    monkeypatch.delenv("NO_COLOR")
    assert "\x1b[" in gl(["check", "bug.py"], tmp_path).stdout
    # a report written to a file is never coloured and stays one line per problem
    gl(["check", "bug.py", "-o", "r.txt"], tmp_path)
    assert (tmp_path / "r.txt").read_text().startswith("bug.py:4:7: GL103")


def test_output_file_creates_its_folders(tmp_path):
    # issue 9: `-o` into a missing directory was a traceback after all the work
    write(tmp_path, {"bug.py": BUGGY})
    r = gl(["check", "--output-format", "sarif", "-o", "out/reports/g.sarif", "bug.py"], tmp_path)
    assert r.exit_code == 1
    assert json.loads((tmp_path / "out" / "reports" / "g.sarif").read_text())["version"] == "2.1.0"
    # a path that cannot be created is an exit-2 message, not a traceback
    write(tmp_path, {"afile": "x"})
    p = gl_proc(["check", "-o", "afile/sub/r.txt", "bug.py"], tmp_path)
    assert p.returncode == 2 and b"cannot write the report" in p.stderr and b"Traceback" not in p.stderr


def test_sarif_uris_are_percent_encoded(tmp_path):
    name = "my file#1%.py"
    write(tmp_path, {name: BUGGY})
    doc = json.loads(gl(["check", "--output-format", "sarif", name], tmp_path).stdout)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "my%20file%231%25.py"


def test_non_utf8_file_name_in_every_format(tmp_path):
    (tmp_path / os.fsdecode(b"\xff.py")).write_text(BUGGY)
    for fmt in ("text", "full", "json", "sarif", "github"):
        p = gl_proc(["check", "--no-cache", "--output-format", fmt, "."], tmp_path)
        assert p.returncode == 1 and b"Traceback" not in p.stderr, (fmt, p.stderr[-500:])
    doc = json.loads(gl_proc(["check", "--no-cache", "--output-format", "sarif", "."], tmp_path).stdout)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "%FF.py"
