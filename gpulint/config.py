"""Settings from `[tool.gpulint]` in pyproject.toml (or gpulint.toml / .gpulint.toml).

The nearest configuration file is found from the checked paths upward. Unknown keys are errors.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".env",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
    "__pycache__",
    "node_modules",
    "site-packages",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gpulint_cache",
    "__pypackages__",
    "_build",
    "buck-out",
)

KNOWN_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "rule-dirs",
    "unsafe-fixes",
    "cache-dir",
}


class ConfigError(Exception):
    """A configuration problem (exit 2)."""


@dataclass
class Settings:
    root: Path  # the directory of the config file, or the current directory
    config_path: Path | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    respect_gitignore: bool = True
    rule_dirs: list[Path] = field(default_factory=list)
    unsafe_fixes: bool = False
    cache_dir: Path | None = None

    @property
    def all_excludes(self) -> list[str]:
        return list(self.exclude) + list(self.extend_exclude)


def _str_list(key: str, value: Any, where: Path) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return list(value)


def _table(path: Path) -> dict | None:
    """The gpulint table of a config file, or None when the file has none."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}")
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("gpulint")
    # gpulint.toml: keys at the top level (or under [tool.gpulint] for copy-paste convenience)
    return data.get("tool", {}).get("gpulint", data)


def find_config(start: Path) -> Path | None:
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        for name in (".gpulint.toml", "gpulint.toml"):
            cand = directory / name
            if cand.is_file():
                return cand
        cand = directory / "pyproject.toml"
        if cand.is_file():
            try:
                if _table(cand) is not None:
                    return cand
            except ConfigError:
                raise
    return None


def load_settings(config: Path | None, start: Path | None = None) -> Settings:
    """Settings from an explicit file, or from the nearest one above `start`."""
    if config is None:
        config = find_config(start or Path.cwd())
        if config is None:
            return Settings(root=Path.cwd())
    elif not config.is_file():
        raise ConfigError(f"config file not found: {config}")
    table = _table(config) or {}
    if not isinstance(table, dict):
        raise ConfigError(f"{config}: [tool.gpulint] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{config}: unknown key(s) in gpulint settings: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    root = config.resolve().parent
    s = Settings(root=root, config_path=config)
    if "select" in table:
        s.select = _str_list("select", table["select"], config)
    s.extend_select = _str_list("extend-select", table.get("extend-select", []), config)
    s.ignore = _str_list("ignore", table.get("ignore", []), config)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{config}: `per-file-ignores` must be a table of glob = [codes]")
    s.per_file_ignores = {k: _str_list(f"per-file-ignores.{k}", v, config) for k, v in pfi.items()}
    if "exclude" in table:
        s.exclude = _str_list("exclude", table["exclude"], config)
    s.extend_exclude = _str_list("extend-exclude", table.get("extend-exclude", []), config)
    rg = table.get("respect-gitignore", True)
    if not isinstance(rg, bool):
        raise ConfigError(f"{config}: `respect-gitignore` must be true or false")
    s.respect_gitignore = rg
    s.rule_dirs = [(root / d) for d in _str_list("rule-dirs", table.get("rule-dirs", []), config)]
    uf = table.get("unsafe-fixes", False)
    if not isinstance(uf, bool):
        raise ConfigError(f"{config}: `unsafe-fixes` must be true or false")
    s.unsafe_fixes = uf
    if "cache-dir" in table:
        cd = table["cache-dir"]
        if not isinstance(cd, str):
            raise ConfigError(f"{config}: `cache-dir` must be a string")
        s.cache_dir = root / os.path.expanduser(cd)
    return s


def common_start(paths: Iterable[str]) -> Path:
    real = [Path(p).resolve() for p in paths if p != "-"]
    if not real:
        return Path.cwd()
    try:
        return Path(os.path.commonpath([str(p) for p in real]))
    except ValueError:
        return Path.cwd()
