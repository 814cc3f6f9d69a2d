"""``oclsci selftest``: check every kernel oclsci may choose on a device against NumPy."""

from __future__ import annotations

import json
from pathlib import Path

import click

from oclsci.cli import device_option
from oclsci.errors import OclsciError
from oclsci.io import atomic_path, check_output_path
from oclsci.runtime.device import create_context
from oclsci.runtime.launch import timed
from oclsci.selftest import selftest, summary


class SelftestFailed(OclsciError):
    """At least one check of ``oclsci selftest`` failed (exit 1)."""


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
    if json_path:  # an unwritable report fails now, not after the checks (any suffix)
        check_output_path(json_path, (Path(json_path).suffix.lower(),))
    compute = create_context(device)
    say = (lambda line: None) if quiet else click.echo
    say(compute.banner().replace("oclsci: ", "oclsci selftest: ", 1))
    info = compute.describe()
    say(f"  OpenCL {info['opencl_version']}, driver {info['driver_version']}; "
        f"max work-group {info['max_work_group_size']}, local "
        f"{info['local_mem_bytes'] // 1024} KiB, fp64 {'yes' if info['fp64'] else 'no'}")
    seconds, results = timed(
        lambda: selftest(compute, quick=quick, report=lambda check: say(check.line())))
    failed = [r for r in results if not r.passed]
    if json_path:
        with atomic_path(json_path) as temporary:
            temporary.write_text(json.dumps(summary(compute, results, seconds), indent=2) + "\n")
    verdict = "PASS" if not failed else "FAIL"
    click.echo(f"selftest {verdict}: {len(results) - len(failed)} of {len(results)} checks "
               f"passed on {compute.spec} ({compute.name}) in {seconds:.1f} s")
    if failed:
        raise SelftestFailed(f"selftest: {len(failed)} of {len(results)} checks failed on "
                             f"{compute.spec} ({compute.name}): "
                             + ", ".join(r.name for r in failed[:5])
                             + (" ..." if len(failed) > 5 else ""))
