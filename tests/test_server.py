"""`gpulint server` end to end: a real LSP session with `python -m gpulint server` over stdio.

The expected findings come from reading the snippets (tests/cli_support.py): in BOTH, GL103 is
the call `torch.optim.SGD(...).to("cpu")` on line 4 from column 7 to the end of the line, and
GL104 the statement `x.to("cpu")` on line 6. LSP positions are 0-based.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pygls")

from cli_support import BOTH, BUGGY, BUGGY_FIXED, MOVE, TEST_RULES, write
from lsp_support import LspClient, apply_text_edits, edits_of

L4 = BOTH.splitlines()[3]
GL103_RANGE = {"start": {"line": 3, "character": 6}, "end": {"line": 3, "character": len(L4)}}
GL104_RANGE = {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": len('x.to("cpu")')}}
BOTH_FIXED = BUGGY_FIXED + 'x = torch.zeros(2)\nx = x.to("cpu")\n'


@pytest.fixture
def session(tmp_path):
    clients = []

    def start(root: Path = tmp_path, **kw) -> LspClient:
        c = LspClient(cwd=root, **kw)
        clients.append(c)
        c.initialize(root)
        return c

    yield start
    for c in clients:
        c.kill()


def codes(diags):
    return [d["code"] for d in diags]


def code_actions(client, uri, rng, only=None, diagnostics=()):
    ctx = {"diagnostics": list(diagnostics)}
    if only:
        ctx["only"] = only
    return client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": ctx}) or []


def test_session_end_to_end(session, tmp_path):
    # a fake torch that leaves a mark if anything imports it, and a document that leaves one
    # if it is ever run: the server must do neither
    marks = tmp_path / "marks"
    marks.mkdir()
    write(tmp_path / "fake", {"torch/__init__.py": f"open({str(marks / 'torch')!r}, 'w').close()\n"})
    text = f"open({str(marks / 'ran')!r}, 'w').close()\n" + BUGGY
    proj = tmp_path / "proj"
    proj.mkdir()
    client = session(proj, extra_path=[str(tmp_path / "fake")])
    uri = client.open(proj / "train.py", BUGGY)

    # didOpen -> the GL103 diagnostic at its exact range
    diags = client.diagnostics(uri, 1)
    assert codes(diags) == ["GL103"]
    d = diags[0]
    assert d["range"] == GL103_RANGE
    assert d["severity"] == 1  # GL103 is a crash: Error
    assert d["source"] == "gpulint"
    assert d["codeDescription"]["href"].endswith("docs/rules.md#gl103")

    # didChange (full text) re-publishes for the new version
    v = client.change(uri, BOTH)
    diags = client.diagnostics(uri, v)
    assert codes(diags) == ["GL103", "GL104"]
    assert diags[1]["range"] == GL104_RANGE

    # the quick fix for GL103: a WorkspaceEdit that, applied, makes GL103 go away
    actions = code_actions(client, uri, GL103_RANGE, diagnostics=[diags[0]])
    fixes = [a for a in actions if a["kind"] == "quickfix" and a.get("isPreferred")]
    assert len(fixes) == 1 and fixes[0]["title"].startswith("GL103")
    assert "(unsafe)" not in fixes[0]["title"]
    edits = edits_of(fixes[0]["edit"], uri)
    assert apply_text_edits(BOTH, edits) == BUGGY_FIXED + 'x = torch.zeros(2)\nx.to("cpu")\n'
    v = client.change(uri, edits=edits)  # sent as incremental changes, as an editor does
    diags = client.diagnostics(uri, v)
    assert codes(diags) == ["GL104"]
    assert diags[0]["range"] == GL104_RANGE

    # hover on the GL104 diagnostic: the rule's explanation and a link to its documentation
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 3}})
    value = hover["contents"]["value"]
    assert "GL104" in value and "tensor-move-discarded" in value
    assert "not\nin place" in value or "not in place" in value  # from the rule's explanation
    assert "docs/rules.md#gl104" in value
    nothing = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}})
    assert nothing is None

    # executeCommand fix-all: the server asks the client to apply the edit (workspace/applyEdit)
    result = client.request("workspace/executeCommand", {"command": "gpulint.applyAutofix", "arguments": [uri]})
    assert result == {"applied": True}
    assert len(client.applied_edits) == 1
    edits = edits_of(client.applied_edits[0], uri)
    v = client.change(uri, edits=edits)
    assert client.docs[uri]["text"] == BUGGY_FIXED + 'x = torch.zeros(2)\nx = x.to("cpu")\n'
    assert client.diagnostics(uri, v) == []

    # a document whose first line would leave a mark if it were executed
    other = client.open(proj / "other.py", text)
    assert codes(client.diagnostics(other, 1)) == ["GL103"]

    # didClose clears the document's diagnostics
    client.notify("textDocument/didClose", {"textDocument": {"uri": other}})
    cleared = client.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == other and p.get("version") is None
    )
    assert cleared["diagnostics"] == []

    assert client.close() == 0
    assert not (marks / "torch").exists(), "the server imported torch"
    assert not (marks / "ran").exists(), "the server ran the document"
    assert b"Traceback" not in client.stderr, client.stderr.decode()


def test_severity_follows_the_rule_kind(session, tmp_path):
    # GL205 (a deprecation: kind "future") is a warning; GL103 (a crash) an error
    client = session()
    text = BUGGY + "scaler = torch.cuda.amp.GradScaler()\n"
    uri = client.open(tmp_path / "t.py", text)
    diags = client.diagnostics(uri, 1)
    assert [(d["code"], d["severity"]) for d in diags] == [("GL103", 1), ("GL205", 2)]
    assert client.close() == 0


def test_syntax_error_is_a_gl000_diagnostic(session, tmp_path):
    client = session()
    uri = client.open(tmp_path / "broken.py", "import torch\n\ndef f(:\n    pass\n")
    diags = client.diagnostics(uri, 1)
    assert codes(diags) == ["GL000"]
    assert diags[0]["severity"] == 1
    assert "syntax error" in diags[0]["message"]
    assert diags[0]["range"]["start"]["line"] == 2
    # no quick fix or hover breaks on it, and the server goes on: fixing the text clears it
    assert code_actions(client, uri, diags[0]["range"]) == []
    v = client.change(uri, "import torch\n\ndef f(x):\n    pass\n")
    assert client.diagnostics(uri, v) == []
    assert client.close() == 0


def test_nasty_documents_do_not_stop_the_server(session, tmp_path):
    client = session()
    deep = client.open(tmp_path / "deep.py", "x = " + "(" * 5000 + ")" * 5000 + "\n")
    nul = client.open(tmp_path / "nul.py", "import torch\nx = 1\x00\n")
    crlf = client.open(tmp_path / "crlf.py", BOTH.replace("\n", "\r\n"))
    assert codes(client.diagnostics(deep, 1)) == ["GL000"]
    assert codes(client.diagnostics(nul, 1)) == ["GL000"]
    diags = client.diagnostics(crlf, 1)  # CRLF line ends: the same positions as with LF
    assert codes(diags) == ["GL103", "GL104"] and diags[0]["range"] == GL103_RANGE and diags[1]["range"] == GL104_RANGE
    assert client.close() == 0


def test_closest_config_is_honoured(session, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.gpulint]\n",
            "quiet/gpulint.toml": 'ignore = ["GL103"]\n',
            "quiet/train.py": BOTH,
            "loud/train.py": BOTH,
        },
    )
    client = session()
    quiet = client.open(tmp_path / "quiet" / "train.py", BOTH)
    loud = client.open(tmp_path / "loud" / "train.py", BOTH)
    assert codes(client.diagnostics(quiet, 1)) == ["GL104"]
    assert codes(client.diagnostics(loud, 1)) == ["GL103", "GL104"]
    # the server asked to watch configuration files; a change of one re-analyses open documents
    regs = [r for r in client.server_requests if r["method"] == "client/registerCapability"]
    assert regs and regs[0]["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles"
    config = tmp_path / "quiet" / "gpulint.toml"
    config.write_text('ignore = ["GL104"]\n', encoding="utf-8")
    mark = len(client.notifications)
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": config.as_uri(), "type": 2}]})
    assert codes(client.diagnostics(quiet, 1, start=mark)) == ["GL103"]
    assert codes(client.diagnostics(loud, 1, start=mark)) == ["GL103", "GL104"]
    # without a file watcher, an edited config is still picked up on the next change
    config.write_text('ignore = ["GL103", "GL104"]\n', encoding="utf-8")
    v = client.change(quiet, BOTH + "\n")
    assert client.diagnostics(quiet, v) == []
    # a broken config is a GL000 diagnostic (the CLI exits 2), not a dead server
    (tmp_path / "quiet" / "gpulint.toml").write_text('ignore = ["GL103"\n', encoding="utf-8")
    v = client.change(quiet, BOTH)
    diags = client.diagnostics(quiet, v)
    assert codes(diags) == ["GL000"] and "configuration error" in diags[0]["message"]
    # a save analyses the document again: the repaired config is read
    config.write_text('ignore = ["GL103"]\n', encoding="utf-8")
    mark = len(client.notifications)
    client.notify("textDocument/didSave", {"textDocument": {"uri": quiet}})
    assert codes(client.diagnostics(quiet, v, start=mark)) == ["GL104"]
    assert client.close() == 0


def test_excluded_document_gets_no_diagnostics(session, tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nextend-exclude = ["generated"]\n'})
    client = session()
    excluded = client.open(tmp_path / "generated" / "train.py", BOTH)
    included = client.open(tmp_path / "src" / "train.py", BOTH)
    assert client.diagnostics(excluded, 1) == []
    assert codes(client.diagnostics(included, 1)) == ["GL103", "GL104"]
    assert client.close() == 0


def test_only_python_documents_are_analysed(session, tmp_path):
    client = session()
    md = client.open(tmp_path / "README.md", "# Title\n\n" + BOTH, language_id="markdown")
    py = client.open(tmp_path / "t.py", BOTH)
    # analyses run one after another in the order the documents were opened: by the time the
    # Python document's diagnostics arrive, the markdown document's would have been published
    assert codes(client.diagnostics(py, 1)) == ["GL103", "GL104"]
    assert [n for n in client.notifications if n["params"].get("uri") == md] == []
    assert client.request("textDocument/hover", {"textDocument": {"uri": md}, "position": {"line": 5, "character": 8}}) is None
    assert client.close() == 0


def test_unsafe_fix_is_labelled_and_left_out_of_fix_all(session, tmp_path):
    write(tmp_path, {"gpulint.toml": 'rule-dirs = ["myrules"]\nextend-select = ["TST001"]\n', "myrules/tst.py": TEST_RULES})
    client = session()
    text = MOVE + "print(x)\n"
    uri = client.open(tmp_path / "t.py", text)
    diags = client.diagnostics(uri, 1)
    assert codes(diags) == ["GL104", "TST001"]
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 4, "character": 0}}
    actions = code_actions(client, uri, whole)
    unsafe = [a for a in actions if a["title"].startswith("TST001") and "noqa" not in a["title"]]
    assert len(unsafe) == 1
    assert unsafe[0]["title"].endswith("(unsafe)") and not unsafe[0].get("isPreferred")
    assert apply_text_edits(text, edits_of(unsafe[0]["edit"], uri)) == MOVE + "log(x)\n"

    # listed with the quick fixes, fix-all is a command (this client cannot resolve edits)
    listed = [a for a in actions if a["kind"] == "source.fixAll.gpulint"]
    assert len(listed) == 1 and "edit" not in listed[0]
    assert listed[0]["command"]["command"] == "gpulint.applyAutofix" and listed[0]["command"]["arguments"] == [uri]

    only_fix_all = code_actions(client, uri, whole, only=["source.fixAll"])
    assert [a["kind"] for a in only_fix_all] == ["source.fixAll.gpulint"]
    fixed = apply_text_edits(text, edits_of(only_fix_all[0]["edit"], uri))
    assert fixed == 'import torch\nx = torch.zeros(2)\nx = x.to("cpu")\nprint(x)\n'  # safe fixes only
    # `only: quickfix` leaves the source action out
    assert all(a["kind"] == "quickfix" for a in code_actions(client, uri, whole, only=["quickfix"]))
    assert client.close() == 0


def test_rule_dirs_only_from_the_workspace_configuration(session, tmp_path):
    # a repository opened from elsewhere names a rule folder: its Python must not be imported
    mark = tmp_path / "imported"
    other = tmp_path / "elsewhere"
    write(
        other,
        {
            "gpulint.toml": 'rule-dirs = ["myrules"]\n',
            "myrules/evil.py": f"open({str(mark)!r}, 'w').close()\n" + TEST_RULES,
            "train.py": BOTH,
        },
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    client = session(ws)
    uri = client.open(other / "train.py", BOTH)
    assert codes(client.diagnostics(uri, 1)) == ["GL103", "GL104"]  # the built-in rules still run
    assert not mark.exists()
    log = client.wait_notification("window/logMessage", lambda p: "rule-dirs" in p["message"])
    assert "ignored" in log["message"]
    # selecting a rule of that folder is then an unknown selector, reported as such
    (other / "gpulint.toml").write_text('rule-dirs = ["myrules"]\nextend-select = ["TST001"]\n', encoding="utf-8")
    v = client.change(uri, BOTH + "print(1)\n")
    diags = client.diagnostics(uri, v)
    assert codes(diags) == ["GL000"] and "TST001" in diags[0]["message"] and "rule-dirs" in diags[0]["message"]
    assert not mark.exists()
    assert client.close() == 0


def test_fix_all_is_resolved_lazily_when_the_client_can(tmp_path):
    client = LspClient(cwd=tmp_path)
    try:
        client.initialize(
            tmp_path,
            {
                "workspace": {"workspaceEdit": {"documentChanges": True}},
                "textDocument": {"codeAction": {"dataSupport": True, "resolveSupport": {"properties": ["edit"]}}},
            },
        )
        uri = client.open(tmp_path / "t.py", BOTH)
        client.diagnostics(uri, 1)
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": 6, "character": 0}}
        actions = code_actions(client, uri, whole)
        fix_all = [a for a in actions if a["kind"] == "source.fixAll.gpulint"]
        assert len(fix_all) == 1 and "edit" not in fix_all[0] and "command" not in fix_all[0]
        resolved = client.request("codeAction/resolve", fix_all[0])
        assert apply_text_edits(BOTH, edits_of(resolved["edit"], uri)) == BOTH_FIXED
        assert client.close() == 0
    finally:
        client.kill()


def test_noqa_action_suppresses_the_diagnostic(session, tmp_path):
    client = session()
    uri = client.open(tmp_path / "t.py", BOTH)
    diags = client.diagnostics(uri, 1)
    gl104 = diags[1]
    actions = code_actions(client, uri, gl104["range"], diagnostics=[gl104])
    noqa = [a for a in actions if "noqa" in a["title"]]
    assert [a["title"] for a in noqa] == ["GL104: Disable for this line (# noqa: GL104)"]
    edits = edits_of(noqa[0]["edit"], uri)
    assert apply_text_edits(BOTH, edits).splitlines()[5] == 'x.to("cpu")  # noqa: GL104'
    v = client.change(uri, edits=edits)
    assert codes(client.diagnostics(uri, v)) == ["GL103"]
    assert client.close() == 0


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
def test_positions_in_the_negotiated_encoding(session, tmp_path, encoding):
    # a character outside the BMP before the finding: one Python character, two UTF-16 code
    # units, four UTF-8 bytes
    client = LspClient(cwd=tmp_path)
    try:
        caps = {"general": {"positionEncodings": [encoding]}} if encoding != "utf-16" else {}
        result = client.initialize(tmp_path, caps or None)
        assert result["capabilities"]["positionEncoding"] == encoding
        _check_positions(client, tmp_path, {"utf-16": 1, "utf-8": 3}[encoding])
    finally:
        client.kill()


def _check_positions(client, tmp_path, extra_units):
    text = BUGGY.replace("model = torch", "# 🙂\nmodel = torch").replace('opt = ', 'opt = ( "🙂" and ')
    text = text.rstrip("\n") + ")\n"
    uri = client.open(tmp_path / "t.py", text)
    diags = client.diagnostics(uri, 1)
    assert codes(diags) == ["GL103"]
    line = text.splitlines()[4]
    col = line.index("torch.optim")
    assert diags[0]["range"]["start"] == {"line": 4, "character": col + extra_units}
    actions = code_actions(client, uri, diags[0]["range"], diagnostics=diags)
    fix = next(a for a in actions if a.get("isPreferred"))
    fixed = apply_text_edits(text, edits_of(fix["edit"], uri), client.encoding)
    assert '.to("cpu")' not in fixed and fixed.count("🙂") == 2
    v = client.change(uri, edits=edits_of(fix["edit"], uri))  # the server reads them in the same units
    assert client.diagnostics(uri, v) == []
    assert client.docs[uri]["text"] == fixed
    assert client.close() == 0


NVIM_SCRIPT = r"""
local out = io.open(OUT, "w")
local function emit(s) out:write(s .. "\n") out:flush() end
vim.cmd("edit " .. DOC)
local buf = vim.api.nvim_get_current_buf()
local config = { name = "gpulint", cmd = CMD, cmd_env = { PYTHONPATH = PYPATH }, root_dir = ROOT }
if vim.lsp.start ~= nil then
  vim.lsp.start(config)
else  -- Neovim 0.7: no vim.lsp.start
  vim.lsp.buf_attach_client(buf, vim.lsp.start_client(config))
end
local function show(label)
  vim.wait(500)
  emit("== " .. label)
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    emit(string.format("%s %d:%d-%d:%d %d", tostring(d.code), d.lnum, d.col, d.end_lnum, d.end_col, d.severity))
  end
end
vim.wait(60000, function() return #vim.diagnostic.get(buf) == 2 end, 50)
show("open")
local uri = vim.uri_from_bufnr(buf)
local res = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", {
  textDocument = { uri = uri },
  range = { start = { line = 3, character = 10 }, ["end"] = { line = 3, character = 10 } },
  context = { diagnostics = {} },
}, 60000)
for _, r in pairs(res or {}) do
  for _, a in ipairs(r.result or {}) do
    if a.isPreferred then vim.lsp.util.apply_workspace_edit(a.edit, "utf-16") end
  end
end
vim.wait(60000, function() return #vim.diagnostic.get(buf) == 1 end, 50)
show("quickfix")
local hov = vim.lsp.buf_request_sync(buf, "textDocument/hover", { textDocument = { uri = uri }, position = { line = 5, character = 2 } }, 60000)
for _, r in pairs(hov or {}) do emit("hover " .. vim.split(r.result.contents.value, "\n")[1]) end
vim.lsp.buf_request_sync(buf, "workspace/executeCommand", { command = "gpulint.applyAutofix", arguments = { uri } }, 60000)
vim.wait(60000, function() return #vim.diagnostic.get(buf) == 0 end, 50)
show("fixall")
emit("== buffer")
for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do emit(l) end
out:close()
vim.cmd("qa!")
"""


def test_neovim_client(tmp_path):
    """Neovim's own LSP client, headless, when `nvim` is installed (the README's editor check)."""
    import json
    import shutil
    import subprocess
    import sys

    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed")
    doc = tmp_path / "train.py"
    doc.write_text(BOTH, encoding="utf-8")
    out = tmp_path / "out.txt"
    header = "".join(
        f"local {name} = {json.dumps(value)}\n"
        for name, value in {
            "OUT": str(out),
            "DOC": str(doc),
            "ROOT": str(tmp_path),
            "PYPATH": str(Path(__file__).resolve().parents[1]),
        }.items()
    ) + f"local CMD = {{ {json.dumps(sys.executable)}, '-m', 'gpulint', 'server' }}\n"
    script = tmp_path / "check.lua"
    script.write_text(header + NVIM_SCRIPT, encoding="utf-8")
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-c", f"luafile {script}"], cwd=tmp_path, capture_output=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    lines = out.read_text(encoding="utf-8").splitlines()
    sections, current = {}, None
    for line in lines:
        if line.startswith("== "):
            current = sections.setdefault(line[3:], [])
        elif line.startswith("hover "):
            sections["hover"] = [line[6:]]
        else:
            current.append(line)
    assert sections["open"] == [f"GL103 3:6-3:{len(L4)} 1", "GL104 5:0-5:11 1"]
    assert sections["quickfix"] == ["GL104 5:0-5:11 1"]
    assert sections["hover"][0].startswith("**GL104**")
    assert sections["fixall"] == []
    assert "\n".join(sections["buffer"]) + "\n" == BOTH_FIXED


def test_notebook_cells(session, tmp_path):
    """A notebook is one script (a tensor made in one cell and moved in another is one flow);
    diagnostics, quick fixes and fix-all are per cell; IPython lines are left alone."""
    client = session()
    cells = [
        ("code", "%matplotlib inline\nimport torch\n"),
        ("markdown", "# Training\nx.to('cpu') is not code here\n"),
        ("code", 'model = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1).to("cpu")\nx = torch.zeros(2)\n'),
        ("code", '!nvidia-smi\nx.to("cpu")'),
    ]
    nb, (a, md, c, d) = client.open_notebook(tmp_path / "train.ipynb", cells)
    got = {u: client.diagnostics(u, 1) for u in (a, c, d)}
    assert got[a] == []
    assert codes(got[c]) == ["GL103"]
    line = cells[2][1].splitlines()[1]
    assert got[c][0]["range"] == {"start": {"line": 1, "character": 6}, "end": {"line": 1, "character": len(line)}}
    assert codes(got[d]) == ["GL104"]
    assert got[d][0]["range"] == {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 11}}
    assert [n for n in client.notifications if n["params"].get("uri") == md] == []

    # hover in a cell
    hover = client.request("textDocument/hover", {"textDocument": {"uri": d}, "position": {"line": 1, "character": 3}})
    assert "GL104" in hover["contents"]["value"]

    # the GL103 quick fix edits that cell only; applied, the cell's diagnostic goes away
    actions = code_actions(client, c, got[c][0]["range"])
    fix = next(x for x in actions if x.get("isPreferred"))
    assert [dc["textDocument"]["uri"] for dc in fix["edit"]["documentChanges"]] == [c]
    mark = len(client.notifications)
    client.change_cells(nb, {c: edits_of(fix["edit"], c)})
    assert client.diagnostics(c, 2, start=mark) == []
    assert codes(client.diagnostics(d, 1, start=mark)) == ["GL104"]

    # fix-all through the command: the shell escape in the cell is kept
    assert client.request("workspace/executeCommand", {"command": "gpulint.applyAutofix", "arguments": [nb]}) == {"applied": True}
    edit = client.applied_edits[-1]
    assert [dc["textDocument"]["uri"] for dc in edit["documentChanges"]] == [d]
    mark = len(client.notifications)
    client.change_cells(nb, {d: edits_of(edit, d)})
    assert client.docs[d]["text"] == '!nvidia-smi\nx = x.to("cpu")'
    assert client.diagnostics(d, 2, start=mark) == []

    # a removed cell loses its diagnostics; the others are analysed without it
    client.change_cells(nb, {d: [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 15}}, "newText": 'x.to("cpu")'}]})
    assert codes(client.diagnostics(d, 3)) == ["GL104"]
    mark = len(client.notifications)
    client.remove_cell(nb, 3)
    cleared = client.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == d and p.get("version") is None, start=mark)
    assert cleared["diagnostics"] == []
    assert client.close() == 0


def test_rapid_changes_publish_in_order_and_end_on_the_last_version(session, tmp_path):
    client = session()
    uri = client.open(tmp_path / "t.py", BUGGY)
    client.diagnostics(uri, 1)
    mark = len(client.notifications)
    # typing: ten versions in a row, alternately with and without the GL104 statement
    for i in range(10):
        v = client.change(uri, BOTH if i % 2 == 0 else BUGGY)
    assert v == 11
    final = client.diagnostics(uri, v, start=mark)
    assert codes(final) == ["GL103"]  # version 11 is BUGGY
    published = [n["params"]["version"] for n in client.notifications[mark:] if n["params"].get("uri") == uri]
    assert published == sorted(published) and published[-1] == 11
    assert len(published) == len(set(published))  # each version at most once
    assert client.close() == 0


def test_without_pygls_the_command_says_how_to_install_it(tmp_path):
    import os
    import subprocess
    import sys

    write(tmp_path / "fake", {"pygls/__init__.py": "raise ImportError('No module named pygls')\n"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "fake"), str(Path(__file__).resolve().parents[1])]))
    proc = subprocess.run(
        [sys.executable, "-m", "gpulint", "server"], input=b"", capture_output=True, env=env, cwd=tmp_path, timeout=900
    )
    assert proc.returncode == 2
    assert b"gpulint[server]" in proc.stderr and b"Traceback" not in proc.stderr


def test_thousands_of_short_analyses_in_one_process(tmp_path):
    """The server is one long-lived process analysing small texts over and over. The engine's
    guard thread once read the CPU clock of its analysis thread after that thread could have
    ended (its 512 MiB stack unmapped): a segmentation fault every few hundred short analyses."""
    import os
    import subprocess
    import sys

    script = (
        "from gpulint.engine import guarded\n"
        "for _ in range(3000):\n"
        "    guarded(lambda: len([object() for _ in range(1000)]))\n"
        "print('done')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert proc.stdout.strip() == b"done"
