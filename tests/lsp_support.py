"""A small LSP client for tests and benchmarks: `python -m gpulint server` as a subprocess,
JSON-RPC 2.0 with Content-Length framing over its stdin/stdout.

It keeps its own copy of each open document, applies the server's edits to it the way an editor
does (positions in UTF-16 code units, the LSP default), and answers the server's requests
(`workspace/applyEdit` is recorded and answered `applied: true`; others get a null result).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 120.0  # a safety net for a hung server, not a performance expectation


class LspError(Exception):
    pass


def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


def _offset(text: str, line: int, character: int, encoding: str = "utf-16") -> int:
    """A 0-based (line, character in the encoding's code units) position as an offset into `text`."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    units = 0
    pos = start
    while pos < end and text[pos] not in "\r\n" and units < character:
        units += _units(text[pos], encoding)
        pos += 1
    return pos


def apply_text_edits(text: str, edits: list[dict], encoding: str = "utf-16") -> str:
    """Apply LSP TextEdits (all relative to the original text, non-overlapping)."""
    spans = []
    for e in edits:
        r = e["range"]
        a = _offset(text, r["start"]["line"], r["start"]["character"], encoding)
        b = _offset(text, r["end"]["line"], r["end"]["character"], encoding)
        spans.append((a, b, e["newText"]))
    for a, b, new in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:a] + new + text[b:]
    return text


def edits_of(workspace_edit: dict, uri: str) -> list[dict]:
    """The TextEdits a WorkspaceEdit makes to one document (`changes` or `documentChanges`)."""
    if workspace_edit.get("documentChanges"):
        out = []
        for dc in workspace_edit["documentChanges"]:
            if dc["textDocument"]["uri"] == uri:
                out.extend(dc["edits"])
        return out
    return list((workspace_edit.get("changes") or {}).get(uri, []))


class LspClient:
    def __init__(self, cwd: Path | str | None = None, env: dict | None = None, extra_path: list[str] = ()) -> None:
        full_env = dict(os.environ)
        full_env.update(env or {})
        paths = [*extra_path, str(REPO)]
        if full_env.get("PYTHONPATH"):
            paths.append(full_env["PYTHONPATH"])
        full_env["PYTHONPATH"] = os.pathsep.join(paths)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gpulint", "server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd) if cwd else None,
            env=full_env,
        )
        self._id = 0
        self._lock = threading.Condition()
        self._responses: dict[int, dict] = {}
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self.applied_edits: list[dict] = []
        self.docs: dict[str, dict] = {}  # uri -> {"text": str, "version": int}
        self.encoding = "utf-16"  # the position encoding the server chose
        self.notebooks: dict[str, dict] = {}  # uri -> {"version": int, "cells": [(kind, uri)]}
        self.stderr = b""
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._err.start()

    # -- wire ---------------------------------------------------------------------------------

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read_err(self) -> None:
        self.stderr = self.proc.stderr.read()

    def _read_loop(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    with self._lock:
                        self._lock.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode("ascii").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = out.read(int(headers["content-length"]))
            msg = json.loads(body)
            msg["_received"] = time.perf_counter()
            if "method" in msg and "id" in msg:
                self._answer(msg)
            with self._lock:
                if "method" in msg and "id" not in msg:
                    self.notifications.append(msg)
                elif "id" in msg and "method" not in msg:
                    self._responses[msg["id"]] = msg
                self._lock.notify_all()

    def _answer(self, msg: dict) -> None:
        self.server_requests.append(msg)
        result: Any = None
        if msg["method"] == "workspace/applyEdit":
            # recorded, and applied by the test with change(uri, edits=...), which also tells the
            # server (as an editor's didChange after applying an edit does)
            self.applied_edits.append(msg["params"]["edit"])
            result = {"applied": True}
        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    # -- requests -----------------------------------------------------------------------------

    def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        with self._lock:
            self._id += 1
            rid = self._id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._lock:
            while rid not in self._responses:
                if self.proc.poll() is not None and rid not in self._responses:
                    raise LspError(f"server exited ({self.proc.returncode}) during {method}: {self.stderr.decode(errors='replace')}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LspError(f"no answer to {method} within {timeout} s")
                self._lock.wait(min(left, 0.5))
            resp = self._responses.pop(rid)
        if "error" in resp:
            raise LspError(f"{method}: {resp['error']}")
        return resp.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_notification(self, method: str, pred: Callable[[dict], bool] = lambda p: True, timeout: float = TIMEOUT, start: int = 0) -> dict:
        """The params of the first notification `method` (from index `start`) matching `pred`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for msg in self.notifications[start:]:
                    if msg["method"] == method and pred(msg["params"]):
                        return msg["params"] | {"_received": msg["_received"]}
                if self.proc.poll() is not None:
                    raise LspError(f"server exited ({self.proc.returncode}): {self.stderr.decode(errors='replace')}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LspError(f"no {method} within {timeout} s; got {[m['method'] for m in self.notifications]}")
                self._lock.wait(min(left, 0.5))

    def diagnostics(self, uri: str, version: int, timeout: float = TIMEOUT, start: int = 0) -> list[dict]:
        """The diagnostics published for exactly this version of a document (the first such
        publication from notification number `start` on)."""
        params = self.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == uri and p.get("version") == version, timeout, start
        )
        return params["diagnostics"]

    # -- session ------------------------------------------------------------------------------

    def initialize(self, root: Path, capabilities: dict | None = None) -> dict:
        caps = capabilities or {
            "workspace": {
                "applyEdit": True,
                "workspaceEdit": {"documentChanges": True},
                "didChangeWatchedFiles": {"dynamicRegistration": True},
            },
            "textDocument": {
                "publishDiagnostics": {"versionSupport": True},
                "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source", "source.fixAll"]}}},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
            },
        }
        result = self.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": caps, "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]},
        )
        self.encoding = result["capabilities"].get("positionEncoding", "utf-16")
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, version: int = 1, language_id: str = "python") -> str:
        uri = path.as_uri()
        self.docs[uri] = {"text": text, "version": version}
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}})
        return uri

    def change(self, uri: str, text: str | None = None, edits: list[dict] | None = None) -> int:
        """Send a full-text change (text) or incremental changes (edits, applied in order)."""
        doc = self.docs[uri]
        doc["version"] += 1
        if edits is not None:
            changes = []
            new = doc["text"]
            # incremental changes are applied one after another: send the edits from the end of
            # the document backwards so that each one's range is still valid
            for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
                changes.append({"range": e["range"], "text": e["newText"]})
                new = apply_text_edits(new, [e], self.encoding)
            doc["text"] = new
        else:
            doc["text"] = text
            changes = [{"text": text}]
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc["version"]}, "contentChanges": changes})
        return doc["version"]

    # -- notebooks (LSP 3.17 notebook sync) --------------------------------------------------------

    def open_notebook(self, path: Path, cells: list[tuple[str, str]]) -> tuple[str, list[str]]:
        """Open a notebook of ("code" | "markdown", text) cells; returns its URI and the cells'."""
        uri = path.as_uri()
        cell_uris = [f"vscode-notebook-cell:{path.as_posix()}#cell{i}" for i in range(len(cells))]
        self.notebooks[uri] = {"version": 1, "cells": [(kind, u) for (kind, _), u in zip(cells, cell_uris)]}
        docs = []
        for (kind, text), u in zip(cells, cell_uris):
            lang = "python" if kind == "code" else "markdown"
            self.docs[u] = {"text": text, "version": 1}
            docs.append({"uri": u, "languageId": lang, "version": 1, "text": text})
        self.notify(
            "notebookDocument/didOpen",
            {
                "notebookDocument": {
                    "uri": uri,
                    "notebookType": "jupyter-notebook",
                    "version": 1,
                    "cells": [{"kind": 2 if k == "code" else 1, "document": u} for k, u in self.notebooks[uri]["cells"]],
                },
                "cellTextDocuments": docs,
            },
        )
        return uri, cell_uris

    def change_cells(self, uri: str, edits: dict[str, list[dict]]) -> int:
        """Edit cells' texts (cell uri -> TextEdits); returns the notebook's new version."""
        nb = self.notebooks[uri]
        nb["version"] += 1
        content = []
        for cell_uri, cell_edits in edits.items():
            doc = self.docs[cell_uri]
            doc["version"] += 1
            changes = []
            for e in sorted(cell_edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
                changes.append({"range": e["range"], "text": e["newText"]})
                doc["text"] = apply_text_edits(doc["text"], [e], self.encoding)
            content.append({"document": {"uri": cell_uri, "version": doc["version"]}, "changes": changes})
        self.notify(
            "notebookDocument/didChange",
            {"notebookDocument": {"uri": uri, "version": nb["version"]}, "change": {"cells": {"textContent": content}}},
        )
        return nb["version"]

    def remove_cell(self, uri: str, index: int) -> int:
        nb = self.notebooks[uri]
        nb["version"] += 1
        _, cell_uri = nb["cells"].pop(index)
        self.notify(
            "notebookDocument/didChange",
            {
                "notebookDocument": {"uri": uri, "version": nb["version"]},
                "change": {"cells": {"structure": {"array": {"start": index, "deleteCount": 1}, "didClose": [{"uri": cell_uri}]}}},
            },
        )
        return nb["version"]

    def close(self, timeout: float = 60) -> int:
        """shutdown + exit; the server's exit code."""
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
        except (LspError, BrokenPipeError, OSError):
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
