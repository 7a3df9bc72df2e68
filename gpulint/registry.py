"""Finding and loading rules, and resolving rule selectors.

Built-in rules live in the top-level `rules/` folder of the source tree (installed into the
wheel as `gpulint/_builtin_rules/`). A user's own rule folders (config `rule-dirs`) are loaded the
same way: every `*.py` file not starting with `_` is imported by path and its `Rule` subclasses
with a `code` are registered.
"""

from __future__ import annotations

import importlib.util
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
    from gpulint._startup import blake2b

    tag = blake2b(str(folder.resolve()).encode(), digest_size=5).hexdigest()
    found: list[type[Rule]] = []
    for file in sorted(folder.glob("*.py")):
        if file.name.startswith("_"):
            continue
        modname = f"_gpulint_rules_{tag}.{file.stem}"
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
        found.extend(r for r in iter_rules(vars(module).values()) if r.__module__ == modname)
    return found


@dataclass
class Registry:
    rules: list[type[Rule]]

    @classmethod
    def load(cls, extra_dirs: Sequence[Path] = ()) -> "Registry":
        rules = _load_folder(builtin_rules_dir())
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
