"""``oclsci tune``: find the fastest exact kernel configuration for a device, and cache it:
Jacobi's, or with ``--stencil EXPR`` a user's stencil's.

The search (:func:`oclsci.jacobi.tuner.tune`, :func:`oclsci.stencil.tuner.tune`) tries tile
shapes, steps per launch and work-group shapes within a time budget, checks every candidate
bit for bit, and stores the winners in the tuning cache (``$OCLSCI_TUNE_CACHE``, else
``$XDG_CACHE_HOME/oclsci/tuning.json``, else ``~/.cache/oclsci/tuning.json``) under the device,
its driver, oclsci's version, the dtype and the grid's size class (and a stencil's structure).
``--kernel auto`` (``oclsci jacobi``, ``oclsci stencil``, ``Stencil.run``) then uses them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import click

from oclsci.cli import device_option, dtype_option, quiet_option
from oclsci.cli.stencil import parse_params
from oclsci.errors import InputError, UnknownNameError
from oclsci.jacobi import kernels
from oclsci.kernelspec.registry import check_writable
from oclsci.kernelspec.search import save_report
from oclsci.stencil import kernels as stencil_kernels
from oclsci.stencil import tuner as stencil_tuner
from oclsci.stencil.api import Stencil
from oclsci.tuning import tune_kernels

JACOBI_SIZE = (266, 400)
JACOBI_KERNELS = kernels.tunable()


def parse_size(text: str) -> tuple[int, ...]:
    """``MxN`` (rows x columns) or ``PxMxN`` (3-D) as positive integers."""
    match = re.fullmatch(r"\s*\d+\s*(?:[xX*,]\s*\d+\s*){1,2}", text or "")
    if not match:
        raise InputError(f"--size must look like ROWSxCOLUMNS (e.g. 266x400), got {text!r}")
    sizes = tuple(int(v) for v in re.findall(r"\d+", text))
    if min(sizes) < 1:
        raise InputError(f"--size must be at least 1 along each axis, got {text!r}")
    return sizes


def check_kernels(names: tuple[str, ...], known: tuple[str, ...], what: str) -> None:
    """Refuse (exit 2) a ``--kernel`` that the search asked for does not have."""
    for name in names:
        if name not in known:
            raise UnknownNameError(f"--kernel {name} is not a {what} kernel; choose "
                                   f"{', '.join(known)}")


@click.command("tune")
@device_option
@click.option("--stencil", "expression", default=None, metavar="EXPR",
              help="Tune this stencil (as `oclsci stencil` takes it) instead of Jacobi; its "
                   "stencil kernels (docs/stencil.md).")
@click.option("--param", "param_pairs", multiple=True, metavar="NAME=VALUE",
              help="With --stencil: a scalar parameter, as for `oclsci stencil` (the other "
                   "names are read-only fields, filled with values of the search's own).")
@click.option("--size", default=None, metavar="MxN|PxMxN",
              help="Grid to tune for, rows x columns (3-D stencils: planes x rows x columns; "
                   "default 266x400 for Jacobi, 2048x2048 or 256x256x256 for a stencil). The "
                   "cache keeps one entry per size class: grids within a factor of about 1.4 "
                   "in cell count share it.")
@dtype_option
@click.option("--budget", type=float, default=30.0, show_default=True, metavar="SECONDS",
              help="How long the search may take, all of it: the set-up, every candidate's "
                   "build, check and timing, and the re-timing of the fastest (not the "
                   "device's start-up, nor saving the cache). At least one candidate is "
                   "tried, however long it takes.")
@click.option("--kernel", "kernels", multiple=True,
              type=click.Choice(JACOBI_KERNELS + tuple(stencil_kernels.KERNELS)),
              help="Kernel(s) to tune (repeatable; default for Jacobi: "
                   f"{' and '.join(kernels.tuned_by_default(is_cpu=False))} on GPUs, "
                   f"{' and '.join(kernels.tuned_by_default(is_cpu=True))} on CPUs; for a "
                   "stencil: step, tiled and stream on GPUs, step on CPUs).")
@click.option("--mpi", "mpi", is_flag=True,
              help="Under mpiexec: measure the constants of the MPI exchange plan (launch "
                   "cost, copy rates, hand-over rates between ranks) and cache them; "
                   "`oclsci jacobi` then chooses its exchange period and overlap from them "
                   "(docs/mpi.md).")
@click.option("--no-save", is_flag=True, help="Search and print, but leave the cache alone.")
@click.option("--json", "as_json", is_flag=True, help="Print the trials as JSON.")
@quiet_option
def tune_command(device, expression, param_pairs, size, dtype, budget, kernels, mpi, no_save,
                 as_json, quiet):
    """Time candidate kernel configurations on a device, Jacobi's or (--stencil) a
    stencil's; cache the fastest exact one. With --mpi: the MPI exchange plan's constants."""
    if mpi:
        tune_mpi(device, no_save, as_json, quiet)
        return
    if not (budget > 0 and math.isfinite(budget)):
        raise InputError(f"--budget must be a positive number of seconds, got {budget}")
    shape = parse_size(size) if size is not None else None
    stencil = None
    if expression is not None:
        stencil = Stencil(expression, params=parse_params(param_pairs))
        check_kernels(kernels, tuple(stencil_kernels.KERNELS), "stencil")
        shape = stencil_tuner.check_shape(stencil, shape or stencil_tuner.default_shape(stencil))
    else:
        if param_pairs:
            raise InputError("--param is for --stencil")
        check_kernels(kernels, JACOBI_KERNELS, "Jacobi")
        shape = shape or JACOBI_SIZE
        if len(shape) != 2:
            raise InputError(f"--size: Jacobi's grid is 2-D, got {size!r}")
    if not no_save:
        check_writable()  # an unwritable cache fails now, not after the search
    log = None if (quiet or as_json) else (lambda message: click.echo(message, err=True))
    report, device_name, dtype = tune_kernels(device, shape, dtype, budget=budget,
                                              stencil=stencil, kernels=tuple(kernels) or None,
                                              log=log, quiet=quiet or as_json)
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
                   f"{device_name}; fastest of each kernel:")
        for trial in sorted(report.best_by_kernel().values(),
                            key=lambda trial: trial.seconds_per_step):
            click.echo(f"  {1e6 * trial.seconds_per_step:10.3f} us/step  "
                       f"{trial.config.describe()}")
        wrong = [t for t in report.trials if t.status.startswith("WRONG")]
        if wrong:
            click.echo(f"  ({len(wrong)} configuration(s) gave wrong results and were dropped)")
        click.echo(f"best: {best.config.describe()}"
                   + (f"; saved to {path}" if path else " (not saved)"))


def tune_mpi(device: str | None, no_save: bool, as_json: bool, quiet: bool) -> None:
    """``oclsci tune --mpi``: measure and cache the exchange plan's constants (rank 0 prints)."""
    from oclsci.mpi.constants import describe, tune_constants

    if not no_save:
        check_writable()
    notify = None if (quiet or as_json) else (lambda message: click.echo(message, err=True))
    result = tune_constants(device, save=not no_save, notify=notify)
    if result is None:
        return
    constants, key, path = result
    if as_json:
        click.echo(json.dumps({"key": key, "cache": str(path) if path else None,
                               "constants": dataclasses.asdict(constants)}, indent=1))
        return
    if not quiet:
        for line in describe(constants):
            click.echo(line)
        click.echo(f"MPI constants for {key}" + (f"; saved to {path}" if path
                                                  else " (not saved)"))
