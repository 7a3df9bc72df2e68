"""The `gpulint` command line (ruff's conventions: exit 0 clean, 1 problems, 2 errors)."""

from __future__ import annotations

import difflib
import json
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
        click.option("--output-format", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True),
        click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file."),
        click.option("--statistics", is_flag=True, help="Show counts per rule instead of each problem."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found."),
        click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing."),
        click.option("--show-fixes", is_flag=True, help="Show what each fix does (check) or what was fixed (fix)."),
        click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply (or count) fixes marked unsafe."),
        click.option("--config", type=click.Path(dir_okay=False), help="Path to a pyproject.toml or gpulint.toml."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
        click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files .gitignore ignores (default: on)."),
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
def check(**kw) -> None:
    """Check files for problems (default path: the current directory)."""
    _lint(fix=False, **kw)


@cli.command()
@_lint_options
def fix(**kw) -> None:
    """Apply safe fixes (and unsafe ones with --unsafe-fixes), then report what remains."""
    _lint(fix=True, **kw)


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
    diff,
    show_fixes,
    unsafe_fixes,
    config,
    no_cache,
    respect_gitignore,
    stdin_filename,
    quiet,
    jobs,
) -> None:
    from gpulint import reporters
    from gpulint.config import ConfigError, common_start, load_settings
    from gpulint.discovery import MissingPath, discover
    from gpulint.engine import BadInput, Options, decode, engine_diagnostic, run_text
    from gpulint.registry import Registry, RuleError
    from gpulint.runner import run_files

    paths = tuple(paths) or (".",)
    use_stdin = paths == ("-",)
    if "-" in paths and not use_stdin:
        raise _fail("'-' (stdin) cannot be combined with other paths")
    try:
        start = Path(stdin_filename).parent if use_stdin and stdin_filename else common_start(paths)
        settings = load_settings(Path(config) if config else None, start)
        registry = Registry.load(settings.rule_dirs)
        enabled_rules = registry.resolve(
            _split(select) if select else settings.select,
            settings.extend_select + _split(extend_select),
            settings.ignore + _split(ignore),
        )
        for pattern, selectors in settings.per_file_ignores.items():
            unknown = [s for s in selectors if s.strip().upper() != "GL000" and not registry.match(s)]
            if unknown:
                raise RuleError(f"unknown rule selector(s) in per-file-ignores for {pattern!r}: {', '.join(unknown)}")
    except (ConfigError, RuleError) as exc:
        raise _fail(str(exc))
    if respect_gitignore is not None:
        settings.respect_gitignore = respect_gitignore
    unsafe = settings.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
    opts = Options(fix=fix or diff, unsafe_fixes=unsafe, write=not diff and not use_stdin)
    enabled = [r.code for r in enabled_rules]

    if use_stdin:
        name = stdin_filename or "-"
        raw = sys.stdin.buffer.read()
        from gpulint.diagnostics import FileResult
        from gpulint.runner import _rules_for, codes_for_file, use_registry

        use_registry(tuple(str(d) for d in settings.rule_dirs), registry)
        res = FileResult(name)
        try:
            src = decode(raw)
            codes = codes_for_file(name, settings, enabled, registry)
            outcome = run_text(name, src.text, _rules_for(codes, tuple(str(d) for d in settings.rule_dirs)), opts)
            res.diagnostics = outcome.diagnostics
            res.fixed = [d.code for d in outcome.fixed]
            res.notes = outcome.dropped
            stdin_out = raw
            if outcome.text != src.text:
                res.original_source, res.fixed_source = src.text, outcome.text
                try:  # the fixed source goes back in the input's own encoding (coding cookie, BOM)
                    stdin_out = outcome.text.encode(src.encoding)
                except UnicodeEncodeError as exc:
                    res.fixed, res.fixed_source = [], None
                    res.diagnostics = [engine_diagnostic(name, f"cannot encode the fixed source as {src.encoding}: {exc.reason}")]
        except BadInput as exc:
            res.diagnostics = [engine_diagnostic(name, str(exc), exc.line, exc.col)]
            stdin_out = raw  # unchanged, byte for byte
        results = [res]
    else:
        try:
            candidates = discover(paths, settings)
        except MissingPath as exc:
            raise _fail(f"path does not exist: {exc}")
        results = run_files(candidates, settings, registry, enabled, opts, use_cache=not no_cache, jobs=jobs)

    diags = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key())
    n_fixed = sum(len(r.fixed) for r in results)

    out_stream = open(output_file, "w", encoding="utf-8") if output_file else None
    try:
        def emit(text: str, err: bool = False) -> None:
            if out_stream is not None and not err:
                out_stream.write(text)
            else:
                click.echo(text, nl=False, err=err)

        for r in results:
            for note in r.notes:
                click.echo(f"{r.path}: warning: {note}", err=True)

        if diff:
            changed = [r for r in results if r.fixed_source is not None]
            for r in changed:
                emit(
                    "".join(
                        difflib.unified_diff(
                            r.original_source.splitlines(keepends=True),
                            r.fixed_source.splitlines(keepends=True),
                            fromfile=f"a/{r.path}",
                            tofile=f"b/{r.path}",
                        )
                    )
                )
            if not quiet:
                would = n_fixed
                click.echo(
                    f"Would fix {would} problem{'s' if would != 1 else ''}." if would else "No fixes available.",
                    err=True,
                )
            raise click.exceptions.Exit(EXIT_PROBLEMS if changed and not exit_zero else EXIT_CLEAN)

        if use_stdin and fix:
            # like ruff: the fixed source goes to stdout, the report to stderr
            out = click.get_binary_stream("stdout")
            out.write(stdin_out)
            out.flush()
            report_err = True
        else:
            report_err = False

        if statistics and output_format == "text":
            emit(reporters.statistics(diags, unsafe), report_err)
        elif output_format == "text":
            if diags:
                emit(reporters.text(diags, unsafe), report_err)
            if show_fixes:
                emit(_show_fixes(results, diags, fix), report_err)
            if not quiet:
                emit(reporters.summary(diags, unsafe, n_fixed if fix else 0), report_err)
        else:
            emit(reporters.render(output_format, diags, enabled_rules, unsafe), report_err)
    finally:
        if out_stream is not None:
            out_stream.close()

    if diags and not exit_zero:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
    raise click.exceptions.Exit(EXIT_CLEAN)


def _show_fixes(results, diags, fix_mode: bool) -> str:
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
                lines.append(f"  {d.path}:{d.line}:{d.col}: {d.code} ({d.fix.applicability}) {d.fix.message}\n")
    return "".join(lines)


@cli.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", type=click.Path(dir_okay=False))
def rules_cmd(output_format: str, config: str | None) -> None:
    """List every rule: code, name, fix safety, default, summary."""
    reg = _registry(config)
    if output_format == "json":
        click.echo(
            json.dumps(
                [
                    {"code": r.code, "name": r.name, "fix": r.fix_safety, "default": bool(r.default), "kind": r.kind, "summary": r.summary}
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
@click.option("--max-steps", type=click.IntRange(1), default=None, metavar="N", help="Stop cleanly after N optimizer steps (exit 0).")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), default=None, metavar="S", help="Stop cleanly after S seconds (exit 0).")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(
    gpus: int,
    gpu_memory: str | None,
    force_emulation: bool,
    nproc_per_node: int | None,
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
        raise click.exceptions.Exit(launch(script, list(args), nproc_per_node, options))
    raise click.exceptions.Exit(
        run_script(script, list(args), gpus=gpus, gpu_memory=memory, force=force_emulation, max_steps=max_steps, max_time=max_time)
    )


def _registry(config: str | None):
    from gpulint.config import ConfigError, load_settings
    from gpulint.registry import Registry, RuleError

    try:
        settings = load_settings(Path(config) if config else None, Path.cwd())
        return Registry.load(settings.rule_dirs)
    except (ConfigError, RuleError) as exc:
        raise _fail(str(exc))


def main() -> None:
    try:
        cli.main(prog_name="gpulint")
    except KeyboardInterrupt:  # pragma: no cover
        click.echo("gpulint: interrupted", err=True)
        sys.exit(130)
