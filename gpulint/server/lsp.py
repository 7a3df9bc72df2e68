"""The LSP wiring (pygls): documents in, diagnostics, code actions and hovers out.

Each document version is analysed once, off the event loop, in one worker thread: a change
schedules an analysis after a short debounce; a newer version makes the older one stale (a stale
analysis that has not started is skipped, one that has finished is not published). Code actions
and hovers read the analysis of the document's current version (waiting for it if needed).

A notebook (LSP 3.17 notebook sync) is analysed as one script made of its Python code cells
(core.join_cells); its diagnostics, fixes and hovers are given per cell.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from gpulint import __version__
from gpulint.diagnostics import SAFE, Diagnostic
from gpulint.registry import ENGINE_CODE
from gpulint.server import core

log = logging.getLogger("gpulint.server")

FIX_ALL_KIND = "source.fixAll.gpulint"
CMD_FIX_ALL = "gpulint.applyAutofix"
DEBOUNCE_S = 0.01  # a change coalesces with changes arriving within this time
PYTHON_SUFFIXES = (".py", ".pyi")
CONFIG_NAMES = ("pyproject.toml", "gpulint.toml", ".gpulint.toml")

Edits = dict  # uri -> list[core.TextEdit]


def is_python(doc) -> bool:
    """Python documents only: a client may send every open document (markdown, TOML...)."""
    if doc.language_id:
        return doc.language_id == "python"
    return doc.uri.lower().endswith(PYTHON_SUFFIXES)


@dataclass
class Entry:
    """One diagnostic as one document (a file or a notebook cell) shows it."""

    diag: Diagnostic  # in the document's coordinates
    lsp: types.Diagnostic
    fix: Edits | None  # the diagnostic's fix as edits per document, None when none applies

    @property
    def range(self) -> core.Range:
        r = self.lsp.range
        return (r.start.line, r.start.character), (r.end.line, r.end.character)


@dataclass
class View:
    uri: str
    version: int | None
    entries: list[Entry]
    noqa_index: core.TextIndex  # the text noqa comments are placed with (same lines as the document)


@dataclass
class Snapshot:
    """The analysis of one version of a text document or a notebook."""

    uri: str
    version: int | None
    text: str  # what was analysed
    analysis: core.Analysis
    path: Path | None
    views: dict[str, View]
    fix_all: Callable[[str], Edits | None]  # fixed text -> edits per document
    versions: dict[str, int | None] = field(default_factory=dict)  # document versions, for edits
    fixed: Edits | None = None
    fixed_done: bool = False


class GpulintLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "gpulint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])],
                save=True,
            ),
        )
        self.linter = core.Linter()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulint-analysis")
        self.snapshots: dict[str, Snapshot] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self.latest: dict[str, int | None] = {}
        self.published_cells: dict[str, set[str]] = {}
        self.warned = 0  # how many of the linter's warnings were sent to the client's log

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc) or "utf-16")

    # -- what is analysed -------------------------------------------------------------------------

    def owner(self, uri: str) -> str:
        """The notebook a cell belongs to, else the document itself."""
        nb = self.workspace.get_notebook_document(cell_uri=uri)
        return nb.uri if nb is not None else uri

    def _inputs(self, uri: str):
        """(version, analysed text, builder) for a document or notebook, or None."""
        nb = self.workspace.get_notebook_document(notebook_uri=uri)
        if nb is not None:
            cells = []
            numbers = []  # each joined cell's 1-based number in the notebook (markdown cells counted)
            for n, cell in enumerate(nb.cells, 1):
                if cell.kind != types.NotebookCellKind.Code:
                    continue
                doc = self.workspace.text_documents.get(cell.document)
                if doc is None or (doc.language_id and doc.language_id != "python"):
                    continue
                cells.append((cell.document, doc.source, doc.version))
                numbers.append(n)
            script, joined = core.join_cells([(u, t) for u, t, _ in cells], self.encoding)
            versions = {u: v for u, _, v in cells}
            return nb.version, script, lambda: self._notebook_snapshot(uri, nb.version, script, joined, versions, numbers)
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_python(doc) or self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return None
        text = doc.source
        return doc.version, text, lambda: self._text_snapshot(uri, doc.version, text)

    # -- analysis (in the worker thread) ----------------------------------------------------------

    def _to_lsp(self, index: core.TextIndex, analysis: core.Analysis, d: Diagnostic) -> types.Diagnostic:
        (sl, sc), (el, ec) = core.diagnostic_range(index, d)
        extra = {}
        if d.code != ENGINE_CODE:
            extra["code_description"] = types.CodeDescription(href=core.docs_url(d.code))
        return types.Diagnostic(
            range=types.Range(types.Position(sl, sc), types.Position(el, ec)),
            message=d.message,
            severity=types.DiagnosticSeverity(core.severity(analysis, d)),
            code=d.code,
            source="gpulint",
            **extra,
        )

    def _text_snapshot(self, uri: str, version: int | None, text: str) -> Snapshot:
        path = core.path_of_uri(uri)
        analysis = self.linter.analyse(path, text)
        index = core.TextIndex(text, self.encoding)
        entries = [
            Entry(d, self._to_lsp(index, analysis, d), {uri: core.fix_edits(index, d.fix)} if d.fix is not None else None)
            for d in analysis.diagnostics
        ]
        return Snapshot(
            uri,
            version,
            text,
            analysis,
            path,
            {uri: View(uri, version, entries, index)},
            lambda new: {uri: core.diff_edits(index, new)},
            {uri: version},
        )

    def _notebook_snapshot(self, uri: str, version: int | None, script: str, cells: list, versions: dict,
                           numbers: list | None = None) -> Snapshot:
        from gpulint.notebook import renumber_cells

        path = core.path_of_uri(uri)
        analysis = self.linter.analyse(path, script)
        views = {c.uri: View(c.uri, versions.get(c.uri), [], core.TextIndex(c.masked, self.encoding)) for c in cells}
        for d in analysis.diagnostics:
            if not cells:
                break
            cell = cells[core.cell_at_line(cells, d.line - 1)]
            local = core.local_diagnostic(cell, d)
            if numbers:  # `code cell #K` in a message: the notebook's number of that cell, as `gpulint check` says
                local = replace(local, message=renumber_cells(local.message, numbers))
            fix = core.cell_fix_edits(cells, d.fix) if d.fix is not None else None
            views[cell.uri].entries.append(Entry(local, self._to_lsp(cell.index, analysis, local), fix))

        def fix_all(new: str) -> Edits | None:
            texts = core.split_fixed(cells, new)
            if not texts:
                return None
            by_uri = {c.uri: c for c in cells}
            return {u: core.diff_edits(by_uri[u].index, t) for u, t in texts.items()}

        return Snapshot(uri, version, script, analysis, path, views, fix_all, dict(versions))

    def _analyse(self, uri: str, version: int | None, build, force: bool) -> Snapshot | None:
        """Runs in the worker thread. Skips versions that became stale while queued."""
        if not force and self.latest.get(uri) != version:
            return None
        return build()

    # -- scheduling (on the event loop) -----------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        uri = self.owner(uri)
        inputs = self._inputs(uri)
        if inputs is None:
            return
        version = inputs[0]
        self.latest[uri] = version
        old = self.tasks.pop(uri, None)
        if old is not None and not old.done():
            old.cancel()
        self.tasks[uri] = asyncio.get_running_loop().create_task(self._run(uri, version, delay))

    async def _run(self, uri: str, version: int | None, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        inputs = self._inputs(uri)
        if inputs is None or inputs[0] != version:
            return
        loop = asyncio.get_running_loop()
        try:
            snap = await loop.run_in_executor(self.pool, self._analyse, uri, version, inputs[2], False)
        except RuntimeError:  # the pool is shut down: the server is exiting
            return
        except Exception:  # a server bug: say so on stderr (the client's log), keep serving
            log.exception("analysis of %s failed", uri)
            return
        if snap is None or self.latest.get(uri) != version:
            return
        self.snapshots[uri] = snap
        self.publish(snap)
        while self.warned < len(self.linter.warnings):
            message = f"gpulint: {self.linter.warnings[self.warned]}"
            self.warned += 1
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=message))

    def publish(self, snap: Snapshot) -> None:
        is_notebook = self.workspace.get_notebook_document(notebook_uri=snap.uri) is not None
        for view in snap.views.values():
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=view.uri, diagnostics=[e.lsp for e in view.entries], version=view.version)
            )
        if is_notebook:
            # cells that are gone (or are no longer Python code) lose their diagnostics
            for gone in self.published_cells.get(snap.uri, set()) - set(snap.views):
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=gone, diagnostics=[]))
            self.published_cells[snap.uri] = set(snap.views)

    async def current(self, uri: str) -> Snapshot | None:
        """The analysis of the current text of a document, or of the notebook a cell is in
        (computed now if not yet available)."""
        uri = self.owner(uri)
        inputs = self._inputs(uri)
        if inputs is None:
            return None
        version, text, build = inputs

        def fresh(snap: Snapshot | None) -> bool:
            return snap is not None and snap.version == version and snap.text == text

        if fresh(self.snapshots.get(uri)):
            return self.snapshots[uri]
        task = self.tasks.get(uri)
        if task is not None and not task.done() and self.latest.get(uri) == version:
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                pass
            if fresh(self.snapshots.get(uri)):
                return self.snapshots[uri]
        loop = asyncio.get_running_loop()
        snap = await loop.run_in_executor(self.pool, self._analyse, uri, version, build, True)
        if snap is not None and self.latest.get(uri) == version:
            self.snapshots[uri] = snap
        return snap

    async def fixed(self, snap: Snapshot) -> Edits | None:
        """Edits applying every applicable fix (cached per snapshot)."""
        if not snap.fixed_done:
            loop = asyncio.get_running_loop()
            new = await loop.run_in_executor(self.pool, self.linter.fix_all, snap.path, snap.analysis)
            snap.fixed = snap.fix_all(new) if new is not None else None
            snap.fixed_done = True
        return snap.fixed

    # -- edits ------------------------------------------------------------------------------------

    def can_resolve_edits(self) -> bool:
        """Whether the client resolves a code action's edit lazily (codeAction/resolve)."""
        caps = self.client_capabilities
        td = caps.text_document if caps is not None else None
        ca = td.code_action if td is not None else None
        rs = ca.resolve_support if ca is not None else None
        return rs is not None and "edit" in (rs.properties or [])

    def workspace_edit(self, snap: Snapshot, edits: Edits) -> types.WorkspaceEdit:
        def text_edits(items):
            return [
                types.TextEdit(range=types.Range(types.Position(*a), types.Position(*b)), new_text=new) for (a, b), new in items
            ]

        caps = self.client_capabilities
        ws = caps.workspace if caps is not None else None
        we = ws.workspace_edit if ws is not None else None
        if we is not None and we.document_changes:
            return types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=snap.versions.get(uri)),
                        edits=text_edits(items),
                    )
                    for uri, items in edits.items()
                ]
            )
        return types.WorkspaceEdit(changes={uri: text_edits(items) for uri, items in edits.items()})


server = GpulintLanguageServer()


# -- documents ----------------------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: GpulintLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: GpulintLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, DEBOUNCE_S)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: GpulintLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    # the configuration may have changed on disk: analyse again (an unchanged text under an
    # unchanged configuration is not parsed again)
    ls.schedule(params.text_document.uri, 0)


def _forget(ls: GpulintLanguageServer, uri: str, published: list[str]) -> None:
    task = ls.tasks.pop(uri, None)
    if task is not None and not task.done():
        task.cancel()
    ls.snapshots.pop(uri, None)
    ls.latest.pop(uri, None)
    for u in published:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=u, diagnostics=[]))


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: GpulintLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    _forget(ls, params.text_document.uri, [params.text_document.uri])


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: GpulintLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, 0)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: GpulintLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, DEBOUNCE_S)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: GpulintLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, 0)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: GpulintLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    cells = ls.published_cells.pop(uri, set()) | {c.uri for c in params.cell_text_documents}
    _forget(ls, uri, sorted(cells))


# -- configuration files ------------------------------------------------------------------------


@server.feature(types.INITIALIZE)
def initialize(ls: GpulintLanguageServer, params: types.InitializeParams) -> None:
    """The workspace root's configuration is the trusted one (it may name rule folders)."""
    root = ls.workspace.root_path
    if root:
        ls.linter.default_root = Path(root)


@server.feature(types.INITIALIZED)
async def initialized(ls: GpulintLanguageServer, params: types.InitializedParams) -> None:
    """Ask the client to report changes of configuration files, when it can."""
    caps = ls.client_capabilities
    ws = caps.workspace if caps is not None else None
    watched = ws.did_change_watched_files if ws is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id="gpulint-config-files",
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
                    )
                ]
            )
        )
    except Exception as exc:  # a client that refuses: configuration is still re-read on each change
        log.info("could not watch configuration files: %s", exc)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: GpulintLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    """A configuration file changed: analyse every open document again."""
    if any(c.uri.rsplit("/", 1)[-1] in CONFIG_NAMES for c in params.changes):
        owners = {ls.owner(uri) for uri in ls.workspace.text_documents} | set(ls.workspace.notebook_documents)
        for uri in owners:
            ls.snapshots.pop(uri, None)
            ls.schedule(uri, 0)


# -- code actions, hover, commands --------------------------------------------------------------


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
        resolve_provider=True,
    ),
)
async def code_action(ls: GpulintLanguageServer, params: types.CodeActionParams):
    uri = params.text_document.uri
    snap = await ls.current(uri)
    if snap is None or snap.analysis.excluded or uri not in snap.views:
        return None
    view = snap.views[uri]
    only = [str(getattr(k, "value", k)) for k in (params.context.only or [])]

    def wanted(kind: str) -> bool:
        return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)

    req = ((params.range.start.line, params.range.start.character), (params.range.end.line, params.range.end.character))
    actions: list[types.CodeAction] = []
    if wanted("quickfix"):
        for e in view.entries:
            if not core.overlaps(e.range, req):
                continue
            d = e.diag
            if e.fix is not None:
                safe = d.fix.applicability == SAFE
                title = f"{d.code}: {d.fix.message or 'Apply the fix'}" + ("" if safe else " (unsafe)")
                actions.append(
                    types.CodeAction(
                        title=title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[e.lsp],
                        is_preferred=True if safe else None,
                        edit=ls.workspace_edit(snap, e.fix),
                    )
                )
            if d.code != ENGINE_CODE:
                edit = core.noqa_edit(view.noqa_index, d)
                if edit is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"{d.code}: Disable for this line (# noqa: {d.code})",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[e.lsp],
                            edit=ls.workspace_edit(snap, {uri: [edit]}),
                        )
                    )
    if wanted(FIX_ALL_KIND) and snap.analysis.resolved is not None and snap.analysis.fixable(snap.analysis.resolved.settings.unsafe_fixes):
        title = "gpulint: Fix all auto-fixable problems"
        if only:
            # asked for by kind (a "fix all" key, on save): the edit itself
            edits = await ls.fixed(snap)
            if edits:
                actions.append(types.CodeAction(title=title, kind=FIX_ALL_KIND, edit=ls.workspace_edit(snap, edits)))
        elif ls.can_resolve_edits():
            # listed with the quick fixes (every cursor move): computed only if chosen, so that
            # it never delays the diagnostics of the next change
            actions.append(types.CodeAction(title=title, kind=FIX_ALL_KIND, data={"uri": uri, "version": snap.version}))
        else:
            actions.append(
                types.CodeAction(
                    title=title, kind=FIX_ALL_KIND, command=types.Command(title=title, command=CMD_FIX_ALL, arguments=[uri])
                )
            )
    return actions or None


@server.feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: GpulintLanguageServer, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    uri = data.get("uri")
    if action.kind != FIX_ALL_KIND or not isinstance(uri, str):
        return action
    snap = await ls.current(uri)
    if snap is not None:
        edits = await ls.fixed(snap)
        if edits:
            action.edit = ls.workspace_edit(snap, edits)
    return action


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: GpulintLanguageServer, params: types.HoverParams):
    uri = params.text_document.uri
    snap = await ls.current(uri)
    if snap is None or uri not in snap.views:
        return None
    pos = (params.position.line, params.position.character)
    parts = []
    first = None
    for e in snap.views[uri].entries:
        start, end = e.range
        if not (start <= pos <= end):
            continue
        d = e.diag
        first = first or e.lsp.range
        rule = snap.analysis.rule(d.code)
        head = f"**{d.code}** `{d.name}`: {d.message}"
        if rule is None:
            parts.append(head)
            continue
        fix = {"safe": "safe fix", "unsafe": "unsafe fix", "mixed": "safe or unsafe fix", "none": "no fix"}.get(rule.fix_safety, rule.fix_safety)
        parts.append(
            f"{head}\n\n*{rule.summary}* ({rule.kind}, {fix})\n\n{rule.explanation.strip()}\n\n"
            f"[{d.code} documentation]({core.docs_url(d.code)})"
        )
    if not parts:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)), range=first)


@server.command(CMD_FIX_ALL)
async def apply_autofix(ls: GpulintLanguageServer, *args):
    """Apply every applicable fix to a document or notebook: arguments [uri] or [{"uri": ...}]."""
    if not args:
        return None
    arg = args[0]
    uri = arg.get("uri") if isinstance(arg, dict) else arg
    if not isinstance(uri, str):
        return None
    snap = await ls.current(uri)
    if snap is None:
        return None
    edits = await ls.fixed(snap)
    if not edits:
        return {"applied": False, "reason": "nothing to fix"}
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=ls.workspace_edit(snap, edits), label="gpulint: fix all")
    )
    return {"applied": bool(getattr(result, "applied", False))}


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: GpulintLanguageServer, *args) -> None:
    for task in ls.tasks.values():
        task.cancel()
    ls.pool.shutdown(wait=False, cancel_futures=True)


def tune_gc() -> None:
    """Fewer cyclic garbage collections: an analysis allocates hundreds of thousands of short-lived
    objects (the LibCST tree, the model), and Python's default thresholds collect every 700
    allocations: about 10 ms of each analysis (15-20% of its CPU time here) goes to the
    collector. The long-lived objects loaded at start are frozen out of the collections."""
    import gc

    import gpulint.engine  # noqa: F401  (the engine's modules, loaded before the freeze)
    import gpulint.model  # noqa: F401

    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def serve() -> None:
    logging.basicConfig(level=logging.WARNING, format="gpulint server: %(levelname)s: %(message)s")
    tune_gc()
    server.start_io()
