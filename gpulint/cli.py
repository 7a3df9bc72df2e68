"""The `gpulint` command line (ruff's conventions: exit 0 clean, 1 problems, 2 errors)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

from gpulint import __version__

# click is imported when the command line is parsed by click: always, except for the `gpulint`
# program's check/fix command lines that `_fast_parse` reads the same way (see `program()`)

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


def _split(values: Sequence[str]) -> list[str]:
    out = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def _fail(message: str) -> BaseException:
    _echo(f"gpulint: error: {message}", err=True)
    return _exit_exc(EXIT_ERROR)


# True while the program runs a check/fix command line without click (see program())
_FAST = False


def _exit_exc(code: int) -> BaseException:
    """The exception that ends the command with this exit status: click's Exit, or SystemExit
    (what click's main makes of it) when the program runs without click."""
    if _FAST:
        return SystemExit(code)
    import click

    return click.exceptions.Exit(code)


def _echo(message: str = "", nl: bool = True, err: bool = False, color: bool | None = None) -> None:
    """click.echo(message, nl=nl, err=err, color=color). Without click (the program's check/fix,
    see program()) the same for the streams a process normally has, a text stream of a
    non-ASCII encoding (click writes to it as it is, and flushes after every message); any
    other stream goes through click."""
    click = sys.modules.get("click")
    if click is None:
        stream = sys.stderr if err else sys.stdout
        if stream is None:
            return  # no stream to write to (click: the same)
        if _plain_text_stream(stream):
            out = message + "\n" if nl else message
            if not out:
                stream.flush()
                return
            # click removes ANSI styles from a stream that is not a terminal (colour not forced)
            if "\x1b" in out and (color is False or (color is None and not _isatty(stream))):
                import re

                out = re.sub(r"\033\[[0-?]*[ -/]*[@-~]", "", out)
            stream.write(out)
            stream.flush()
            return
        import click
    click.echo(message, nl=nl, err=err, color=color)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except Exception:  # noqa: BLE001 - click's isatty: any error is "not a terminal"
        return False


def _plain_text_stream(stream) -> bool:
    """A stream click.echo writes to as it is: a text stream (io.TextIOWrapper) with an
    encoding that is not ASCII and an errors setting."""
    import io

    if type(stream) is not io.TextIOWrapper or stream.errors is None or not stream.encoding:
        return False
    import codecs

    try:
        return codecs.lookup(stream.encoding).name != "ascii"
    except LookupError:
        return False


# The options of check and fix: (declarations, keywords of click.option; "type" as data, see
# _click_type). Both click and the program's own parser (_fast_parse) read this table.
_PATH = ("path", {})
_FILE_PATH = ("path", {"dir_okay": False})
_LINT_OPTIONS: tuple = (
    (("--select",), {"multiple": True, "help": "Rules to enable (codes, prefixes like GL1, names); replaces the configured set."}),
    (("--extend-select",), {"multiple": True, "help": "Rules to enable on top of the selected ones."}),
    (("--ignore",), {"multiple": True, "help": "Rules to disable."}),
    (
        ("--output-format",),
        {
            "type": ("choice", ("text", "full", "concise", "json", "sarif", "github")),
            "default": None,
            "help": "text (one line per problem; 'concise' is an alias), full (with the source line; the default on a terminal), json, sarif, github.",
        },
    ),
    (("-o", "--output-file"), {"type": _FILE_PATH, "help": "Write the report to this file (its folders are created)."}),
    (("--statistics",), {"is_flag": True, "help": "Show counts per rule and the total instead of each problem (JSON with --output-format json)."}),
    (("--exit-zero",), {"is_flag": True, "help": "Exit 0 even when problems are found."}),
    (("--exit-non-zero-on-fix",), {"is_flag": True, "help": "Exit 1 when a fix was applied, even if no problem remains."}),
    (("--fix/--no-fix", "fix_flag"), {"default": None, "help": "check: apply fixes (the same as `gpulint fix`)."}),
    (("--fix-only",), {"is_flag": True, "help": "Apply fixes; report and fail only on nothing else."}),
    (("--diff",), {"is_flag": True, "help": "Print the fixes as a unified diff; write nothing."}),
    (("--show-fixes",), {"is_flag": True, "help": "Show what each fix does (check) or what was fixed (fix)."}),
    (("--unsafe-fixes",), {"is_flag": True, "default": None, "help": "Also apply (or count) fixes marked unsafe."}),
    (("--add-noqa",), {"is_flag": True, "help": "Add `# noqa: CODE` to every line with a problem (adopting gpulint on existing code)."}),
    (("--config",), {"type": _FILE_PATH, "help": "Path to a pyproject.toml or gpulint.toml (used for every file)."}),
    (("--no-cache",), {"is_flag": True, "help": "Do not read or write the result cache."}),
    (("--respect-gitignore/--no-respect-gitignore",), {"default": None, "help": "Skip files .gitignore ignores (default: on)."}),
    (("--force-exclude/--no-force-exclude",), {"default": None, "help": "Apply exclude patterns to files named on the command line too (pre-commit)."}),
    (("--show-files",), {"is_flag": True, "help": "List the files that would be checked, and exit."}),
    (("--show-settings",), {"is_flag": True, "help": "Print the settings that apply to the first path, and exit."}),
    (("--stdin-filename",), {"help": "The name of the file read from stdin (with PATHS '-')."}),
    (("-q", "--quiet"), {"is_flag": True, "help": "Print only the problems, no summary."}),
    (("-j", "--jobs"), {"type": ("int", 1, 256), "help": "Worker processes (default: one per core)."}),
)


def _click_type(click, spec):
    if spec[0] == "choice":
        return click.Choice(list(spec[1]))
    if spec[0] == "path":
        return click.Path(**spec[1])
    return click.IntRange(spec[1], spec[2])


def _lint_options(click, f):
    options = [click.argument("paths", nargs=-1, type=click.Path())]
    for decls, kw in _LINT_OPTIONS:
        if "type" in kw:
            kw = {**kw, "type": _click_type(click, kw["type"])}
        options.append(click.option(*decls, **kw))
    for opt in reversed(options):
        f = opt(f)
    return f


def _fast_parse(args: Sequence[str]) -> dict | None:
    """The keywords click gives check/fix for these arguments, when they are plain: paths, and
    options spelled out in full (`--select GL1`, `--select=GL1`, `-q`, `-j 2`) whose values are
    what their types accept; None for anything else (`--help`, `--`, a bundle such as `-qj2`, an
    unknown option, a value click would refuse or that starts with "-"): click parses those."""
    opts: dict[str, tuple] = {}
    kw: dict = {"paths": ()}
    for decls, spec in _LINT_OPTIONS:
        names = [d for d in decls if d.startswith("-")]
        dest = next((d for d in decls if not d.startswith("-")), None)
        if "/" in names[0]:  # a boolean pair: --fix/--no-fix
            on, off = names[0].split("/")
            dest = dest or on[2:].replace("-", "_")
            opts[on], opts[off] = (dest, "set", True), (dest, "set", False)
            kw[dest] = spec.get("default")
            continue
        dest = dest or next(n for n in names if n.startswith("--"))[2:].replace("-", "_")
        if spec.get("is_flag"):
            for n in names:
                opts[n] = (dest, "set", True)
            kw[dest] = spec.get("default", False)
        else:
            for n in names:
                opts[n] = (dest, "multiple" if spec.get("multiple") else "value", spec.get("type"))
            kw[dest] = () if spec.get("multiple") else spec.get("default")
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg[:1] != "-" or len(arg) == 1:
            paths.append(arg)
            continue
        value = None
        opt = opts.get(arg)
        if opt is None:
            name, eq, value = arg.partition("=")
            opt = opts.get(name) if eq and name.startswith("--") else None
            if opt is None or opt[1] == "set":
                return None
        dest, how, typ = opt
        if how == "set":
            kw[dest] = typ
            continue
        if value is None:
            if i >= len(args) or (args[i][:1] == "-" and len(args[i]) > 1):
                return None
            value = args[i]
            i += 1
        if typ is not None:
            if typ[0] == "choice":
                if value not in typ[1]:
                    return None
            elif typ[0] == "int":
                if not (value.isascii() and value.isdigit() and typ[1] <= int(value) <= typ[2]):
                    return None
                value = int(value)
            elif not _fast_path_ok(value, typ[1]):
                return None
        kw[dest] = kw[dest] + (value,) if how == "multiple" else value
    for p in paths:
        if not _fast_path_ok(p, {}):
            return None
    kw["paths"] = tuple(paths)
    return kw


def _fast_path_ok(value: str, spec: dict) -> bool:
    """What click.Path(**spec) accepts as it is: a path that does not exist, or one that is
    readable (and not a folder where dir_okay is False)."""
    try:
        st = os.stat(value)
    except (OSError, ValueError):
        return True  # click: a path that cannot be stat'ed is given as it is
    if not spec.get("dir_okay", True):
        import stat

        if stat.S_ISDIR(st.st_mode):
            return False
    return os.access(value, os.R_OK)


def check(fix_flag, **kw) -> None:
    """Check files for problems (default path: the current directory). `check --fix` is `fix`."""
    _interruptible(_lint, fix=bool(fix_flag) or kw["fix_only"], **kw)


def fix(fix_flag, **kw) -> None:
    """Apply safe fixes (and unsafe ones with --unsafe-fixes), then report what remains."""
    _interruptible(_lint, fix=fix_flag is not False, **kw)


def _stdout_binary():
    """The binary stdout (click 9 removes click's binary-stream helper)."""
    sys.stdout.flush()
    return getattr(sys.stdout, "buffer", sys.stdout)


def _is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


# Set by main(), the `gpulint` program: its check/fix runs start fast (below). Callers that run
# the commands inside their own process (tests through click's runner, an editor) do not: the
# start-up cache file and an incomplete LibCST package are for a process of gpulint's own.
_PROGRAM = False
# Set when the program ran check/fix (see program()).
_CHECKED = False


def _interruptible(fn, **kw) -> None:
    """Ctrl-C: exit 130 (not click's "Aborted!" and 1, which reads like findings). The runner
    has stopped its workers and removed their temporary files by the time this is reached.

    In the `gpulint` program, the run imports LibCST, the engine and the rules under the
    start-up cache (the compiled code of their dataclasses' methods), and LibCST without its
    metadata providers and helpers until something asks for them, and without the cyclic garbage
    collector's passes until the first file is analysed (gpulint/_startup.py)."""
    global _CHECKED
    try:
        if _PROGRAM:
            _CHECKED = True
            from gpulint._startup import compile_cache, lazy_libcst, pause_gc, resume_gc

            pause_gc()  # while the run imports; resumed before the first file is analysed
            try:
                with compile_cache():
                    lazy_libcst()
                    fn(**kw)
            finally:
                resume_gc()
        else:
            fn(**kw)
    except KeyboardInterrupt:
        _echo("gpulint: interrupted", err=True)
        raise _exit_exc(130)


def _lint(
    *,
    fix: bool,
    paths,
    select,
    extend_select,
    ignore,
    output_format,
    output_file,
    statistics,
    exit_zero,
    exit_non_zero_on_fix=False,
    fix_only=False,
    diff,
    show_fixes,
    unsafe_fixes,
    add_noqa=False,
    config,
    no_cache,
    respect_gitignore,
    force_exclude=None,
    show_files=False,
    show_settings=False,
    stdin_filename,
    quiet,
    jobs,
) -> None:
    from gpulint import reporters
    from gpulint.config import ConfigError, Resolver
    from gpulint.diagnostics import FileResult
    from gpulint.discovery import MissingPath, discover, force_excluded
    from gpulint.engine import BadInput, Options, decode, engine_diagnostic, run_text
    from gpulint.registry import Registry, RuleError
    from gpulint.runner import _rules_for, codes_for_file, run_files, use_registry

    paths = tuple(paths) or (".",)
    use_stdin = paths == ("-",)
    if "-" in paths and not use_stdin:
        raise _fail("'-' (stdin) cannot be combined with other paths")
    if select and not _split(select):
        raise _fail("--select needs at least one rule (a code, a prefix such as GL1, a name, or ALL)")
    if add_noqa and (fix or diff or use_stdin):
        raise _fail("--add-noqa cannot be combined with fixing, --diff or stdin")

    def overrides(s) -> None:
        if respect_gitignore is not None:
            s.respect_gitignore = respect_gitignore
        if force_exclude is not None:
            s.force_exclude = force_exclude

    try:
        resolver = Resolver(Path(config) if config else None, overrides=overrides)
        trusted = resolver.trusted
        if trusted.rule_dirs:
            _echo(f"gpulint: loading rules from {', '.join(str(d) for d in trusted.rule_dirs)}", err=True)
        # the program imports only the built-in rules a file needs (gpulint/registry.py)
        registry = Registry.load(trusted.rule_dirs, lazy=_PROGRAM)
    except (ConfigError, RuleError) as exc:
        raise _fail(str(exc))
    from gpulint.suppression import set_known

    set_known((r.code for r in registry.rules), {r.name: r.code for r in registry.rules})

    enabled_cache: dict[int, list] = {}

    def enabled_for(s) -> list:
        got = enabled_cache.get(id(s))
        if got is None:
            got = registry.resolve(
                _split(select) if select else s.select,
                s.extend_select + _split(extend_select),
                s.ignore + _split(ignore),
            )
            for pattern, selectors in s.per_file_ignores.items():
                unknown = [x for x in selectors if x.strip().upper() != "GL000" and not registry.match(x)]
                if unknown:
                    raise RuleError(f"unknown rule selector(s) in per-file-ignores for {pattern!r}: {', '.join(unknown)}")
            enabled_cache[id(s)] = got
        return got

    def options_for(s) -> Options:
        unsafe = s.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
        opts = Options(fix=fix or diff, unsafe_fixes=unsafe, write=not diff and not use_stdin)
        if hasattr(opts, "settings"):
            from gpulint.config import RuleSettings

            opts.settings = RuleSettings.of(s)
        return opts

    problems_found: list[str] = []
    try:
        if use_stdin:
            stdin_settings = resolver.for_path(stdin_filename) if stdin_filename else resolver.for_dir(str(Path.cwd()))
            groups = {}
        else:
            candidates = discover(paths, resolver)
            problems_found = resolver.problems
            groups: dict[int, tuple] = {}
            for c in candidates:
                groups.setdefault(id(c.settings), (c.settings, []))[1].append(c)
            if candidates:
                from gpulint.project import cuda_default_projects, project_root

                # a launcher of the project that may set a CUDA default tensor type: the factories
                # of every file of that project may build there (a byte search, nothing parsed or
                # run); its files get a copy of their settings that says so
                roots: dict = {}
                setters = cuda_default_projects((c.path for c in candidates), roots)
                if setters:
                    import dataclasses

                    copies: dict = {}
                    regrouped: dict[int, tuple] = {}
                    for c in candidates:
                        s = c.settings
                        setter = setters.get(project_root(c.path, roots))
                        if setter is not None and s is not None:
                            key = (id(s), setter)
                            if key not in copies:
                                copies[key] = dataclasses.replace(s, cuda_default_from=setter)
                            s = copies[key]
                        regrouped.setdefault(id(s), (s, []))[1].append(c)
                    groups = regrouped
            if show_settings:
                first = candidates[0].settings if candidates else resolver.for_path(paths[0])
                doc = first.describe()
                doc["enabled-rules"] = [r.code for r in enabled_for(first)]
                doc["rules-trusted-from"] = str(trusted.config_path) if trusted.config_path else None
                import json

                _echo(json.dumps(doc, indent=2))
                raise _exit_exc(EXIT_CLEAN)
            if show_files:
                from gpulint.runner import display_path

                for shown in sorted(display_path(c.path) for c in candidates):
                    _echo(shown)
                raise _exit_exc(EXIT_CLEAN)
            for s, _ in groups.values():
                enabled_for(s)
    except MissingPath as exc:
        raise _fail(f"path does not exist: {exc}")
    except (ConfigError, RuleError) as exc:
        raise _fail(str(exc))
    for w in resolver.warnings:
        _echo(f"gpulint: warning: {w}", err=True)

    all_enabled = sorted({r for s, _ in groups.values() for r in enabled_for(s)}, key=lambda r: r.code)

    if use_stdin:
        name = stdin_filename or "-"
        raw = sys.stdin.buffer.read()
        s = stdin_settings
        try:
            enabled_rules = enabled_for(s)
        except RuleError as exc:
            raise _fail(str(exc))
        all_enabled = enabled_rules
        enabled = [r.code for r in enabled_rules]
        opts = options_for(s)
        rule_dirs = tuple(str(d) for d in s.rule_dirs)
        use_registry(rule_dirs, registry)
        res = FileResult(name)
        stdin_out = raw
        if stdin_filename and s.force_exclude and force_excluded(stdin_filename, s):
            results = [res]  # excluded: checked as nothing, printed back unchanged
        else:
            try:
                codes = codes_for_file(name, s, enabled, registry)
                rules = _rules_for(codes, rule_dirs)
                if name.endswith(".ipynb"):
                    from gpulint.notebook import NotebookError, _to_cells, check_text, write_back

                    try:
                        nb, outcome = check_text(name, raw, rules, opts)
                    except NotebookError as exc:
                        raise BadInput(str(exc))
                    if outcome is not None:
                        res.diagnostics = outcome.diagnostics
                        res.fixed = [d.code for d in outcome.fixed]
                        res.notes = outcome.dropped
                        _to_cells(nb, res.diagnostics, outcome.text)
                        if outcome.text != nb.script:
                            res.original_source, res.fixed_source = nb.script, outcome.text
                            try:
                                stdin_out = write_back(nb, outcome.text).encode("utf-8")
                            except NotebookError as exc:
                                res.fixed, res.fixed_source = [], None
                                res.diagnostics.append(engine_diagnostic(name, str(exc)))
                else:
                    src = decode(raw)
                    outcome = run_text(name, src.text, rules, opts)
                    res.diagnostics = outcome.diagnostics
                    res.fixed = [d.code for d in outcome.fixed]
                    res.notes = outcome.dropped
                    if outcome.text != src.text:
                        res.original_source, res.fixed_source = src.text, outcome.text
                        try:  # the fixed source goes back in the input's own encoding (coding cookie, BOM)
                            stdin_out = outcome.text.encode(src.encoding)
                        except UnicodeEncodeError as exc:
                            res.fixed, res.fixed_source = [], None
                            res.diagnostics = [engine_diagnostic(name, f"cannot encode the fixed source as {src.encoding}: {exc.reason}")]
            except BadInput as exc:
                res.diagnostics = [engine_diagnostic(name, str(exc), exc.line, exc.col)]
                if getattr(exc, "notebook", None) is not None:
                    from gpulint.notebook import _to_cells

                    _to_cells(exc.notebook, res.diagnostics)
                stdin_out = raw  # unchanged, byte for byte
            except RecursionError:
                res.diagnostics = [engine_diagnostic(name, "file is too deeply nested to analyse")]
                stdin_out = raw
            results = [res]
    else:
        results = []
        for s, cands in groups.values():
            results.extend(
                run_files(cands, s, registry, [r.code for r in enabled_for(s)], options_for(s), use_cache=not no_cache, jobs=jobs)
            )
        for problem in problems_found:
            where, _, message = problem.partition(": ")
            from gpulint.runner import display_path

            results.append(FileResult(display_path(where), [engine_diagnostic(display_path(where), message)]))
        results.sort(key=lambda r: r.path)
        if not results and not quiet:
            _echo(
                f"gpulint: warning: no files to check under {', '.join(paths)} "
                f"(included: {', '.join(trusted.all_includes)}; see --show-files)",
                err=True,
            )

    if add_noqa:
        from gpulint.suppression import add_noqa_to_files

        added, notes = add_noqa_to_files(results)
        for note in notes:
            _echo(f"gpulint: warning: {note}", err=True)
        if not quiet:
            _echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        raise _exit_exc(EXIT_CLEAN)

    diags = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key())
    n_fixed = sum(len(r.fixed) for r in results)

    if output_format in (None, "concise"):
        output_format = "full" if output_format is None and not output_file and _is_terminal() else "text"
    color = output_format == "full" and not output_file and _is_terminal() and not os.environ.get("NO_COLOR")

    out_stream = None
    if output_file:
        try:
            parent = os.path.dirname(os.path.abspath(output_file))
            os.makedirs(parent, exist_ok=True)
            out_stream = open(output_file, "w", encoding="utf-8")
        except OSError as exc:
            raise _fail(f"cannot write the report to {output_file}: {exc.strerror or exc}")
    try:
        def emit(text: str, err: bool = False) -> None:
            if out_stream is not None and not err:
                out_stream.write(text)
            else:
                _echo(text, nl=False, err=err, color=True if color and not err else None)

        for r in results:
            for note in r.notes:
                _echo(f"{r.path}: warning: {note}", err=True)

        if diff:
            changed = [r for r in results if r.fixed_source is not None]
            for r in changed:
                emit(_unified_diff(r))
            if not quiet:
                would = n_fixed
                _echo(
                    f"Would fix {would} problem{'s' if would != 1 else ''}." if would else "No fixes available.",
                    err=True,
                )
            raise _exit_exc(EXIT_PROBLEMS if changed and not exit_zero else EXIT_CLEAN)

        if use_stdin and fix:
            # like ruff: the fixed source goes to stdout, the report to stderr
            out = _stdout_binary()
            out.write(stdin_out)
            out.flush()
            report_err = True
        else:
            report_err = False

        unsafe = unsafe_fixes if unsafe_fixes is not None else any(s.unsafe_fixes for s, _ in groups.values())
        if fix_only:
            if not quiet:
                emit(f"Fixed {n_fixed} problem{'s' if n_fixed != 1 else ''}.\n", report_err)
        elif statistics and output_format in ("text", "full"):
            emit(reporters.statistics(diags, unsafe), report_err)
        elif statistics and output_format == "json":
            emit(reporters.statistics_json(diags, unsafe), report_err)
        elif output_format in ("text", "full"):
            if diags:
                emit(reporters.render(output_format, diags, all_enabled, unsafe, color), report_err)
            if show_fixes:
                emit(_show_fixes(results, diags, fix), report_err)
            if not quiet:
                emit(reporters.summary(diags, unsafe, n_fixed if fix else 0), report_err)
        else:
            emit(reporters.render(output_format, diags, all_enabled, unsafe), report_err)
    finally:
        if out_stream is not None:
            out_stream.close()

    if exit_non_zero_on_fix and n_fixed:
        raise _exit_exc(EXIT_PROBLEMS)
    if fix_only:
        raise _exit_exc(EXIT_CLEAN)
    if diags and not exit_zero:
        raise _exit_exc(EXIT_PROBLEMS)
    raise _exit_exc(EXIT_CLEAN)


def _unified_diff(r) -> str:
    """A file's fixes as a unified diff; a notebook's per cell (`a/x.ipynb:cell 5`)."""
    import difflib

    if r.path.endswith(".ipynb"):
        from gpulint.notebook import BOUNDARY

        def cells(text: str) -> list[list[str]]:
            out: list[list[str]] = [[]]
            for ln in text.splitlines(keepends=True):
                if ln.rstrip("\r\n") == BOUNDARY:
                    out.append([])
                else:
                    out[-1].append(ln)
            return out

        before, after = cells(r.original_source), cells(r.fixed_source)
        numbers = getattr(r, "cell_numbers", None)
        if len(before) == len(after):
            parts = []
            for i, (a, b) in enumerate(zip(before, after)):
                if a != b:
                    n = numbers[i] if numbers and i < len(numbers) else i + 1
                    parts.append(_patch_lines(difflib.unified_diff(a, b, fromfile=f"a/{r.path}:cell {n}", tofile=f"b/{r.path}:cell {n}")))
            return "".join(parts)
    return _patch_lines(
        difflib.unified_diff(
            r.original_source.splitlines(keepends=True),
            r.fixed_source.splitlines(keepends=True),
            fromfile=f"a/{r.path}",
            tofile=f"b/{r.path}",
        )
    )


def _patch_lines(lines) -> str:
    """difflib's lines as `patch`/`git apply` read them: a last line without its newline (a file
    that does not end in one) is followed by the `\\ No newline at end of file` marker, instead of
    running into the next line of the diff."""
    out = []
    for ln in lines:
        out.append(ln)
        if not ln.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _show_fixes(results, diags, fix_mode: bool) -> str:
    from gpulint.reporters import where

    lines = []
    if fix_mode:
        fixed = [(r.path, r.fixed) for r in results if r.fixed]
        if fixed:
            lines.append(f"\nFixed {sum(len(f) for _, f in fixed)} problem(s):\n")
            for path, codes in fixed:
                lines.append(f"- {path}:\n")
                for code in sorted(set(codes)):
                    lines.append(f"    {codes.count(code)} × {code}\n")
    else:
        fixable = [d for d in diags if d.fix is not None]
        if fixable:
            lines.append("\nAvailable fixes:\n")
            for d in fixable:
                lines.append(f"  {where(d)}: {d.code} ({d.fix.applicability}) {d.fix.message}\n")
    return "".join(lines)


def rules_cmd(output_format: str, config: str | None) -> None:
    """List every rule: code, name, fix safety, default, summary."""
    reg = _registry(config)
    if output_format == "json":
        import json

        _echo(
            json.dumps(
                [
                    {"code": r.code, "name": r.name, "fix": r.fix_safety, "fix_partial": bool(getattr(r, "fix_partial", False)), "default": bool(r.default), "kind": r.kind, "summary": r.summary}
                    for r in reg.rules
                ],
                indent=2,
            )
        )
        return
    w_name = max([len(r.name) for r in reg.rules] + [4])
    _echo(f"{'code':<6}  {'name':<{w_name}}  {'fix':<6}  {'default':<7}  summary")
    for r in reg.rules:
        _echo(f"{r.code:<6}  {r.name:<{w_name}}  {r.fix_safety:<6}  {'on' if r.default else 'off':<7}  {r.summary}")


def explain(rule: str, config: str | None) -> None:
    """Show a rule's documentation, with a bad and a good example."""
    reg = _registry(config)
    r = reg.lookup(rule)
    if r is None:
        raise _fail(f"unknown rule: {rule} (see 'gpulint rules')")
    _echo(f"# {r.code} {r.name}\n")
    _echo(f"{r.summary}\n")
    _echo(f"Fix: {r.fix_safety}. Default: {'on' if r.default else 'off'}. Kind: {r.kind}.\n")
    _echo(r.explanation.strip())


def run(
    gpus: int,
    gpu_memory: str | None,
    force_emulation: bool,
    nproc_per_node: int | None,
    rank_prefix: str | None,
    max_steps: int | None,
    max_time: float | None,
    script: str,
    args: tuple[str, ...],
) -> None:
    """Run SCRIPT (like `python SCRIPT ARGS...`) on an emulated CUDA device when torch has no GPU.

    Device mistakes raise the errors a real GPU raises, so they show up on a laptop. With
    --nproc-per-node N the script starts like `torchrun --nproc-per-node N SCRIPT ARGS...`.
    """
    from gpulint.emulate import parse_size, run_script

    if not Path(script).is_file():
        raise _fail(f"script not found: {script}")
    if rank_prefix is not None and nproc_per_node is None:
        raise _fail("--rank-prefix needs --nproc-per-node (it prefixes each rank's lines)")
    memory = None
    if gpu_memory:
        try:
            memory = parse_size(gpu_memory)
        except ValueError as exc:
            raise _fail(f"--gpu-memory: {exc}")
    if nproc_per_node is not None:
        from gpulint.emulate.launch import launch

        options = ["--force"] if force_emulation else []
        if memory is not None:
            options += ["--gpu-memory", str(memory)]
        if max_steps is not None:
            options += ["--max-steps", str(max_steps)]
        if max_time is not None:
            options += ["--max-time", str(max_time)]
        raise _exit_exc(launch(script, list(args), nproc_per_node, options, rank_prefix=rank_prefix))
    raise _exit_exc(
        run_script(script, list(args), gpus=gpus, gpu_memory=memory, force=force_emulation, max_steps=max_steps, max_time=max_time)
    )


def server_cmd(stdio: bool) -> None:
    """Run the Language Server (LSP over stdio) for editors; needs `gpulint[server]`."""
    from gpulint.server import MissingDependency, serve

    try:
        serve()
    except MissingDependency as exc:
        raise _fail(str(exc))



def _decorate(f, decorators) -> None:
    for deco in reversed(decorators):
        f = deco(f)


def _define_click() -> None:
    """The click group and its commands (made on first use of `cli`: the program's plain
    check/fix command lines never import click, see program())."""
    global cli
    if "cli" in globals():
        return
    import click

    def group() -> None:
        """gpulint: find and fix the bugs that crash, silently break or slow down PyTorch training."""

    group.__name__ = "cli"
    cli = click.version_option(__version__, "-V", "--version", prog_name="gpulint", message="%(prog)s %(version)s")(group)
    cli = click.group(context_settings={"help_option_names": ["-h", "--help"]})(cli)
    cli.command("check")(_lint_options(click, check))
    cli.command("fix")(_lint_options(click, fix))
    _decorate(rules_cmd, [
        cli.command("rules"),
        click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True),
        click.option("--config", type=click.Path(dir_okay=False)),
    ])
    _decorate(explain, [
        cli.command(),
        click.argument("rule"),
        click.option("--config", type=click.Path(dir_okay=False)),
    ])
    _decorate(run, [
        cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}),
        click.option("--gpus", type=click.IntRange(1, 64), default=1, show_default=True, help="Number of emulated CUDA devices."),
        click.option("--gpu-memory", metavar="SIZE", help="Emulated memory per device, e.g. 16GiB; allocations past it raise CUDA's out-of-memory error."),
        click.option("--force-emulation", is_flag=True, help="Emulate even when a real CUDA device is available."),
        click.option("--nproc-per-node", type=click.IntRange(1, 64), default=None, metavar="N", help="Start N ranks like torchrun, one emulated GPU each (NCCL served by Gloo)."),
        click.option(
            "--rank-prefix",
            default=None,
            metavar="TEMPLATE",
            help="With --nproc-per-node: put TEMPLATE before each line a rank prints, e.g. '[${role_name}${local_rank}]:' (torchrun --tee's); none by default.",
        ),
        click.option("--max-steps", type=click.IntRange(1), default=None, metavar="N", help="Stop cleanly after N training steps (exit 0): every optimizer of the script has stepped N times (a GAN's generator and discriminator), or one has stepped 10 x N times."),
        click.option("--max-time", type=click.FloatRange(min=0, min_open=True), default=None, metavar="S", help="Stop cleanly after S seconds (exit 0)."),
        click.argument("script", type=click.Path(dir_okay=False)),
        click.argument("args", nargs=-1, type=click.UNPROCESSED),
    ])
    _decorate(server_cmd, [
        cli.command("server"),
        click.option("--stdio", is_flag=True, help="Talk LSP over stdin/stdout (the default and only transport)."),
    ])


def __getattr__(name: str):
    """`cli`, the click group, is made on first use (see _define_click)."""
    if name == "cli":
        _define_click()
        return globals()["cli"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _registry(config: str | None):
    from gpulint.config import ConfigError, Resolver
    from gpulint.registry import Registry, RuleError

    try:
        settings = Resolver(Path(config) if config else None).trusted  # same trust rules as check
        if settings.rule_dirs:
            _echo(f"gpulint: loading rules from {', '.join(str(d) for d in settings.rule_dirs)}", err=True)
        return Registry.load(settings.rule_dirs)
    except (ConfigError, RuleError) as exc:
        raise _fail(str(exc))


def program() -> None:
    """The `gpulint` program (`python -m gpulint`, the `gpulint` command): `main()`, and once a
    check/fix run is over, the process exits at once, without the interpreter's finalization
    (freeing every module, class and object one by one: ~30 ms, a tenth of a check of one
    300-line script). Nothing of a check/fix run waits for it: the report file is closed, the
    cache and the fixed files are written (each by an explicit atomic replace), the worker
    processes are joined, and the output is flushed here first; when flushing fails (a closed
    pipe), or the exit carries a message, the exit takes the usual way. Other commands (`run`
    executes a user's script, whose exit handlers must run) always exit the usual way."""
    try:
        if not _fast_main():
            main()
    except SystemExit as exc:
        if _CHECKED:
            _exit_now(exc.code)
        raise


def _fast_main() -> bool:
    """Run a plain check/fix command line (see _fast_parse) without click, as click would: the
    same keywords to the same command, the same output (`_echo`) and exit status; False
    (nothing done) for any other command line, which main() gives to click. Importing click
    and building the commands is ~5 % of a check of one 300-line script.
    GPULINT_FAST_CLI=0 turns it off."""
    global _PROGRAM, _FAST
    args = sys.argv[1:]
    if not args or args[0] not in ("check", "fix") or os.environ.get("GPULINT_FAST_CLI", "").strip() == "0":
        return False
    if "_GPULINT_COMPLETE" in os.environ:  # shell completion: click's
        return False
    kw = _fast_parse(args[1:])
    if kw is None:
        return False
    _PROGRAM = _FAST = True
    command = check if args[0] == "check" else fix
    try:
        try:
            command(**kw)
        except OSError as exc:  # click: a closed pipe ends the run with status 1, quietly
            import errno

            if exc.errno != errno.EPIPE:
                raise
            sys.stdout = _PacifyFlush(sys.stdout)
            sys.stderr = _PacifyFlush(sys.stderr)
            raise SystemExit(1)
        except (EOFError, KeyboardInterrupt):  # outside the command's own handling: click's
            _echo(err=True)
            _echo("Aborted!", err=True)
            raise SystemExit(1)
    except (EOFError, KeyboardInterrupt):
        raise SystemExit(1)
    raise SystemExit(0)  # click: a command that returns exits 0


class _PacifyFlush:
    """A stream whose flush ignores a closed pipe (click's wrapper of stdout/stderr after EPIPE)."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as exc:
            import errno

            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str):
        return getattr(self.wrapped, attr)


def _exit_now(code) -> None:
    """os._exit with sys.exit's status for `code` once stdout and stderr are flushed; returns
    (nothing done) when flushing fails or `code` is a message."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - the usual exit reports it as before
        return
    os._exit(status)


def main() -> None:
    global _PROGRAM
    _PROGRAM = True
    _define_click()
    try:
        cli.main(prog_name="gpulint")
    except KeyboardInterrupt:  # pragma: no cover
        _echo("gpulint: interrupted", err=True)
        sys.exit(130)
