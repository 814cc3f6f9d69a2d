"""``oclsci jacobi`` and ``oclsci laplacian``: reconstruct a picture from its Laplacian.

The command parses its options into a :class:`~oclsci.jacobi.job.JacobiJob`, lets
:func:`~oclsci.jacobi.driver.run_job` run it (over MPI ranks when started by ``mpiexec``), and
prints the summary of the outcome.
"""

from __future__ import annotations

import functools

import click
import numpy as np

from oclsci.arrays import check_finite, validate_grid
from oclsci.cli import (
    device_option,
    progress_every_option,
    progress_maker,
    quiet_option,
)
from oclsci.io import check_inputs_kept, check_output_path, read_array, write_array
from oclsci.jacobi import kernels
from oclsci.jacobi.driver import JacobiOutcome, run_job
from oclsci.jacobi.job import OUTPUT_SUFFIXES, JacobiJob, picture_error_lines, problem_lines


@click.command("jacobi")
@click.argument("input_path", metavar="[INPUT]", required=False,
                type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Result: .npy (raw values, exact), .png or .pgm (scaled to 8 bits).")
@click.option("--iterations", "-n", type=int, default=150000, show_default=True,
              help="Total Jacobi steps (including those already in a resumed checkpoint).")
@click.option("--tol", type=float, default=None,
              help="Stop once ||L x - B|| / ||B|| < TOL (checked every --check-every steps).")
@click.option("--check-every", type=int, default=1000, show_default=True,
              help="Steps between residual checks with --tol.")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default=None,
              help="Floating-point type of the computation: float32 as the talk's code, and "
                   "twice as fast; float64 for --tol below about 1e-6  [default: float32; with "
                   "--resume, the checkpoint's]")
@click.option("--kernel", default="auto", show_default=True, help=kernels.choices_help())
@device_option
@click.option("--checkpoint", type=click.Path(dir_okay=False),
              help="Checkpoint file (.npz): written every --checkpoint-every steps and on "
                   "SIGTERM, SIGUSR1, SIGINT or SIGHUP (then exit code 75).")
@click.option("--checkpoint-every", type=int, default=0,
              help="Steps between checkpoints (0: only on a signal).")
@click.option("--resume", type=click.Path(dir_okay=False),
              help="Continue from this checkpoint (INPUT may then be left out).")
@click.option("--compare", type=click.Path(dir_okay=False),
              help="Also write a labelled picture to this .png: the input, the result and, "
                   "on a colour scale, the residual |L X - B| (the built-in picture: the "
                   "original and the error |X - original|).")
@progress_every_option
@quiet_option
def jacobi_command(input_path, output, iterations, tol, check_every, dtype, kernel, device,
                   checkpoint, checkpoint_every, resume, compare, progress_every, quiet):
    """Reconstruct X from its Laplacian INPUT (.npy, or a grayscale image) by Jacobi iteration.

    Without INPUT, reconstructs a built-in 400x266 picture from its Laplacian and prints the
    reconstruction error. Exit code 75 means a signal stopped the run after writing the
    checkpoint: rerun with --resume to finish.
    """
    job = JacobiJob(input=input_path, output=output, iterations=iterations, tol=tol,
                    check_every=check_every, dtype=dtype, kernel=kernel, device=device,
                    checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
                    compare=compare)
    # Under mpiexec, rank 0 reads and writes, every rank solves a slab of rows.
    outcome = run_job(job, progress=progress_maker(quiet, progress_every, "jacobi"),
                      notify=None if quiet else functools.partial(click.echo, err=True))
    if outcome is not None and not quiet:
        print_summary(outcome)


def print_summary(outcome: JacobiOutcome) -> None:
    """Print the end-of-run summary (device, grid, kernel, timings, residual)."""
    result, problem, x = outcome.result, outcome.problem, outcome.x
    m, n = x.shape
    steps = result.extra["steps_run"]
    this_run = f" ({steps} in this run)" if steps != result.iterations else ""
    converged = " (converged: residual below --tol)" if result.converged else ""
    lines = problem_lines(outcome.compute, problem, x) + [
        f"kernel      {result.config.describe()}",
        *([f"queues      {result.extra['queues']}"] if "queues" in result.extra else []),
        f"iterations  {result.iterations}{this_run}{converged}",
        f"device time {result.device_seconds:.4f} s ({result.timing_source}); "
        f"wall {result.wall_seconds:.4f} s",
    ]
    if steps:
        lines.append(f"per step    {result.us_per_iteration:.3f} us, "
                     f"{result.cell_updates_per_second(m * n) / 1e9:.3f} G cell updates/s")
    lines.append(f"residual    {result.residual:.3e} (||L x - B|| / ||B||)")
    lines += picture_error_lines(problem, x)
    if outcome.distribution:
        lines.append(f"mpi         {outcome.distribution}")
    click.echo("\n".join(lines))


@click.command("laplacian")
@click.argument("image", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Laplacian: .npy (float64, exact) or .png/.pgm (scaled to 8 bits).")
def laplacian_command(image, output):
    """Write the 5-point Laplacian of IMAGE (zero boundary): `jacobi` of it returns IMAGE."""
    from oclsci.jacobi.reference import laplacian  # this command only

    check_output_path(output, OUTPUT_SUFFIXES)
    check_inputs_kept({"IMAGE": image}, output=output)
    rhs = validate_grid(read_array(image), f"image {image}")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        result = laplacian(rhs)
    write_array(output, check_finite(result, "the Laplacian"))
