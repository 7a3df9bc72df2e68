"""The LSP wiring (pygls): documents in, diagnostics, code actions and hovers out.

Each document version is analysed once, off the event loop, in one worker thread: a change
schedules an analysis after a short debounce; a newer version makes the older one stale (a stale
analysis that has not started is skipped, one that has finished is not published). Code actions
and hovers read the analysis of the document's current version (waiting for it if needed).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from gpulint import __version__
from gpulint.diagnostics import SAFE
from gpulint.registry import ENGINE_CODE
from gpulint.server import core

log = logging.getLogger("gpulint.server")

FIX_ALL_KIND = "source.fixAll.gpulint"
CMD_FIX_ALL = "gpulint.applyAutofix"
DEBOUNCE_S = 0.01  # a change coalesces with changes arriving within this time


@dataclass
class Snapshot:
    """The analysis of one version of one document."""

    uri: str
    version: int | None
    index: core.TextIndex
    analysis: core.Analysis
    path: Path | None
    lsp_diagnostics: list
    fixed_text: str | None = None
    fixed_done: bool = False


PYTHON_SUFFIXES = (".py", ".pyi")


def is_python(doc) -> bool:
    """Python documents only: a client may send every open document (markdown, TOML...)."""
    if doc.language_id:
        return doc.language_id == "python"
    return doc.uri.lower().endswith(PYTHON_SUFFIXES)


class GpulintLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gpulint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.linter = core.Linter()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulint-analysis")
        self.snapshots: dict[str, Snapshot] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self.latest: dict[str, int | None] = {}

    # -- analysis ---------------------------------------------------------------------------------

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc) or "utf-16")

    def _analyse(self, uri: str, version: int | None, text: str, force: bool) -> Snapshot | None:
        """Runs in the worker thread. Skips versions that became stale while queued."""
        if not force and self.latest.get(uri) != version:
            return None
        path = core.path_of_uri(uri)
        analysis = self.linter.analyse(path, text)
        index = core.TextIndex(text, self.encoding)
        diags = [self._to_lsp(index, analysis, d) for d in analysis.diagnostics]
        return Snapshot(uri, version, index, analysis, path, diags)

    def _to_lsp(self, index: core.TextIndex, analysis: core.Analysis, d) -> types.Diagnostic:
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

    def schedule(self, uri: str, delay: float) -> None:
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_python(doc):
            return
        self.latest[uri] = doc.version
        old = self.tasks.pop(uri, None)
        if old is not None and not old.done():
            old.cancel()
        self.tasks[uri] = asyncio.get_running_loop().create_task(self._run(uri, doc.version, delay))

    async def _run(self, uri: str, version: int | None, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = self.workspace.text_documents.get(uri)
        if doc is None or doc.version != version:
            return
        text = doc.source
        loop = asyncio.get_running_loop()
        snap = await loop.run_in_executor(self.pool, self._analyse, uri, version, text, False)
        if snap is None or self.latest.get(uri) != version or uri not in self.workspace.text_documents:
            return
        self.snapshots[uri] = snap
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=snap.lsp_diagnostics, version=version)
        )

    async def current(self, uri: str) -> Snapshot | None:
        """The analysis of the document's current text (computed now if not yet available)."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or not is_python(doc):
            return None
        snap = self.snapshots.get(uri)
        if snap is not None and snap.version == doc.version and snap.index.text == doc.source:
            return snap
        task = self.tasks.get(uri)
        if task is not None and not task.done() and self.latest.get(uri) == doc.version:
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                pass
            snap = self.snapshots.get(uri)
            if snap is not None and snap.version == doc.version and snap.index.text == doc.source:
                return snap
        loop = asyncio.get_running_loop()
        snap = await loop.run_in_executor(self.pool, self._analyse, uri, doc.version, doc.source, True)
        if snap is not None and self.latest.get(uri) == doc.version:
            self.snapshots[uri] = snap
        return snap

    async def fixed_text(self, snap: Snapshot) -> str | None:
        if not snap.fixed_done:
            loop = asyncio.get_running_loop()
            snap.fixed_text = await loop.run_in_executor(self.pool, self.linter.fix_all, snap.path, snap.analysis)
            snap.fixed_done = True
        return snap.fixed_text

    # -- edits ------------------------------------------------------------------------------------

    def workspace_edit(self, snap: Snapshot, edits: list[core.TextEdit]) -> types.WorkspaceEdit:
        text_edits = [
            types.TextEdit(range=types.Range(types.Position(*a), types.Position(*b)), new_text=new)
            for (a, b), new in edits
        ]
        caps = self.client_capabilities
        ws = caps.workspace if caps is not None else None
        we = ws.workspace_edit if ws is not None else None
        if we is not None and we.document_changes:
            return types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=snap.uri, version=snap.version),
                        edits=text_edits,
                    )
                ]
            )
        return types.WorkspaceEdit(changes={snap.uri: text_edits})


server = GpulintLanguageServer()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: GpulintLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: GpulintLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, DEBOUNCE_S)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: GpulintLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    # the configuration may have changed on disk: analyse again (the config cache checks mtimes)
    ls.schedule(params.text_document.uri, 0)


CONFIG_NAMES = ("pyproject.toml", "gpulint.toml", ".gpulint.toml")


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
        for uri in list(ls.workspace.text_documents):
            ls.snapshots.pop(uri, None)
            ls.schedule(uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: GpulintLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.tasks.pop(uri, None)
    if task is not None and not task.done():
        task.cancel()
    ls.snapshots.pop(uri, None)
    ls.latest.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
        resolve_provider=False,
    ),
)
async def code_action(ls: GpulintLanguageServer, params: types.CodeActionParams):
    snap = await ls.current(params.text_document.uri)
    if snap is None or snap.analysis.excluded:
        return None
    only = params.context.only

    def wanted(kind: str) -> bool:
        if not only:
            return True
        return any(kind == k or kind.startswith(f"{k}.") for k in map(str, (getattr(k, "value", k) for k in only)))

    req = ((params.range.start.line, params.range.start.character), (params.range.end.line, params.range.end.character))
    actions: list[types.CodeAction] = []
    if wanted("quickfix"):
        for d, lsp_d in zip(snap.analysis.diagnostics, snap.lsp_diagnostics):
            rng = ((lsp_d.range.start.line, lsp_d.range.start.character), (lsp_d.range.end.line, lsp_d.range.end.character))
            if not core.overlaps(rng, req):
                continue
            if d.fix is not None:
                safe = d.fix.applicability == SAFE
                title = f"{d.code}: {d.fix.message or 'Apply the fix'}" + ("" if safe else " (unsafe)")
                actions.append(
                    types.CodeAction(
                        title=title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_d],
                        is_preferred=True if safe else None,
                        edit=ls.workspace_edit(snap, core.fix_edits(snap.index, d.fix)),
                    )
                )
            if d.code != ENGINE_CODE:
                edit = core.noqa_edit(snap.index, d)
                if edit is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"{d.code}: Disable for this line (# noqa: {d.code})",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[lsp_d],
                            edit=ls.workspace_edit(snap, [edit]),
                        )
                    )
    if wanted(FIX_ALL_KIND):
        new = await ls.fixed_text(snap)
        if new is not None:
            actions.append(
                types.CodeAction(
                    title="gpulint: Fix all auto-fixable problems",
                    kind=FIX_ALL_KIND,
                    edit=ls.workspace_edit(snap, core.diff_edits(snap.index, new)),
                )
            )
    return actions or None


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: GpulintLanguageServer, params: types.HoverParams):
    snap = await ls.current(params.text_document.uri)
    if snap is None:
        return None
    pos = (params.position.line, params.position.character)
    parts = []
    first = None
    for d, lsp_d in zip(snap.analysis.diagnostics, snap.lsp_diagnostics):
        rng = ((lsp_d.range.start.line, lsp_d.range.start.character), (lsp_d.range.end.line, lsp_d.range.end.character))
        if not (rng[0] <= pos <= rng[1]):
            continue
        first = first or lsp_d.range
        rule = snap.analysis.rule(d.code)
        head = f"**{d.code}** `{d.name}`: {d.message}"
        if rule is None:
            parts.append(head)
            continue
        fix = {"safe": "safe fix", "unsafe": "unsafe fix", "none": "no fix"}.get(rule.fix_safety, rule.fix_safety)
        parts.append(
            f"{head}\n\n*{rule.summary}* ({rule.kind}, {fix})\n\n{rule.explanation.strip()}\n\n"
            f"[{d.code} documentation]({core.docs_url(d.code)})"
        )
    if not parts:
        return None
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)), range=first
    )


@server.command(CMD_FIX_ALL)
async def apply_autofix(ls: GpulintLanguageServer, *args):
    """Apply every applicable fix to a document: arguments [uri] or [{"uri": ...}]."""
    if not args:
        return None
    arg = args[0]
    uri = arg.get("uri") if isinstance(arg, dict) else arg
    if not isinstance(uri, str):
        return None
    snap = await ls.current(uri)
    if snap is None:
        return None
    new = await ls.fixed_text(snap)
    if new is None:
        return {"applied": False, "reason": "nothing to fix"}
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(
            edit=ls.workspace_edit(snap, core.diff_edits(snap.index, new)), label="gpulint: fix all"
        )
    )
    return {"applied": bool(getattr(result, "applied", False))}


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: GpulintLanguageServer, *args) -> None:
    for task in ls.tasks.values():
        task.cancel()
    ls.pool.shutdown(wait=False, cancel_futures=True)


def serve() -> None:
    logging.basicConfig(level=logging.WARNING, format="gpulint server: %(levelname)s: %(message)s")
    server.start_io()
