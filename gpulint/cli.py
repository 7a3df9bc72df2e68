"""The `gpulint` command line (ruff's conventions: exit 0 clean, 1 problems, 2 errors)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

import click

from gpulint import __version__

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


def _split(values: Sequence[str]) -> list[str]:
    out = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"gpulint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _lint_options(f):
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, help="Rules to enable (codes, prefixes like GL1, names); replaces the configured set."),
        click.option("--extend-select", multiple=True, help="Rules to enable on top of the selected ones."),
        click.option("--ignore", multiple=True, help="Rules to disable."),
        click.option(
            "--output-format",
            type=click.Choice(["text", "full", "concise", "json", "sarif", "github"]),
            default=None,
            help="text (one line per problem; 'concise' is an alias), full (with the source line; the default on a terminal), json, sarif, github.",
        ),
        click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the report to this file (its folders are created)."),
        click.option("--statistics", is_flag=True, help="Show counts per rule and the total instead of each problem (JSON with --output-format json)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found."),
        click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if no problem remains."),
        click.option("--fix/--no-fix", "fix_flag", default=None, help="check: apply fixes (the same as `gpulint fix`)."),
        click.option("--fix-only", is_flag=True, help="Apply fixes; report and fail only on nothing else."),
        click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing."),
        click.option("--show-fixes", is_flag=True, help="Show what each fix does (check) or what was fixed (fix)."),
        click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply (or count) fixes marked unsafe."),
        click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a problem (adopting gpulint on existing code)."),
        click.option("--config", type=click.Path(dir_okay=False), help="Path to a pyproject.toml or gpulint.toml (used for every file)."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
        click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files .gitignore ignores (default: on)."),
        click.option("--force-exclude/--no-force-exclude", default=None, help="Apply exclude patterns to files named on the command line too (pre-commit)."),
        click.option("--show-files", is_flag=True, help="List the files that would be checked, and exit."),
        click.option("--show-settings", is_flag=True, help="Print the settings that apply to the first path, and exit."),
        click.option("--stdin-filename", help="The name of the file read from stdin (with PATHS '-')."),
        click.option("-q", "--quiet", is_flag=True, help="Print only the problems, no summary."),
        click.option("-j", "--jobs", type=click.IntRange(1, 256), help="Worker processes (default: one per core)."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gpulint", message="%(prog)s %(version)s")
def cli() -> None:
    """gpulint: find and fix the bugs that crash, silently break or slow down PyTorch training."""


@cli.command()
@_lint_options
def check(fix_flag, **kw) -> None:
    """Check files for problems (default path: the current directory). `check --fix` is `fix`."""
    _interruptible(_lint, fix=bool(fix_flag) or kw["fix_only"], **kw)


@cli.command()
@_lint_options
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
        click.echo("gpulint: interrupted", err=True)
        raise click.exceptions.Exit(130)


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
            click.echo(f"gpulint: loading rules from {', '.join(str(d) for d in trusted.rule_dirs)}", err=True)
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

                click.echo(json.dumps(doc, indent=2))
                raise click.exceptions.Exit(EXIT_CLEAN)
            if show_files:
                from gpulint.runner import display_path

                for shown in sorted(display_path(c.path) for c in candidates):
                    click.echo(shown)
                raise click.exceptions.Exit(EXIT_CLEAN)
            for s, _ in groups.values():
                enabled_for(s)
    except MissingPath as exc:
        raise _fail(f"path does not exist: {exc}")
    except (ConfigError, RuleError) as exc:
        raise _fail(str(exc))
    for w in resolver.warnings:
        click.echo(f"gpulint: warning: {w}", err=True)

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
            click.echo(
                f"gpulint: warning: no files to check under {', '.join(paths)} "
                f"(included: {', '.join(trusted.all_includes)}; see --show-files)",
                err=True,
            )

    if add_noqa:
        from gpulint.suppression import add_noqa_to_files

        added, notes = add_noqa_to_files(results)
        for note in notes:
            click.echo(f"gpulint: warning: {note}", err=True)
        if not quiet:
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        raise click.exceptions.Exit(EXIT_CLEAN)

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
                click.echo(text, nl=False, err=err, color=True if color and not err else None)

        for r in results:
            for note in r.notes:
                click.echo(f"{r.path}: warning: {note}", err=True)

        if diff:
            changed = [r for r in results if r.fixed_source is not None]
            for r in changed:
                emit(_unified_diff(r))
            if not quiet:
                would = n_fixed
                click.echo(
                    f"Would fix {would} problem{'s' if would != 1 else ''}." if would else "No fixes available.",
                    err=True,
                )
            raise click.exceptions.Exit(EXIT_PROBLEMS if changed and not exit_zero else EXIT_CLEAN)

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
        raise click.exceptions.Exit(EXIT_PROBLEMS)
    if fix_only:
        raise click.exceptions.Exit(EXIT_CLEAN)
    if diags and not exit_zero:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
    raise click.exceptions.Exit(EXIT_CLEAN)


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


@cli.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", type=click.Path(dir_okay=False))
def rules_cmd(output_format: str, config: str | None) -> None:
    """List every rule: code, name, fix safety, default, summary."""
    reg = _registry(config)
    if output_format == "json":
        import json

        click.echo(
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
    click.echo(f"{'code':<6}  {'name':<{w_name}}  {'fix':<6}  {'default':<7}  summary")
    for r in reg.rules:
        click.echo(f"{r.code:<6}  {r.name:<{w_name}}  {r.fix_safety:<6}  {'on' if r.default else 'off':<7}  {r.summary}")


@cli.command()
@click.argument("rule")
@click.option("--config", type=click.Path(dir_okay=False))
def explain(rule: str, config: str | None) -> None:
    """Show a rule's documentation, with a bad and a good example."""
    reg = _registry(config)
    r = reg.lookup(rule)
    if r is None:
        raise _fail(f"unknown rule: {rule} (see 'gpulint rules')")
    click.echo(f"# {r.code} {r.name}\n")
    click.echo(f"{r.summary}\n")
    click.echo(f"Fix: {r.fix_safety}. Default: {'on' if r.default else 'off'}. Kind: {r.kind}.\n")
    click.echo(r.explanation.strip())


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--gpus", type=click.IntRange(1, 64), default=1, show_default=True, help="Number of emulated CUDA devices.")
@click.option("--gpu-memory", metavar="SIZE", help="Emulated memory per device, e.g. 16GiB; allocations past it raise CUDA's out-of-memory error.")
@click.option("--force-emulation", is_flag=True, help="Emulate even when a real CUDA device is available.")
@click.option("--nproc-per-node", type=click.IntRange(1, 64), default=None, metavar="N", help="Start N ranks like torchrun, one emulated GPU each (NCCL served by Gloo).")
@click.option(
    "--rank-prefix",
    default=None,
    metavar="TEMPLATE",
    help="With --nproc-per-node: put TEMPLATE before each line a rank prints, e.g. '[${role_name}${local_rank}]:' (torchrun --tee's); none by default.",
)
@click.option("--max-steps", type=click.IntRange(1), default=None, metavar="N", help="Stop cleanly after N training steps (exit 0): every optimizer of the script has stepped N times (a GAN's generator and discriminator), or one has stepped 10 x N times.")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), default=None, metavar="S", help="Stop cleanly after S seconds (exit 0).")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
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
        raise click.exceptions.Exit(launch(script, list(args), nproc_per_node, options, rank_prefix=rank_prefix))
    raise click.exceptions.Exit(
        run_script(script, list(args), gpus=gpus, gpu_memory=memory, force=force_emulation, max_steps=max_steps, max_time=max_time)
    )


@cli.command("server")
@click.option("--stdio", is_flag=True, help="Talk LSP over stdin/stdout (the default and only transport).")
def server_cmd(stdio: bool) -> None:
    """Run the Language Server (LSP over stdio) for editors; needs `gpulint[server]`."""
    from gpulint.server import MissingDependency, serve

    try:
        serve()
    except MissingDependency as exc:
        raise _fail(str(exc))


def _registry(config: str | None):
    from gpulint.config import ConfigError, Resolver
    from gpulint.registry import Registry, RuleError

    try:
        settings = Resolver(Path(config) if config else None).trusted  # same trust rules as check
        if settings.rule_dirs:
            click.echo(f"gpulint: loading rules from {', '.join(str(d) for d in settings.rule_dirs)}", err=True)
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
        main()
    except SystemExit as exc:
        if _CHECKED:
            _exit_now(exc.code)
        raise


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
    try:
        cli.main(prog_name="gpulint")
    except KeyboardInterrupt:  # pragma: no cover
        click.echo("gpulint: interrupted", err=True)
        sys.exit(130)
