"""``oclsci poisson``: the Poisson problem of ``oclsci jacobi`` solved to a tolerance.

Parses the options into a :class:`~oclsci.poisson.driver.PoissonJob`, lets
:func:`~oclsci.poisson.driver.run_job` run it (over MPI ranks when started by ``mpiexec``),
and prints its summary and residual history.
"""

from __future__ import annotations

import functools
import warnings

import click
import numpy as np

from oclsci.cli import (
    device_option,
    progress_every_option,
    progress_maker,
    quiet_option,
)
from oclsci.errors import OclsciWarning
from oclsci.jacobi.job import picture_error_lines, problem_lines
from oclsci.poisson.driver import PoissonJob, PoissonOutcome, run_job
from oclsci.poisson.multigrid import CYCLES, SMOOTHERS
from oclsci.poisson.solve import DEFAULT_MAX_CYCLES, DEFAULT_TOL, JACOBI_STEPS_PER_CYCLE, METHODS


@click.command("poisson")
@click.argument("input_path", metavar="[INPUT]", required=False,
                type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Solution: .npy (raw values, exact), .png or .pgm (scaled to 8 bits).")
@click.option("--tol", type=float, default=DEFAULT_TOL, show_default=True,
              help="Stop once ||B - L x|| / ||B|| < TOL.")
@click.option("--method", type=click.Choice(METHODS), default="multigrid", show_default=True,
              help="multigrid cycles, conjugate gradients preconditioned by one cycle (cg), "
                   f"or the talk's Jacobi steps ({JACOBI_STEPS_PER_CYCLE} per cycle).")
@click.option("--max-cycles", type=int, default=DEFAULT_MAX_CYCLES, show_default=True,
              help="Most cycles (cg: iterations).")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default=None,
              help="Floating-point type. A solve to a tolerance needs float64's accuracy: "
                   "float32 stops at a residual floor near 1e-6  [default: float64 where the "
                   "device has it]")
@click.option("--cycle", "cycle_kind", type=click.Choice(CYCLES), default="V",
              show_default=True, help="Multigrid cycle.")
@click.option("--smoother", type=click.Choice(SMOOTHERS), default="rbgs", show_default=True,
              help="Red-black Gauss-Seidel or weighted Jacobi.")
@click.option("--sweeps", type=(int, int), default=(2, 2), show_default=True,
              metavar="PRE POST", help="Smoothing sweeps before and after the coarse correction.")
@device_option
@progress_every_option
@quiet_option
def poisson_command(input_path, output, tol, method, max_cycles, dtype, cycle_kind, smoother,
                    sweeps, device, progress_every, quiet):
    """Solve L X = INPUT (5-point Laplacian, zero boundary) to a tolerance by multigrid.

    The system of `oclsci jacobi`, solved in a few cycles whatever the grid's size. Without
    INPUT, reconstructs the built-in 400x266 picture from its Laplacian and prints the
    reconstruction error. A run that ends above --tol (the dtype's accuracy floor, or
    --max-cycles) still writes its result and warns.
    """
    job = PoissonJob(input=input_path, output=output, tol=tol, method=method,
                     max_cycles=max_cycles, dtype=dtype, cycle=cycle_kind, pre=sweeps[0],
                     post=sweeps[1], smoother=smoother, device=device)
    outcome = run_job(job, progress=progress_maker(quiet, progress_every, "poisson",
                                                   unit="cycle", units="cycles"),
                      notify=None if quiet else functools.partial(click.echo, err=True))
    if outcome is None:  # not rank 0: rank 0 warns and prints
        return
    result = outcome.result
    if not result.converged:
        floor = "the residual stopped falling (the dtype's accuracy floor" + (
            "; try --dtype float64)" if result.x.dtype == np.float32 else ")")
        why = floor if result.stalled else f"--max-cycles {max_cycles} reached"
        warnings.warn(f"residual {result.residual:.3e} is above --tol {tol:g} after "
                      f"{result.cycles} cycles: {why}", OclsciWarning, stacklevel=1)
    if not quiet:
        print_summary(outcome)


def print_summary(outcome: PoissonOutcome) -> None:
    """Print the end-of-run summary (device, grid, method, cycles, residuals, error)."""
    compute, problem, result = outcome.compute, outcome.problem, outcome.result
    verdict = "converged" if result.converged else "NOT converged"
    lines = problem_lines(compute, problem, result.x) + [
        f"method      {result.method}: {result.description}",
        f"cycles      {result.cycles} ({verdict}; mean reduction per cycle "
        f"{result.rate():.3g})",
        f"device time {result.device_seconds:.4f} s ({result.timing_source}); "
        f"wall {result.wall_seconds:.4f} s",
        f"residual    {result.residual:.3e} (||L x - B|| / ||B||)",
        "history     " + history_line(result.residuals),
    ]
    if result.extra.get("mpi"):
        lines.append(f"mpi         {result.extra['mpi']}")
    lines += picture_error_lines(problem, result.x)
    lines += [f"wrote       {path}" for path in outcome.written]
    click.echo("\n".join(lines))


HISTORY_SHOWN = 12


def history_line(residuals: list[float]) -> str:
    """The residual history for the summary: every value, or, beyond :data:`HISTORY_SHOWN`
    and two, the first and last six around how many were left out."""
    values = [f"{value:.2e}" for value in residuals]
    if len(values) > HISTORY_SHOWN + 2:  # leave out at least three
        half = HISTORY_SHOWN // 2
        values = [*values[:half], f"... ({len(values) - 2 * half} more) ...", *values[-half:]]
    return " ".join(values)

