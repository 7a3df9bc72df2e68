"""`gpulint server`: the Language Server (LSP over stdio) for editors.

Needs the optional extra `gpulint[server]` (pygls). `core` holds what does not depend on the LSP
library (configuration, analysis, positions, edits); `lsp` is the pygls wiring.
"""

from __future__ import annotations


class MissingDependency(Exception):
    """pygls/lsprotocol are not installed."""


def serve() -> None:
    """Run the server on stdin/stdout until the client says exit."""
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        raise MissingDependency(
            f"`gpulint server` needs pygls ({exc}); install it with: pip install 'gpulint[server]'"
        ) from exc
    from gpulint.server.lsp import serve as _serve

    _serve()
