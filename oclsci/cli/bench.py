"""``oclsci bench``: NumPy and every oclsci variant of the seed's workloads, side by side (the
run: :func:`oclsci.bench.runner.run_bench`; the outputs: :mod:`oclsci.bench.report`)."""

from __future__ import annotations

import functools

import click

from oclsci.bench.core import Progress
from oclsci.bench.report import check_report_paths, to_markdown, write_reports
from oclsci.bench.runner import failures, parse_workloads, run_bench
from oclsci.cli import device_option, quiet_option
from oclsci.errors import InputError, OclsciError

DEFAULT_REPEAT = 3


def _command_line(workloads, device, quick, repeat, json_path, markdown_path, plot_path,
                  quiet) -> list[str]:
    """The command as a user would type it again (options in a fixed order)."""
    words = ["oclsci", "bench", *(workloads or ("all",))]
    if device is not None:
        words += ["--device", device]
    if quick:
        words.append("--quick")
    if repeat != DEFAULT_REPEAT:
        words += ["--repeat", str(repeat)]
    for flag, value in (("--json", json_path), ("--markdown", markdown_path),
                        ("--plot", plot_path)):
        if value:
            words += [flag, str(value)]
    return words + (["--quiet"] if quiet else [])


@click.command("bench")
@click.argument("workloads", nargs=-1,
                metavar="[jacobi|mandelbrot|elementwise|lombscargle|poisson|all]...")
@device_option
@click.option("--quick", is_flag=True,
              help="Smaller problems and fewer steps (about a minute on a 2-core CPU).")
@click.option("--repeat", type=int, default=DEFAULT_REPEAT, show_default=True,
              help="Timed runs per variant, after a warm-up; the median is reported.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write every figure as JSON (schema: oclsci/bench/schema.json).")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the tables as Markdown.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png",
              help="Write a bar chart of the speed-ups (needs matplotlib: oclsci[plot]).")
@quiet_option
def bench_command(workloads, device, quick, repeat, json_path, markdown_path, plot_path, quiet):
    """Time NumPy and every oclsci variant of each workload on one device, in one run.

    Workloads: jacobi (the seed's 400x266 picture for 150000 steps, and large grids sized to
    the device), mandelbrot (1500x1250, 400 iterations), elementwise (axpy); default all.
    Named only: lombscargle (the seed's periodogram) and poisson (512x512 solved to a
    tolerance by multigrid, CG and Jacobi).
    Each result is checked against NumPy's: a wrong one is marked FAILED, gets no speed-up,
    and makes the command exit with status 1 once the outputs are written. The tables go to
    standard output; progress goes to standard error on a terminal. How to read them, and
    the JSON schema: docs/benchmarks.md.
    """
    chosen = parse_workloads(workloads)
    if repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {repeat}")
    check_report_paths(json_path, markdown_path, plot_path)
    command_line = _command_line(workloads, device, quick, repeat, json_path, markdown_path,
                                 plot_path, quiet)
    progress = Progress(enabled=False if quiet else None)
    try:
        report = run_bench(chosen, device=device, quick=quick, repeat=repeat,
                           progress=progress, command_line=command_line,
                           notify=None if quiet else functools.partial(click.echo, err=True))
    finally:
        progress.close()
    write_reports(report, json_path=json_path, markdown_path=markdown_path,
                  plot_path=plot_path)
    if not quiet:
        click.echo(to_markdown(report))
    failed = failures(report)
    if failed:
        raise OclsciError(f"{len(failed)} variant(s) failed their check or did not run: "
                          f"{', '.join(failed)} (outputs written)")
