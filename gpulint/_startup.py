"""A start-up cache: the compiled code of the methods `dataclasses` generates.

Importing LibCST is most of `gpulint check`'s start-up on a small file (~0.13 s), and most of
that is `dataclasses` building LibCST's ~240 frozen node classes: for each class it writes the
source text of `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__` and
compiles it with `exec` (~1,100 calls, ~0.08 s of compiling). gpulint's own dataclasses add ~50
more. The texts are the same on every run, so `compile_cache()` memoizes the compiling: while it
is active, `dataclasses` module's `exec` (a module global, which shadows the builtin) compiles
each distinct text once and keeps the code object, in memory (the frozen classes share their
`__setattr__`/`__delattr__` text) and in a file that the next run loads with `marshal` (what
Python does with a module's `.pyc`). Only the compiling is skipped: `exec` still runs the code
with the same globals and locals, so the classes are the ones `dataclasses` makes without it.

The file is `<user cache dir>/gpulint/dataclasses-<python cache tag>-<bytecode magic>.bin`
(`$XDG_CACHE_HOME`, else `~/.cache`). It is used only when it is this user's and not writable by
others (it holds code), it is written atomically, and any problem with it (missing, unreadable,
another Python, damaged) means compiling as usual. `GPULINT_STARTUP_CACHE=0` turns it off;
`GPULINT_STARTUP_CACHE=<folder>` puts the file in that folder.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sys

_HEADER = b"gpulint-dataclasses-1\n"


def blake2b(data: bytes = b"", **kw):
    """hashlib.blake2b, which is CPython's own `_blake2` module: taken from there, a run that
    hashes only with it does not import hashlib, whose import loads OpenSSL (~2.5 ms)."""
    try:
        from _blake2 import blake2b as new
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b as new
    return new(data, **kw)
# The file keeps the texts of earlier runs too (another command, a project with its own rule
# folder) while they are at most half as many again as this run's; past that (another LibCST
# version's texts, say) only this run's, so that loading it never costs much more than needed.
_KEEP_OTHERS = 0.5


def cache_dir() -> str | None:
    """The folder of gpulint's start-up caches (this file's and the rule manifest of
    gpulint.registry): `$GPULINT_STARTUP_CACHE`, else `<user cache dir>/gpulint`; None when
    they are off (`GPULINT_STARTUP_CACHE=0`) or there is no absolute user cache dir."""
    setting = os.environ.get("GPULINT_STARTUP_CACHE", "")
    if setting.strip().lower() in ("0", "off", "false", "no"):
        return None
    if setting:
        return os.path.expanduser(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None
    return os.path.join(base, "gpulint")


def _cache_file() -> str | None:
    folder = cache_dir()
    if folder is None:
        return None
    import importlib.util

    tag = sys.implementation.cache_tag
    if not tag:  # pragma: no cover - an implementation without bytecode caching
        return None
    return os.path.join(folder, f"dataclasses-{tag}-{importlib.util.MAGIC_NUMBER.hex()}.bin")


def read_private(path: str) -> bytes | None:
    """The bytes of a cache file, or None when it is missing, unreadable, or not this user's
    alone (owned by someone else, or writable by others)."""
    try:
        with open(path, "rb") as fh:
            if hasattr(os, "getuid"):
                st = os.fstat(fh.fileno())
                if st.st_uid != os.getuid() or st.st_mode & 0o022:
                    return None
            return fh.read()
    except OSError:
        return None


def write_private(path: str, data: bytes, prefix: str) -> None:
    """Write a cache file atomically in a folder only this user can enter; a cache that cannot
    be written is not an error."""
    import tempfile

    try:
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass


def _load(path: str) -> dict:
    import marshal

    try:
        data = read_private(path)  # None: code that someone else could have written is not run
        if data is None or not data.startswith(_HEADER):
            return {}
        codes = marshal.loads(data[len(_HEADER):])
    except Exception:  # noqa: BLE001 - a missing or damaged cache is an empty one
        return {}
    code_type = type(_load.__code__)
    if not isinstance(codes, dict) or not all(
        type(k) is str and type(v) is code_type for k, v in codes.items()
    ):
        return {}
    return codes


def _save(path: str, codes: dict) -> None:
    import marshal

    try:
        data = _HEADER + marshal.dumps(codes)
    except ValueError:  # pragma: no cover - nothing unmarshallable is kept
        return
    write_private(path, data, ".dataclasses-")


class _CompileCache:
    def __init__(self, codes: dict) -> None:
        self.codes = codes
        self.used: set[str] = set()
        self.new = 0

    def exec(self, source, globals=None, locals=None, /):  # exec's own signature
        if globals is None:  # exec's defaults are its caller's namespaces, not this frame's
            frame = sys._getframe(1)
            globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
        if type(source) is str:
            code = self.codes.get(source)
            if code is None:
                # as `exec(text)` in dataclasses would: no __future__ flags inherited from here
                code = self.codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
                self.new += 1
            self.used.add(source)
            source = code
        return builtins.exec(source, globals, locals)  # noqa: S102 - the code dataclasses asked to run


@contextlib.contextmanager
def compile_cache():
    """Memoize the compiling `dataclasses` does while the block runs (see the module's
    docstring); the file is updated at the end when a text was new."""
    import dataclasses

    path = _cache_file()
    if "exec" in vars(dataclasses):  # someone else's hook, or a dataclasses that does its own
        yield
        return
    cache = _CompileCache(_load(path) if path else {})
    dataclasses.exec = cache.exec
    try:
        yield
    finally:
        if vars(dataclasses).get("exec") == cache.exec:
            del dataclasses.exec
        if path and cache.new:
            codes = cache.codes
            if len(codes) > len(cache.used) * (1 + _KEEP_OTHERS):
                codes = {k: v for k, v in codes.items() if k in cache.used}
            _save(path, codes)


# ---------------------------------------------------------------------------------------------
# The cyclic garbage collector during start-up
# ---------------------------------------------------------------------------------------------
#
# Importing LibCST, the engine and the rules makes a few hundred thousand long-lived objects
# (classes, functions, their dicts) and almost no cyclic garbage, yet with Python's default
# thresholds the collector runs hundreds of times while they are made, its full passes walking
# all of them again (~6 % of a check run on one script). `pause_gc()` switches it off while a
# check/fix run of the `gpulint` program starts; `resume_gc()` (the engine calls it before the
# first file is analysed, the program at the end of the run) moves what exists by then into the
# permanent generation (`gc.freeze()`: the first file's passes do not walk them again) and
# switches the collector back on; `thaw_gc()` (once the first file is analysed) gives them back
# to the collector. Only collection timing changes, no result.

_GC_PAUSED = False


def pause_gc() -> None:
    global _GC_PAUSED
    import gc

    if gc.isenabled():
        gc.disable()
        _GC_PAUSED = True


def resume_gc() -> None:
    """Undo `pause_gc()` (nothing when it did not switch the collector off)."""
    global _GC_PAUSED
    if not _GC_PAUSED:
        return
    import gc

    _GC_PAUSED = False
    gc.freeze()
    gc.enable()
    _GC_FROZEN[0] = True


_GC_FROZEN = [False]


def thaw_gc() -> None:
    """Put the objects `resume_gc()` froze back under the collector (the engine calls it when the
    first file's analysis is over): while they are frozen, garbage cycles that pass through one
    of them are not collected, and a run over many files would keep growing."""
    if _GC_FROZEN[0]:
        import gc

        _GC_FROZEN[0] = False
        gc.unfreeze()


# ---------------------------------------------------------------------------------------------
# LibCST without the parts a check run does not use
# ---------------------------------------------------------------------------------------------
#
# `import libcst` runs the package's __init__, which imports all of LibCST: the node classes, the
# parser and the visitors (what gpulint uses), and also the metadata providers, the helpers and
# the batched visitors (about a third of the import, which a check run uses only for the rare
# file where the AMP analysis resolves scopes). `lazy_libcst()` makes `import libcst` give the
# package with the former loaded and the names they define in it; the first use of any other
# name of the package (`cst.MetadataWrapper`, `from libcst import ensure_type`) runs the real
# __init__ in it, which imports the rest, so that the package then is what `import libcst` makes.
# Importing one of its public subpackages (libcst.metadata, libcst.matchers...) should come after
# `complete_libcst()` (gpulint's own code and the loading of user rule folders do so): their
# modules may import from the package while it is still incomplete.
#
# The parser's Python entry points (`libcst._parser.entrypoints`, with the configuration classes
# and the pure-Python tokenizer `detect_config` imports: ~7 ms of start-up) are not loaded either:
# for a text, `cst.parse_module(text)` is the native parser's `parse_module(text, "utf-8")` (what
# `_parse` does for a str with the default configuration), and the incomplete package's
# `parse_module` is that call; any other argument (bytes, a configuration) completes the package
# and calls LibCST's own. The first use of another name those modules define (a subpackage such as
# libcst.metadata imports some while the package is incomplete) loads them as the core modules
# are loaded, and the package's `parse_module` becomes LibCST's own.

_LIBCST_CORE = (
    "libcst._exceptions",
    "libcst._maybe_sentinel",
    "libcst._removal_sentinel",
    "libcst._flatten_sentinel",
    "libcst._visitors",
    "libcst._nodes.base",
    "libcst._nodes.whitespace",
    "libcst._nodes.op",
    "libcst._nodes.expression",
    "libcst._nodes.statement",
    "libcst._nodes.module",
)
_LIBCST_PARSER = (  # loaded on first use (see above)
    "libcst._parser.types.config",
    "libcst._parser.entrypoints",
)
_LAZY: dict = {}  # "package": the incomplete package, "spec": its spec


def lazy_libcst() -> None:
    """Import LibCST's node classes, parser and visitors, not the rest of it (see above). Does
    nothing when LibCST is imported already or GPULINT_LAZY_LIBCST=0; on any problem it leaves
    nothing behind, and the first `import libcst` imports all of it as usual."""
    if "libcst" in sys.modules or os.environ.get("GPULINT_LAZY_LIBCST", "").strip() == "0":
        return
    import importlib.util

    before = set(sys.modules)
    added: set[str] = set()
    try:
        spec = importlib.util.find_spec("libcst")
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return
        package = importlib.util.module_from_spec(spec)
        sys.modules["libcst"] = package
        _load_into(package, _LIBCST_CORE, added)
    except Exception:  # noqa: BLE001 - another LibCST layout: import it the usual way
        for name in set(sys.modules) - before:
            del sys.modules[name]
        return
    _LAZY["package"], _LAZY["spec"], _LAZY["added"] = package, spec, added
    package.__getattr__ = _libcst_getattr
    package.parse_module = _parse_module  # replaced by LibCST's own when the package is completed
    # what importlib leaves on the spec of a module it has loaded: without it, every import of
    # the package looks for `__spec__._initializing`, and the AttributeError it creates and drops
    # cost ~5 % of a check run (LibCST's native parser imports `libcst` once per node it builds)
    spec._initializing = False


def _load_into(package, names, added: set) -> None:
    for name in names:
        __import__(name)  # (not importlib.import_module: `python -X importtime` shows these)
        module = sys.modules[name]
        # what the module defines, as the package exports it (later core modules import
        # some of it from the package: `from libcst import CSTLogicError`)
        for key, value in vars(module).items():
            if not key.startswith("_") and getattr(value, "__module__", None) == name and key not in package.__dict__:
                package.__dict__[key] = value
                added.add(key)


def _load_parser(package) -> None:
    """Load the parser's Python entry points into the incomplete package (see above)."""
    if _LAZY.get("parser"):
        return
    _LAZY["parser"] = True
    if package.__dict__.get("parse_module") is _parse_module:
        del package.__dict__["parse_module"]
    _load_into(package, _LIBCST_PARSER, _LAZY["added"])


def _parse_module(source, config=None):
    """`libcst.parse_module` of the incomplete package (see above)."""
    if config is None and type(source) is str:
        from libcst import native

        return native.parse_module(source, encoding="utf-8")
    complete_libcst()
    import libcst

    if config is None:
        return libcst.parse_module(source)
    return libcst.parse_module(source, config)


def _libcst_getattr(name: str):
    """The incomplete package's module __getattr__ (PEP 562): its parser's native module is
    imported on its own, and the names of the parser's Python entry points by loading those; any
    other name completes the package."""
    package = _LAZY.get("package")
    if package is None:  # pragma: no cover - completed meanwhile
        raise AttributeError(name)
    if name == "native":  # `from libcst import native`, in parse_module
        __import__("libcst.native")
        return sys.modules["libcst.native"]
    if name.startswith("__") and name.endswith("__") and name != "__all__":
        raise AttributeError(f"module 'libcst' has no attribute {name!r}")
    if not _LAZY.get("parser"):
        _load_parser(package)
        if name in package.__dict__:
            return package.__dict__[name]
    complete_libcst()
    try:
        return package.__dict__[name]
    except KeyError:
        raise AttributeError(f"module 'libcst' has no attribute {name!r}") from None


def complete_libcst() -> None:
    """Run LibCST's own __init__ in the package `lazy_libcst` made (nothing when it did not)."""
    package = _LAZY.pop("package", None)
    if package is None:
        return
    spec, added = _LAZY.pop("spec"), _LAZY.pop("added")
    _LAZY.pop("parser", None)
    package.__dict__.pop("__getattr__", None)
    spec.loader.exec_module(package)
    # the names of the core modules that the package does not export (CSTCodegenError...) go:
    # the package is now what `import libcst` makes
    exported = set(getattr(package, "__all__", ()))
    for key in added - exported:
        package.__dict__.pop(key, None)
