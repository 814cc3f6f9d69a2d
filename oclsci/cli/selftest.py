"""``oclsci selftest``: check every kernel oclsci may choose on a device against NumPy (the
run: :func:`oclsci.selftest.run_selftest`)."""

from __future__ import annotations

import click

from oclsci.cli import device_option
from oclsci.runtime.device import ComputeContext
from oclsci.selftest import run_selftest


@click.command("selftest")
@device_option
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True),
              default=None, metavar="FILE", help="Also write the report as JSON to FILE.")
@click.option("--quick", is_flag=True, help="Smaller problems (same kernels and checks).")
@click.option("--quiet", "-q", is_flag=True,
              help="Print only the verdict line (a failure is still one error line).")
def selftest_command(device: str | None, json_path: str | None, quick: bool,
                     quiet: bool) -> None:
    """Build and run every kernel oclsci may choose on the device (each Jacobi kernel and
    `auto` in float32 and float64, Mandelbrot, the elementwise operations) on small problems,
    compare each with NumPy and print one line per check and a verdict. Exit 0 only when every
    check passes: run it first on a new node or driver."""
    say = (lambda line: None) if quiet else click.echo

    def describe(compute: ComputeContext) -> None:
        say(compute.banner().replace("oclsci: ", "oclsci selftest: ", 1))
        info = compute.describe()
        say(f"  OpenCL {info['opencl_version']}, driver {info['driver_version']}; "
            f"max work-group {info['max_work_group_size']}, local "
            f"{info['local_mem_bytes'] // 1024} KiB, fp64 {'yes' if info['fp64'] else 'no'}")

    outcome = run_selftest(device, quick=quick, json_path=json_path, opened=describe,
                           report=lambda check: say(check.line()))
    compute, results, failed = outcome.compute, outcome.results, outcome.failed
    click.echo(f"selftest {'PASS' if not failed else 'FAIL'}: {len(results) - len(failed)} of "
               f"{len(results)} checks passed on {compute.spec} ({compute.name}) in "
               f"{outcome.seconds:.1f} s")
    outcome.raise_for_failures()
