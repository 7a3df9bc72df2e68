"""Settings from `[tool.gpulint]` in pyproject.toml (or gpulint.toml / .gpulint.toml).

Like ruff, each file is checked with the configuration closest to it (found from the file's
folder upward), unless `--config` names one for every file. A configuration may `extend` another
one (its keys win over the base's). Unknown keys are errors.

Trust: `rule-dirs` imports Python code, so it is read only from the configuration of the project
the run was started in (the one found from the current directory upward) or from `--config`, and
its folders must be inside that project. A `rule-dirs` in any other configuration (a subfolder's
pyproject.toml, an unrelated checkout passed as a path) is ignored with a warning.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

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
    ".ipynb_checkpoints",  # Jupyter's autosaved copies (ruff and black skip them too)
    "__pypackages__",
    "_build",
    "buck-out",
)

DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")

KNOWN_KEYS = {
    "extend",
    "include",
    "extend-include",
    "force-exclude",
    "torch-version",
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


@dataclass(frozen=True)
class RuleSettings:
    """What rules may read of the settings, as `ctx.settings` (picklable, sent to workers).

    torch_version: the (major, minor) torch version the project targets, from `torch-version` or
    the project's declared torch requirement (its lower bound); None when unknown. A fix that
    writes an API newer than that version must not be offered (or must use an older form).
    """

    torch_version: tuple[int, int] | None = None
    # a file of this run that may set a CUDA default tensor type or device (gpulint.project): the
    # factories of every file may then build their tensors there
    cuda_default_from: str | None = None

    @classmethod
    def of(cls, settings: "Settings") -> "RuleSettings":
        return cls(torch_version=settings.torch_version_tuple(),
                   cuda_default_from=getattr(settings, "cuda_default_from", None))


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
    include: list[str] = field(default_factory=lambda: list(DEFAULT_INCLUDE))
    extend_include: list[str] = field(default_factory=list)
    force_exclude: bool = False
    # the torch version the project targets ("2.1"), from `torch-version` or the project's declared
    # torch requirement; None when unknown. Fixes read it as ctx.settings.torch_version.
    torch_version: str | None = None
    torch_version_source: str | None = None  # where it came from (for --show-settings)
    # set by the command line for one run: a checked file that may set a CUDA default tensor type
    # (gpulint.project.cuda_default_setter); part of the cache key
    cuda_default_from: str | None = None
    ignored_rule_dirs: list[str] = field(default_factory=list)  # rule-dirs this config may not load

    @property
    def all_excludes(self) -> list[str]:
        return list(self.exclude) + list(self.extend_exclude)

    @property
    def all_includes(self) -> list[str]:
        return list(self.include) + list(self.extend_include)

    def torch_version_tuple(self) -> tuple[int, int] | None:
        return version_tuple(self.torch_version)

    def describe(self) -> dict:
        """The resolved settings, for --show-settings."""
        return {
            "config": str(self.config_path) if self.config_path else None,
            "root": str(self.root),
            "select": self.select,
            "extend-select": self.extend_select,
            "ignore": self.ignore,
            "per-file-ignores": self.per_file_ignores,
            "include": self.include,
            "extend-include": self.extend_include,
            "exclude": self.exclude,
            "extend-exclude": self.extend_exclude,
            "force-exclude": self.force_exclude,
            "respect-gitignore": self.respect_gitignore,
            "rule-dirs": [str(d) for d in self.rule_dirs],
            "unsafe-fixes": self.unsafe_fixes,
            "cache-dir": str(self.cache_dir) if self.cache_dir else None,
            "torch-version": self.torch_version,
            "torch-version-source": self.torch_version_source,
        }


def _str_list(key: str, value: Any, where: Path) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return list(value)


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(4 * 2**20)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} on line {line}); TOML files must be UTF-8")
    if sys.version_info >= (3, 11):
        import tomllib  # only when there is a config file to read
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}")
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply")


def _table(path: Path) -> dict | None:
    """The gpulint table of a config file, or None when the file has none."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        return data.get("tool", {}).get("gpulint")
    # gpulint.toml: keys at the top level (or under [tool.gpulint] for copy-paste convenience)
    return data.get("tool", {}).get("gpulint", data)


def find_config(start: Path) -> Path | None:
    start = Path(os.path.realpath(start))
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        for name in (".gpulint.toml", "gpulint.toml"):
            cand = directory / name
            if _is_file(cand):
                return cand
        cand = directory / "pyproject.toml"
        if _is_file(cand):
            try:
                if _table(cand) is not None:
                    return cand
            except ConfigError:
                raise
    return None


def _merged_table(config: Path, seen: tuple[Path, ...] = ()) -> dict:
    """A config's gpulint table with the tables it `extend`s underneath (its own keys win).
    Relative paths in a base keep meaning relative to the base's folder."""
    real = Path(os.path.realpath(config))
    if real in seen:
        raise ConfigError(f"{config}: `extend` forms a cycle: {' -> '.join(str(p) for p in (*seen, real))}")
    table = _table(config) or {}
    if not isinstance(table, dict):
        raise ConfigError(f"{config}: [tool.gpulint] must be a table")
    table = {k: (v, real.parent) for k, v in table.items()}
    if "extend" in table:
        base, _ = table.pop("extend")
        if not isinstance(base, str):
            raise ConfigError(f"{config}: `extend` must be a path (a string)")
        base_path = real.parent / os.path.expanduser(base)
        if not base_path.is_file():
            raise ConfigError(f"{config}: `extend`: config file not found: {base_path}")
        merged = _merged_table(base_path, (*seen, real))
        merged.update(table)
        return merged
    return table


def version_tuple(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    m = re.match(r"^\s*v?(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2))) if m else None


_REQ = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>[<>=!~][^;#]*)?", re.IGNORECASE)


def torch_floor(requirement: str) -> str | None:
    """The lowest torch version a requirement allows ("torch>=2.1,<3" -> "2.1"); None when it
    has no lower bound."""
    m = _REQ.match(requirement)
    if not m or not m.group("spec"):
        return None
    for part in m.group("spec").split(","):
        part = part.strip()
        v = re.match(r"^(>=|==|~=|>)\s*v?(\d+\.\d+)", part)
        if v:
            return v.group(2)
    return None


def declared_torch_version(folder: Path) -> tuple[str, str] | None:
    """(version, where) from the torch requirement a project declares in its pyproject.toml
    (`project.dependencies`, optional dependencies) or requirements*.txt, looked for in the
    configuration's folder."""
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = _read_toml(pyproject)
        except ConfigError:
            data = {}
        project = data.get("project") if isinstance(data.get("project"), dict) else {}
        reqs = list(project.get("dependencies") or [])
        for group in (project.get("optional-dependencies") or {}).values():
            if isinstance(group, list):
                reqs.extend(group)
        for req in reqs:
            if isinstance(req, str):
                v = torch_floor(req)
                if v:
                    return v, f"{pyproject} (project dependencies: {req.strip()})"
    for name in ("requirements.txt", "requirements-train.txt", "requirements/base.txt"):
        f = folder / name
        if f.is_file():
            try:
                lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                v = torch_floor(line)
                if v:
                    return v, f"{f} ({line.strip()})"
    return None


def load_settings(config: Path | None, start: Path | None = None) -> Settings:
    """Settings from an explicit file, or from the nearest one above `start`."""
    if config is None:
        config = find_config(start or Path.cwd())
        if config is None:
            s = Settings(root=Path.cwd())
            _torch_from_project(s, Path.cwd())
            return s
    elif not config.is_file():
        raise ConfigError(f"config file not found: {config}")
    merged = _merged_table(config)
    unknown = sorted(set(merged) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{config}: unknown key(s) in gpulint settings: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    table = {k: v for k, (v, _) in merged.items()}
    base_of = {k: b for k, (_, b) in merged.items()}
    root = Path(os.path.realpath(config)).parent
    s = Settings(root=root, config_path=config)
    if "select" in table:
        s.select = _str_list("select", table["select"], config)
    s.extend_select = _str_list("extend-select", table.get("extend-select", []), config)
    s.ignore = _str_list("ignore", table.get("ignore", []), config)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{config}: `per-file-ignores` must be a table of glob = [codes]")
    s.per_file_ignores = {k: _str_list(f"per-file-ignores.{k}", v, config) for k, v in pfi.items()}
    if "include" in table:
        s.include = _str_list("include", table["include"], config)
    s.extend_include = _str_list("extend-include", table.get("extend-include", []), config)
    if "exclude" in table:
        s.exclude = _str_list("exclude", table["exclude"], config)
    s.extend_exclude = _str_list("extend-exclude", table.get("extend-exclude", []), config)
    for key, attr in (("respect-gitignore", "respect_gitignore"), ("unsafe-fixes", "unsafe_fixes"), ("force-exclude", "force_exclude")):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{config}: `{key}` must be true or false")
            setattr(s, attr, table[key])
    s.rule_dirs = [
        Path(os.path.normpath(base_of["rule-dirs"] / d)) for d in _str_list("rule-dirs", table.get("rule-dirs", []), config)
    ]
    if "cache-dir" in table:
        cd = table["cache-dir"]
        if not isinstance(cd, str):
            raise ConfigError(f"{config}: `cache-dir` must be a string")
        s.cache_dir = root / os.path.expanduser(cd)
    if "torch-version" in table:
        tv = table["torch-version"]
        if not isinstance(tv, str) or version_tuple(tv) is None:
            raise ConfigError(f"{config}: `torch-version` must be a version string like \"2.1\"")
        s.torch_version, s.torch_version_source = tv, f"{config} (torch-version)"
    else:
        _torch_from_project(s, root)
    return s


def _torch_from_project(s: Settings, folder: Path) -> None:
    found = declared_torch_version(folder)
    if found:
        s.torch_version, s.torch_version_source = found


class Resolver:
    """The settings of every file: the closest configuration to it (ruff's semantics), or the
    `--config` file for all. Only the trusted configuration (the project's own, found from the
    current directory, or `--config`) may load rule-dirs; others get its rule folders and a
    warning when they name their own."""

    def __init__(self, explicit: Path | None = None, cwd: Path | None = None, overrides=None) -> None:
        self.explicit = explicit
        self.cwd = cwd or Path.cwd()
        self.overrides = overrides  # called on every Settings loaded (CLI flags)
        self.by_config: dict[Path | None, Settings] = {}
        self.by_dir: dict[str, Settings] = {}
        self.warnings: list[str] = []
        self.problems: list[str] = []  # folders discovery could not list
        self.trusted = self._load(explicit) if explicit is not None else self._load(find_config(self.cwd))
        self._check_rule_dirs(self.trusted)

    def _load(self, config: Path | None) -> Settings:
        key = Path(os.path.realpath(config)) if config is not None else None
        s = self.by_config.get(key)
        if s is None:
            if config is not None:
                s = load_settings(config)
            else:  # no configuration: the defaults, rooted at the current directory
                s = Settings(root=self.cwd)
                _torch_from_project(s, self.cwd)
            if self.overrides is not None:
                self.overrides(s)
            trusted = getattr(self, "trusted", None)
            if trusted is not None and s.rule_dirs != trusted.rule_dirs:
                if s.rule_dirs:
                    s.ignored_rule_dirs = [str(d) for d in s.rule_dirs]
                    self.warnings.append(
                        f"{config}: `rule-dirs` ignored: rules are loaded only from the configuration of the "
                        f"project gpulint runs in ({trusted.config_path or 'none found from the current directory'}) "
                        f"or from --config"
                    )
                s.rule_dirs = list(trusted.rule_dirs)
            self.by_config[key] = s
        return s

    def _check_rule_dirs(self, s: Settings) -> None:
        project = os.path.realpath(s.root)
        for d in s.rule_dirs:
            real = os.path.realpath(d)
            if real != project and not real.startswith(project.rstrip(os.sep) + os.sep):
                raise ConfigError(
                    f"{s.config_path}: rule folder {d} is outside the project ({project}); "
                    f"rule folders must be inside the project whose configuration names them"
                )

    def for_dir(self, directory: str) -> Settings:
        """The settings that apply to the files of a folder."""
        if self.explicit is not None:
            return self.trusted
        directory = os.path.abspath(directory)
        chain = []
        cur = directory
        found: Settings | None = None
        while True:
            if cur in self.by_dir:
                found = self.by_dir[cur]
                break
            chain.append(cur)
            cfg = _config_in(Path(cur))
            if cfg is not None:
                found = self._load(cfg)
                break
            parent = os.path.dirname(cur)
            if parent == cur:
                found = self._default()
                break
            cur = parent
        for c in chain:
            self.by_dir[c] = found
        return found

    def _default(self) -> Settings:
        if self.trusted.config_path is None:
            return self.trusted
        s = self.by_config.get(None)
        if s is None:
            s = Settings(root=self.cwd)
            _torch_from_project(s, self.cwd)
            if self.overrides is not None:
                self.overrides(s)
            s.rule_dirs = list(self.trusted.rule_dirs)
            self.by_config[None] = s
        return s

    def for_path(self, path: str) -> Settings:
        p = os.path.abspath(path)
        return self.for_dir(p if os.path.isdir(p) else os.path.dirname(p))


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except OSError:  # e.g. a folder without search permission
        return False


def _config_in(directory: Path) -> Path | None:
    for name in (".gpulint.toml", "gpulint.toml"):
        cand = directory / name
        if _is_file(cand):
            return cand
    cand = directory / "pyproject.toml"
    if _is_file(cand) and _table(cand) is not None:
        return cand
    return None


def common_start(paths: Iterable[str]) -> Path:
    real = [Path(p).resolve() for p in paths if p != "-"]
    if not real:
        return Path.cwd()
    try:
        return Path(os.path.commonpath([str(p) for p in real]))
    except ValueError:
        return Path.cwd()
