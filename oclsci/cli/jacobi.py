"""``oclsci jacobi`` and ``oclsci laplacian``: reconstruct a picture from its Laplacian."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import click
import numpy as np

from oclsci.cli.options import device_option, quiet_option
from oclsci.errors import InputError, Interrupted
from oclsci.runtime.signals import StopFlag

OUTPUT_SUFFIXES = (".npy", ".png", ".pgm")


@dataclass
class Problem:
    """What to solve: the right-hand side, the start and where it came from."""

    rhs: np.ndarray
    x0: np.ndarray | None = None
    iteration: int = 0
    original: np.ndarray | None = None
    source: str = ""
    notes: list = field(default_factory=list)


def load_problem(input_path: str | None, resume: str | None) -> Problem:
    """Read the input file, the built-in picture, or a checkpoint to resume."""
    from oclsci.io import read_array
    from oclsci.jacobi.checkpoint import load_checkpoint
    from oclsci.jacobi.picture import builtin_picture
    from oclsci.jacobi.reference import laplacian

    if resume:
        state = load_checkpoint(resume)
        if input_path is not None:
            rhs = read_array(input_path)
            if rhs.shape != state.rhs.shape or not np.array_equal(
                    rhs.astype(state.rhs.dtype), state.rhs):
                raise InputError(f"checkpoint {resume} was made for another input than "
                                 f"{input_path}")
        return Problem(rhs=state.rhs, x0=state.x, iteration=state.iteration,
                       original=state.original, source=f"checkpoint {resume}")
    if input_path is None:
        picture = builtin_picture()
        return Problem(rhs=laplacian(picture), original=picture,
                       source="built-in 400x266 picture (its Laplacian)")
    return Problem(rhs=read_array(input_path), source=input_path)


def _progress_bar(total: int, start: int):
    bar = click.progressbar(length=max(total - start, 1), label="jacobi", file=sys.stderr,
                            show_eta=True, show_percent=True)
    state = {"shown": start}

    def update(done: int, total_: int) -> None:
        bar.update(done - state["shown"])
        state["shown"] = done

    return bar, update


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
              help="Floating-point type of the computation  [default: float32; with --resume, "
                   "the checkpoint's]")
@click.option("--kernel", default="auto", show_default=True,
              help="Kernel: auto (tuned or per-device default, see `oclsci tune`), "
                   "seed (the talk's), coalesced, blocked, temporal (GPUs), bands (CPUs).")
@device_option
@click.option("--checkpoint", type=click.Path(dir_okay=False),
              help="Checkpoint file (.npz): written every --checkpoint-every steps and on "
                   "SIGTERM/SIGUSR1 (then exit code 75).")
@click.option("--checkpoint-every", type=int, default=0,
              help="Steps between checkpoints (0: only on a signal).")
@click.option("--resume", type=click.Path(dir_okay=False),
              help="Continue from this checkpoint (INPUT may then be left out).")
@click.option("--compare", type=click.Path(dir_okay=False),
              help="Also write a side-by-side picture (input, result) to this .png.")
@quiet_option
def jacobi_command(input_path, output, iterations, tol, check_every, dtype, kernel, device,
                   checkpoint, checkpoint_every, resume, compare, quiet):
    """Reconstruct X from its Laplacian INPUT (.npy, or a grayscale image) by Jacobi iteration.

    Without INPUT, reconstructs a built-in 400x266 picture from its Laplacian and prints the
    reconstruction error. Exit code 75 means a signal stopped the run after writing the
    checkpoint: rerun with --resume to finish.
    """
    from oclsci.jacobi.checkpoint import checkpoint_dtype
    from oclsci.mpi import mpi_world

    explicit_dtype = dtype
    if dtype is None:  # a resumed run goes on in its checkpoint's dtype
        dtype = (checkpoint_dtype(resume) if resume else None) or "float32"
    options = dict(output=output, iterations=iterations, tol=tol, check_every=check_every,
                   dtype=dtype, kernel=kernel, device=device, checkpoint=checkpoint,
                   checkpoint_every=checkpoint_every, compare=compare, quiet=quiet)
    prepare = lambda: _prepare(input_path, resume, explicit_dtype, **options)  # noqa: E731
    world = mpi_world()  # None without MPI or in a world of one rank
    if world is not None:  # several ranks: rank 0 prepares, every rank solves a slab
        from oclsci.mpi import jacobi_distributed

        jacobi_distributed(world, prepare, **options)
        return
    _solve(prepare(), **options)


def _prepare(input_path, resume, explicit_dtype, *, output, iterations, tol, check_every,
             kernel, checkpoint, checkpoint_every, compare, dtype, **_) -> Problem:
    """Check the options and read the problem (on rank 0 only under MPI)."""
    from oclsci.io import check_distinct_outputs, check_output_path
    from oclsci.jacobi import kernels
    from oclsci.jacobi.solver import MAX_ITERATIONS, check_fits, validate_rhs

    if not 0 <= iterations <= MAX_ITERATIONS:
        raise InputError(f"--iterations must be between 0 and 2**53, got {iterations}")
    if tol is not None and not (np.isfinite(tol) and tol > 0):
        raise InputError(f"--tol must be a positive number, got {tol}")
    if check_every < 1 or checkpoint_every < 0:
        raise InputError("--check-every must be >= 1 and --checkpoint-every >= 0")
    kernels.check_choice(kernel)
    check_output_path(output, OUTPUT_SUFFIXES)
    check_output_path(compare, (".png",))
    check_output_path(checkpoint, (".npz",))
    check_distinct_outputs(output=output, compare=compare, checkpoint=checkpoint)
    problem = load_problem(input_path, resume)
    if resume:
        saved = problem.x0.dtype.name
        if explicit_dtype is not None and explicit_dtype != saved:
            raise InputError(f"--dtype {explicit_dtype} contradicts checkpoint {resume}, which "
                             f"holds a {saved} run; leave --dtype out to go on in {saved}")
        if problem.iteration > iterations:
            raise InputError(f"checkpoint {resume} is at iteration {problem.iteration}, past "
                             f"--iterations {iterations} (the total, including the steps "
                             "done): ask for at least that many")
    check_fits(validate_rhs(problem.rhs), dtype, f"{problem.source}")
    return problem


def _solve(problem: Problem, *, output, iterations, tol, check_every, dtype, kernel, device,
           checkpoint, checkpoint_every, compare, quiet) -> None:
    from oclsci.io import side_by_side, write_array, write_image, write_outputs
    from oclsci.jacobi.checkpoint import Checkpoint, save_checkpoint
    from oclsci.jacobi.solver import JacobiSolver, check_finite, run, validate_rhs
    from oclsci.runtime.device import create_context

    validate_rhs(problem.rhs)

    def write_checkpoint(current) -> None:
        save_checkpoint(checkpoint, Checkpoint(x=current.read(), rhs=problem.rhs,
                                               iteration=current.iteration,
                                               original=problem.original))

    # Collect stop signals from here on: one arriving while kernels build is acted on at the
    # first poll after the build (with a checkpoint when asked).
    with StopFlag() as stop_flag:
        compute = create_context(device, quiet=quiet)
        solver = JacobiSolver(compute, problem.rhs, x0=problem.x0, dtype=dtype, kernel=kernel)
        solver.iteration = problem.iteration
        show_progress = not quiet and sys.stderr.isatty() and iterations > problem.iteration
        bar, progress = (_progress_bar(iterations, problem.iteration) if show_progress
                         else (None, None))
        try:
            result = run(solver, iterations, tol=tol, check_every=check_every,
                         checkpoint=write_checkpoint if checkpoint else None,
                         checkpoint_every=checkpoint_every, progress=progress,
                         should_stop=stop_flag)
        except Interrupted as stopped:
            if checkpoint:
                raise Interrupted(f"stopped by {stop_flag.signal_name} at iteration "
                                  f"{solver.iteration}; checkpoint written to {checkpoint}: go "
                                  f"on with --resume {checkpoint}") from None
            raise Interrupted(f"stopped by {stop_flag.signal_name} at iteration "
                              f"{solver.iteration}; no output written (use --checkpoint to "
                              "keep the work)", exit_code=128 + stop_flag.signum) from stopped
        finally:
            if bar is not None:
                bar.render_finish()
        x = check_finite(solver.read())  # an overflowed run writes no output
    # A stop signal taken after the last poll found the run complete: write it all.
    write_outputs([
        (output, lambda: write_array(output, x)),
        (compare, lambda: write_image(compare, side_by_side(
            problem.original if problem.original is not None else problem.rhs, x))),
        (checkpoint, lambda: write_checkpoint(solver)),
    ])
    if not quiet:
        print_summary(compute, solver, result, problem, x)


def print_summary(compute, solver, result, problem: Problem, x: np.ndarray) -> None:
    """Print the end-of-run summary (device, grid, kernel, timings, residual)."""
    cells = solver.m * solver.n
    steps = result.extra["steps_run"]
    this_run = f" ({steps} in this run)" if steps != result.iterations else ""
    converged = " (converged: residual below --tol)" if result.converged else ""
    lines = [
        f"device      {compute.spec} {compute.name}",
        f"input       {problem.source}",
        f"grid        {solver.m} x {solver.n} {solver.dtype.name}",
        f"kernel      {solver.config.describe()}",
        f"iterations  {result.iterations}{this_run}{converged}",
        f"device time {result.device_seconds:.4f} s ({result.timing_source}); "
        f"wall {result.wall_seconds:.4f} s",
    ]
    if steps:
        lines.append(f"per step    {result.us_per_iteration:.3f} us, "
                     f"{result.cell_updates_per_second(cells) / 1e9:.3f} G cell updates/s")
    lines.append(f"residual    {result.residual:.3e} (||L x - B|| / ||B||)")
    if problem.original is not None:
        error = np.abs(x.astype(np.float64) - problem.original)
        lines.append(f"error       max {error.max():.4g}, rms {np.sqrt(np.mean(error**2)):.4g} "
                     "against the original picture (0..255)")
    click.echo("\n".join(lines))


@click.command("laplacian")
@click.argument("image", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Laplacian: .npy (float64, exact) or .png/.pgm (scaled to 8 bits).")
def laplacian_command(image, output):
    """Write the 5-point Laplacian of IMAGE (zero boundary): `jacobi` of it returns IMAGE."""
    from oclsci.io import check_output_path, read_array, write_array
    from oclsci.jacobi.reference import laplacian
    from oclsci.jacobi.solver import check_finite, validate_rhs

    check_output_path(output, OUTPUT_SUFFIXES)
    rhs = validate_rhs(read_array(image))
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        result = laplacian(rhs)
    write_array(output, check_finite(result, "the Laplacian"))
