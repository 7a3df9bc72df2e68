"""Finding and loading rules, and resolving rule selectors.

Built-in rules live in the top-level `rules/` folder of the source tree (installed into the
wheel as `gpulint/_builtin_rules/`). A user's own rule folders (config `rule-dirs`) are loaded the
same way: every `*.py` file not starting with `_` is imported by path and its `Rule` subclasses
with a `code` are registered.

The `gpulint` program's check/fix runs (`Registry.load(lazy=True)`) import only the built-in
rules a file needs: what selecting and prefiltering read of a rule (code, name, default,
prefilter, ast_prefilter) comes from a manifest of the built-in folder, and the rule's module is
imported when it first checks a file (see `LazyRule`). The manifest is
`<start-up cache dir>/rules-<python cache tag>-<folder hash>.bin` (gpulint._startup.cache_dir),
made by importing every rule the usual way; it is used only when it is this user's alone, has the
same format, gpulint version and folder, and the same stamps (size, modification and change
times, inode) of every file of the rule folder and of the gpulint package as now, and is
rebuilt otherwise. A rule whose module, once imported, does not say what the manifest said is
reported (a warning) and the manifest removed. Rule folders of a project (`rule-dirs`) are always
imported whole.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from gpulint.rule import Rule, iter_rules

CODE_RE = re.compile(r"^[A-Z]+[0-9]+$")
ENGINE_CODE = "GL000"  # files that cannot be read or parsed; always reported


class RuleError(Exception):
    """A rule folder or a selector is wrong (exit 2)."""


def builtin_rules_dir() -> Path:
    pkg = Path(__file__).resolve().parent
    installed = pkg / "_builtin_rules"
    if installed.is_dir():
        return installed
    return pkg.parent / "rules"


def _load_folder(folder: Path) -> list[type[Rule]]:
    if not folder.is_dir():
        raise RuleError(f"rule folder not found: {folder}")
    modbase = _module_name(folder)
    found: list[type[Rule]] = []
    for file in sorted(folder.glob("*.py")):
        if file.name.startswith("_"):
            continue
        modname = f"{modbase}.{file.stem}"
        module = _import_rule_file(folder, file, modname)
        found.extend(r for r in iter_rules(vars(module).values()) if r.__module__ == modname)
    return found


def _import_rule_file(folder: Path, file: Path, modname: str):
    module = sys.modules.get(modname)
    if module is None:
        spec = importlib.util.spec_from_file_location(modname, file)
        if spec is None or spec.loader is None:
            raise RuleError(f"cannot load rule file {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # a broken user rule is a usage error, not a traceback
            del sys.modules[modname]
            raise RuleError(f"cannot load rule file {file}: {type(exc).__name__}: {exc}") from exc
    return module


def _module_name(folder: Path, resolved: str | None = None) -> str:
    from gpulint._startup import blake2b

    resolved = resolved or str(folder.resolve())
    return "_gpulint_rules_" + blake2b(resolved.encode(), digest_size=5).hexdigest()


# ---------------------------------------------------------------------------------------------
# The manifest of the built-in rules (see the module's docstring)
# ---------------------------------------------------------------------------------------------

_MANIFEST_HEADER = b"gpulint-rules-1\n"
# what the registry and the engine read of a rule before it checks a file
# (and the reporters: kind gives a finding's severity)
MANIFEST_FIELDS = ("code", "name", "default", "kind", "prefilter", "ast_prefilter")


def _stamps(folder: str, out: list, depth: int = 0) -> None:
    """(relative path, size, mtime, ctime, inode) of every file under folder, sorted by name
    (__pycache__ folders left out)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        out.append((folder, -1))
        return
    for e in entries:
        if e.name == "__pycache__":
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                if depth < 3:
                    _stamps(e.path, out, depth + 1)
                continue
            st = e.stat()
        except OSError:
            out.append((e.path, -1))
            continue
        out.append((e.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))


def _manifest_key(folder: str) -> tuple:
    """What the manifest must have been made from: gpulint's version, the folder, and the stamps
    of the folder's files and of the gpulint package's files."""
    from gpulint import __version__

    stamps: list = []
    _stamps(folder, stamps)
    _stamps(os.path.dirname(os.path.abspath(__file__)), stamps)
    return (__version__, sys.implementation.cache_tag, folder, tuple(stamps))


def _manifest_path(folder: str) -> str | None:
    from gpulint._startup import blake2b, cache_dir

    base = cache_dir()
    if base is None or not sys.implementation.cache_tag:
        return None
    tag = blake2b(folder.encode(), digest_size=8).hexdigest()
    return os.path.join(base, f"rules-{sys.implementation.cache_tag}-{tag}.bin")


def _entry(rule: type[Rule]) -> tuple:
    return tuple(getattr(rule, f, None) for f in MANIFEST_FIELDS)


def _valid_entry(entry: object) -> bool:
    if not (isinstance(entry, tuple) and len(entry) == len(MANIFEST_FIELDS)):
        return False
    code, name, default, kind, prefilter, ast_prefilter = entry
    return (
        type(code) is str
        and type(name) is str
        and type(default) is bool
        and type(kind) is str
        and (prefilter is None or type(prefilter) is str)
        and (
            ast_prefilter is None
            or type(ast_prefilter) is str
            or (type(ast_prefilter) is tuple and all(type(x) is str for x in ast_prefilter))
        )
    )


def _read_manifest(path: str, key: tuple) -> list | None:
    """[(file name, ((class name, entry), ...)), ...] when the file holds a manifest made with
    this key, else None."""
    import marshal

    from gpulint._startup import read_private

    data = read_private(path)
    if data is None or not data.startswith(_MANIFEST_HEADER):
        return None
    try:
        got = marshal.loads(data[len(_MANIFEST_HEADER):])
    except Exception:  # noqa: BLE001 - a damaged manifest is none
        return None
    if not (isinstance(got, tuple) and len(got) == 2 and got[0] == key and isinstance(got[1], tuple)):
        return None
    files = got[1]
    for item in files:
        if not (isinstance(item, tuple) and len(item) == 2 and type(item[0]) is str and isinstance(item[1], tuple)):
            return None
        for rule in item[1]:
            if not (isinstance(rule, tuple) and len(rule) == 2 and type(rule[0]) is str and _valid_entry(rule[1])):
                return None
    return list(files)


def _write_manifest(path: str, key: tuple, files: list) -> None:
    import marshal

    from gpulint._startup import write_private

    try:
        data = _MANIFEST_HEADER + marshal.dumps((key, tuple(files)))
    except ValueError:  # a rule attribute marshal cannot write: no manifest
        return
    write_private(path, data, ".rules-")
    _remove_orphans(os.path.dirname(path), path)


def _remove_orphans(folder: str, keep: str) -> None:
    """Remove the manifests of rule folders that no longer exist (a benchmark's or a test's
    temporary copy), so that they do not pile up; only when a manifest is written."""
    import marshal

    from gpulint._startup import read_private

    try:
        names = [n for n in os.listdir(folder) if n.startswith("rules-") and n.endswith(".bin")]
    except OSError:
        return
    for name in names:
        other = os.path.join(folder, name)
        if other == keep:
            continue
        data = read_private(other)
        try:
            key = marshal.loads(data[len(_MANIFEST_HEADER):])[0] if data and data.startswith(_MANIFEST_HEADER) else None
            where = key[2] if isinstance(key, tuple) and len(key) > 2 and type(key[2]) is str else None
        except Exception:  # noqa: BLE001 - not a manifest of ours: left alone
            continue
        if where is not None and not os.path.isdir(where):
            try:
                os.unlink(other)
            except OSError:
                pass


def _remove_manifest(folder: Path) -> None:
    path = _manifest_path(str(folder))
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


class _LazyRuleType(type):
    """The type of a LazyRule class: an attribute the manifest does not give (summary,
    explanation, message...) is the real rule's, which imports its module."""

    def __getattr__(cls, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(cls.real(), name)

    def __repr__(cls) -> str:
        return f"<lazy rule {cls.__dict__.get('code')} {cls.__qualname__}>"


class LazyRule(metaclass=_LazyRuleType):
    """A built-in rule known from the manifest: its class attributes are the manifest's fields,
    an instance checks a file by importing the rule's module (once) and handing the file to an
    instance of the real rule (which is then `ctx.rule`, so its findings and fixes are the real
    rule's). Anything else asked of it is asked of the real rule."""

    _gl_file: str
    _gl_modname: str
    _gl_folder: Path
    _gl_expected: tuple
    _gl_real = None
    _gl_instance = None

    @classmethod
    def real(cls) -> type[Rule]:
        real = cls.__dict__.get("_gl_real")
        if real is None:
            real = _materialize(cls)
            cls._gl_real = real
        return real

    def instance(self) -> Rule:
        inst = self.__dict__.get("_gl_instance")
        if inst is None:
            inst = self._gl_instance = type(self).real()()
        return inst

    def check(self, ctx):
        inst = self.instance()
        ctx.rule = inst
        return inst.check(ctx)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self.instance(), name)


_WARNED: set = set()


def _materialize(lazy: type) -> type[Rule]:
    """Import a lazy rule's module; its rules must say what the manifest said."""
    folder, file, modname = lazy._gl_folder, Path(lazy._gl_file), lazy._gl_modname
    module = _import_rule_file(folder, file, modname)
    found = {r.__name__: r for r in iter_rules(vars(module).values()) if r.__module__ == modname}
    real = found.get(lazy.__name__)
    expected = lazy._gl_expected
    actual = tuple((n, _entry(r)) for n, r in sorted(found.items()))
    if real is None or expected is None or actual != expected:
        _remove_manifest(folder)
        if lazy._gl_file not in _WARNED:
            _WARNED.add(lazy._gl_file)
            print(
                f"gpulint: warning: the rule manifest did not match {file.name} (removed; the next run rebuilds it)",
                file=sys.stderr,
            )
        if real is None:
            raise RuleError(f"rule {lazy.__name__} ({lazy.__dict__.get('code')}) is no longer in {file}")
    return real


# (file path, class name, entry, the file's entries) -> its LazyRule class: the same class for
# every registry made from the same manifest in one process (the engine keys compiled
# conditions by class)
_LAZY_CLASSES: dict[tuple, type] = {}


def _lazy_rule(folder: Path, file: str, modname: str, qualname: str, entry: tuple, items: tuple) -> type:
    key = (file, qualname, entry, items)
    cls = _LAZY_CLASSES.get(key)
    if cls is None:
        attrs = dict(zip(MANIFEST_FIELDS, entry))
        # _gl_expected: what the manifest says of every rule of the file, for _materialize's check
        attrs.update(_gl_file=file, _gl_modname=modname, _gl_folder=folder, _gl_expected=items, __module__=modname, __qualname__=qualname)
        cls = _LAZY_CLASSES[key] = _LazyRuleType(qualname, (LazyRule,), attrs)
    return cls


def _load_folder_lazy(folder: Path) -> list[type]:
    """The built-in folder's rules as LazyRule classes when its manifest holds (see the module's
    docstring); otherwise imported as usual, and the manifest written for the next run."""
    folder = folder.resolve()
    where = str(folder)
    path = _manifest_path(where)
    if path is None:
        return _load_folder(folder)
    key = _manifest_key(where)
    files = _read_manifest(path, key)
    if files is None:
        rules = _load_folder(folder)
        by_file: dict[str, dict] = {}
        for r in rules:
            f = getattr(sys.modules.get(r.__module__), "__file__", None)
            classes = by_file.setdefault(os.path.basename(f or ""), {})
            if not f or classes.setdefault(r.__name__, r) is not r:
                return rules  # not one class per name in its file: no manifest
        entries = [
            (name, tuple((q, _entry(c)) for q, c in sorted(classes.items()))) for name, classes in sorted(by_file.items())
        ]
        if all(_valid_entry(e) for _, items in entries for _, e in items):
            _write_manifest(path, key, entries)
        return rules
    modbase = _module_name(folder, where)
    out: list[type] = []
    for name, items in files:
        file = os.path.join(where, name)
        modname = f"{modbase}.{name[:-3]}"
        for qualname, entry in items:
            out.append(_lazy_rule(folder, file, modname, qualname, entry, items))
    return out


@dataclass
class Registry:
    rules: list[type[Rule]]

    @classmethod
    def load(cls, extra_dirs: Sequence[Path] = (), lazy: bool = False) -> "Registry":
        """The built-in rules and those of extra_dirs. lazy: the built-in ones as LazyRule
        classes when the manifest allows (the `gpulint` program's check/fix runs)."""
        rules = _load_folder_lazy(builtin_rules_dir()) if lazy else _load_folder(builtin_rules_dir())
        for d in extra_dirs:
            rules.extend(_load_folder(Path(d)))
        seen: dict[str, type[Rule]] = {}
        names: dict[str, type[Rule]] = {}
        for r in rules:
            if not CODE_RE.match(r.code):
                raise RuleError(f"rule {r.__name__} has an invalid code {r.code!r}")
            if r.code in seen and seen[r.code] is not r:
                raise RuleError(f"two rules share the code {r.code}: {seen[r.code].__name__} and {r.__name__}")
            if r.name in names and names[r.name] is not r:
                raise RuleError(f"two rules share the name {r.name}")
            seen[r.code] = r
            names[r.name] = r
        return cls(sorted(seen.values(), key=lambda r: r.code))

    def by_code(self, code: str) -> type[Rule] | None:
        for r in self.rules:
            if r.code == code:
                return r
        return None

    def lookup(self, key: str) -> type[Rule] | None:
        key = key.strip()
        for r in self.rules:
            if r.code == key.upper() or r.name == key:
                return r
        return None

    def match(self, selector: str) -> list[type[Rule]]:
        """Rules a selector names: `ALL`, a code, a code prefix (`GL1`) or a rule name."""
        sel = selector.strip()
        if sel.upper() == "ALL":
            return list(self.rules)
        by_name = [r for r in self.rules if r.name == sel]
        if by_name:
            return by_name
        up = sel.upper()
        if re.match(r"^[A-Z]+[0-9]*$", up):
            return [r for r in self.rules if r.code.startswith(up)]
        return []

    def resolve(
        self,
        select: Iterable[str] | None,
        extend_select: Iterable[str] = (),
        ignore: Iterable[str] = (),
    ) -> list[type[Rule]]:
        unknown = []

        def expand(selectors: Iterable[str]) -> set[type[Rule]]:
            out: set[type[Rule]] = set()
            for s in selectors:
                if s.strip().upper() == ENGINE_CODE:
                    continue
                matched = self.match(s)
                if not matched:
                    unknown.append(s)
                out.update(matched)
            return out

        if select is None:
            enabled = {r for r in self.rules if r.default}
        else:
            enabled = expand(select)
        enabled |= expand(extend_select)
        enabled -= expand(ignore)
        if unknown:
            raise RuleError("unknown rule selector(s): " + ", ".join(sorted(set(unknown))))
        return sorted(enabled, key=lambda r: r.code)
