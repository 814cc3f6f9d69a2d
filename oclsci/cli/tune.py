"""``oclsci tune``: find the fastest exact Jacobi kernel configuration for a device, and cache it.

The search (:func:`oclsci.jacobi.tuner.tune`) tries tile shapes, steps per launch and
work-group shapes within a time budget, checks every candidate bit for bit, and stores the
winners in the tuning cache (``$OCLSCI_TUNE_CACHE``, else ``$XDG_CACHE_HOME/oclsci/tuning.json``,
else ``~/.cache/oclsci/tuning.json``) under the device, its driver, oclsci's version, the dtype
and the grid's size class. ``oclsci jacobi --kernel auto`` then uses them.
"""

from __future__ import annotations

import json
import math
import re

import click
import numpy as np

from oclsci.cli import device_option, dtype_option, quiet_option
from oclsci.errors import InputError
from oclsci.jacobi import kernels
from oclsci.jacobi.tuner import save_report, tune
from oclsci.kernelspec.registry import check_writable
from oclsci.runtime.device import create_context


def parse_size(text: str) -> tuple[int, int]:
    """``MxN`` (rows x columns) as a pair of positive integers."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX*,]\s*(\d+)\s*", text or "")
    if not match:
        raise InputError(f"--size must look like ROWSxCOLUMNS (e.g. 266x400), got {text!r}")
    m, n = int(match.group(1)), int(match.group(2))
    if m < 1 or n < 1:
        raise InputError(f"--size must be at least 1x1, got {text!r}")
    return m, n


@click.command("tune")
@device_option
@click.option("--size", default="266x400", show_default=True, metavar="MxN",
              help="Grid to tune for, rows x columns (the cache keeps one entry per size class: "
                   "grids within a factor of about 1.4 in cell count share it).")
@dtype_option
@click.option("--budget", type=float, default=30.0, show_default=True, metavar="SECONDS",
              help="How long the search may take, all of it: the set-up, every candidate's "
                   "build, check and timing, and the re-timing of the fastest (not the "
                   "device's start-up, nor saving the cache). At least one candidate is "
                   "tried, however long it takes.")
@click.option("--kernel", "kernels", multiple=True,
              type=click.Choice(kernels.tunable()),
              help="Kernel(s) to tune (repeatable; default: "
                   f"{' and '.join(kernels.tuned_by_default(is_cpu=False))} on GPUs, "
                   f"{' and '.join(kernels.tuned_by_default(is_cpu=True))} on CPUs).")
@click.option("--no-save", is_flag=True, help="Search and print, but leave the cache alone.")
@click.option("--json", "as_json", is_flag=True, help="Print the trials as JSON.")
@quiet_option
def tune_command(device, size, dtype, budget, kernels, no_save, as_json, quiet):
    """Time candidate Jacobi kernel configurations on a device; cache the fastest exact one."""
    if not (budget > 0 and math.isfinite(budget)):
        raise InputError(f"--budget must be a positive number of seconds, got {budget}")
    shape = parse_size(size)
    if not no_save:
        check_writable()  # an unwritable cache fails now, not after the search
    compute = create_context(device, quiet=quiet or as_json)
    dtype = compute.check_dtype(np.dtype(dtype))
    log = None if (quiet or as_json) else (lambda message: click.echo(message, err=True))
    if log:
        log(f"tuning Jacobi {shape[0]}x{shape[1]} {dtype.name} for about {budget:g} s")
    report = tune(compute, shape, dtype, budget=budget, kernels=tuple(kernels) or None, log=log)
    best = report.best
    path = None
    if best is not None and not no_save:
        path = save_report(report)
    if as_json:
        click.echo(json.dumps({
            "key": report.key, "shape": list(shape), "dtype": dtype.name,
            "seconds": report.seconds, "cache": str(path) if path else None,
            "best": best.config.to_json() if best else None,
            "trials": [dict(t.config.to_json(), status=t.status,
                            us_per_step=(1e6 * t.seconds_per_step if t.ok else None))
                       for t in report.trials]}, indent=1))
        return
    if best is None:
        raise InputError("no candidate configuration ran correctly on this device")
    if not quiet:
        click.echo(f"{len(report.trials)} configurations tried in {report.seconds:.1f} s on "
                   f"{compute.name}; fastest of each kernel:")
        for trial in sorted(report.best_by_kernel().values(),
                            key=lambda trial: trial.seconds_per_step):
            click.echo(f"  {1e6 * trial.seconds_per_step:10.3f} us/step  "
                       f"{trial.config.describe()}")
        wrong = [t for t in report.trials if t.status.startswith("WRONG")]
        if wrong:
            click.echo(f"  ({len(wrong)} configuration(s) gave wrong results and were dropped)")
        click.echo(f"best: {best.config.describe()}"
                   + (f"; saved to {path}" if path else " (not saved)"))
