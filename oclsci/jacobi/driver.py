"""One ``oclsci jacobi`` run, from its options to its written outputs, on one device or many.

:func:`run_job` takes a :class:`~oclsci.jacobi.job.JacobiJob` (the options, frozen) and does
all that lies between the command line and the summary: check the options, read the problem
(an input file, the built-in picture or a checkpoint; see :mod:`oclsci.jacobi.job`), solve,
write the outputs atomically (the result, the comparison picture, the final checkpoint) and
return a :class:`JacobiOutcome` holding what the summary prints. It prints nothing itself: the
caller passes ``progress`` (a progress bar) and ``notify`` (the device lines for stderr).

Where the solve runs is a :class:`Placement`: :class:`OneDevicePlacement` by default, or
:class:`oclsci.jacobi.distributed.SlabPlacement`, which cuts the grid into slabs of rows over
MPI ranks (rank 0 reads and writes, every rank solves its slab). The driver knows nothing of
MPI, and the placements nothing of files or options.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

import numpy as np

from oclsci.arrays import check_finite
from oclsci.errors import Interrupted
from oclsci.io import write_array, write_image, write_outputs
from oclsci.jacobi.job import (  # noqa: F401 - the job's names, at hand with the driver
    OUTPUT_SUFFIXES,
    JacobiJob,
    Problem,
    Start,
    check_job,
    load_problem,
    prepare,
)
from oclsci.jacobi.runner import JacobiResult, run
from oclsci.jacobi.solver import JacobiSolver
from oclsci.runtime.device import ComputeContext, create_context
from oclsci.runtime.signals import StopFlag, signal_name

# progress(total, start) -> a context manager yielding update(done, total); see run_job.
ProgressUpdate = Callable[[int, int], None]
ProgressFactory = Callable[[int, int], contextlib.AbstractContextManager[ProgressUpdate]]


@dataclass
class JacobiOutcome:
    """A finished run (on rank 0 of an MPI run): the result and what the summary prints."""

    compute: ComputeContext
    problem: Problem
    x: np.ndarray
    result: JacobiResult  # device and wall seconds: the slowest rank's
    distribution: str | None = None  # how ranks shared the grid, for an MPI run
    written: list[str] = field(default_factory=list)


class Solve(Protocol):
    """A solver set up by a placement (for MPI:
    :class:`~oclsci.jacobi.distributed.DistributedJacobi`)."""

    solver: JacobiSolver

    def run(self, iterations: int, **options: Any) -> JacobiResult:
        """:func:`oclsci.jacobi.run` over the placement (collective)."""

    def gather(self) -> np.ndarray | None:
        """The whole current iterate on the root, None elsewhere (collective)."""


class Placement(Protocol):
    """Where a job runs: this process's device, or slabs over MPI ranks."""

    is_root: bool  # reads the input, writes the outputs, gets the outcome

    def guarded(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run the whole job ``function(*args)``."""

    def agree(self, function: Callable[[], Any]) -> Any:
        """Run ``function`` on every rank; an error on any is raised on all."""

    def share(self, value: Any) -> Any:
        """The root's ``value`` on every rank."""

    def open_device(self, device: str | None, notify: Callable[[str], None] | None) -> Any:
        """This rank's ComputeContext; the root tells ``notify`` the device lines."""

    def build(self, compute: Any, problem: Problem | None, start: Start, kernel: str) -> Solve:
        """This rank's solver, at ``start.iteration`` (``problem`` is None off the root)."""

    def totals(self, result: JacobiResult, solve: Solve) -> tuple[JacobiResult, str | None]:
        """The result with the slowest rank's times, and a line on the distribution."""

    def stopped(self, error: Interrupted, stop_flag: StopFlag, iteration: int,
                checkpoint: str | None) -> NoReturn:
        """Raise what a stop signal ends this rank with."""


@dataclass
class OneDeviceSolve:
    """A :class:`JacobiSolver` on this process's device, as a :class:`Solve`."""

    solver: JacobiSolver

    def run(self, iterations: int, **options: Any) -> JacobiResult:
        """:func:`oclsci.jacobi.run` on the one device."""
        return run(self.solver, iterations, **options)

    def gather(self) -> np.ndarray:
        """The current iterate."""
        return self.solver.read()


class OneDevicePlacement:
    """The default placement: the whole grid on this process's one device."""

    is_root = True

    def guarded(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run ``function(*args)``: its errors go to the caller as they are."""
        return function(*args)

    def agree(self, function: Callable[[], Any]) -> Any:
        """Run ``function``."""
        return function()

    def share(self, value: Any) -> Any:
        """``value`` itself."""
        return value

    def open_device(self, device: str | None, notify: Callable[[str], None] | None) -> Any:
        """The device of ``--device``, ``PYOPENCL_CTX`` or the default choice."""
        compute = create_context(device)
        if notify is not None:
            notify(compute.banner())
        return compute

    def build(self, compute: Any, problem: Problem | None, start: Start, kernel: str) -> Solve:
        """A solver of the whole grid (``prepare`` checked the right-hand side)."""
        solver = JacobiSolver(compute, problem.rhs, x0=problem.x0, dtype=start.dtype,
                              kernel=kernel, rhs_checked=True)
        solver.iteration = problem.iteration
        return OneDeviceSolve(solver)

    def totals(self, result: JacobiResult, solve: Solve) -> tuple[JacobiResult, str | None]:
        """The result as it is; no distribution."""
        return result, None

    def stopped(self, error: Interrupted, stop_flag: StopFlag, iteration: int,
                checkpoint: str | None) -> NoReturn:
        """Exit 75 after a checkpoint, else 128 + the signal's number."""
        raise stop_error(error, iteration, checkpoint) from None


def stop_error(error: Interrupted, iteration: int, checkpoint: str | None) -> Interrupted:
    """What a run stopped by a signal ends with: the runner's ``error`` (exit 75 after its
    checkpoint, else 128 + the signal's number) told as one line naming the signal and what
    was kept."""
    by = "a stop request" if error.signum is None else signal_name(error.signum)
    if checkpoint:
        return Interrupted(f"stopped by {by} at iteration {iteration}; checkpoint written to "
                           f"{checkpoint}: go on with --resume {checkpoint}",
                           signum=error.signum)
    return Interrupted(f"stopped by {by} at iteration {iteration}; no output written (use "
                       "--checkpoint to keep the work)", exit_code=error.exit_code,
                       signum=error.signum)


def run_job(job: JacobiJob, *, placement: Placement | None = None,
            progress: ProgressFactory | None = None,
            notify: Callable[[str], None] | None = None) -> JacobiOutcome | None:
    """Run ``job`` to the end and return its outcome (None on the other ranks of an MPI run).

    ``placement``: :class:`OneDevicePlacement` when None. ``progress(total, start)``, when
    given, is entered around the iteration on the root and yields ``update(done, total)``;
    ``notify(text)`` gets the device lines. Stop signals are collected from the device's
    creation to the end of the iteration: one ends the run with its checkpoint when asked
    (:class:`~oclsci.errors.Interrupted`, exit code 75) or with 128 + its number.
    """
    placement = placement or OneDevicePlacement()
    return placement.guarded(_run_job, job, placement, progress, notify)


def _on_root(placement: Placement, function: Callable[[], Any]) -> Any:
    """``function()`` on the root (None elsewhere), its errors raised on every rank."""
    return placement.agree(lambda: function() if placement.is_root else None)


def _run_job(job: JacobiJob, placement: Placement, progress: ProgressFactory | None,
             notify: Callable[[str], None] | None) -> JacobiOutcome | None:
    prepared = _on_root(placement, lambda: prepare(job))
    problem = prepared[0] if placement.is_root else None
    start: Start = placement.share(prepared[1] if placement.is_root else None)

    # Collect stop signals from here on: one arriving while kernels build is acted on at the
    # first poll after the build (with a checkpoint when asked). Once the steps are done, one
    # is only held until the outputs are written: it never costs the steps.
    with StopFlag() as stop_flag:
        stop_flag.report_late = placement.is_root
        compute = placement.open_device(job.device, notify)
        solve = placement.build(compute, problem, start, job.kernel)

        def write_checkpoint(solver: JacobiSolver) -> None:
            x = solve.gather()
            if placement.is_root:
                _save_checkpoint(job.checkpoint, problem, x, solver.iteration)

        show_progress = progress and placement.is_root and job.iterations > start.iteration
        bar = progress(job.iterations, start.iteration) if show_progress \
            else contextlib.nullcontext()
        try:
            with bar as update:
                result = solve.run(job.iterations, tol=job.tol, check_every=job.check_every,
                                   checkpoint=write_checkpoint if job.checkpoint else None,
                                   checkpoint_every=job.checkpoint_every, progress=update,
                                   should_stop=stop_flag)
        except Interrupted as error:
            stop_flag.stopping()
            placement.stopped(error, stop_flag, solve.solver.iteration, job.checkpoint)
        stop_flag.work_done()
        x = solve.gather()
        # An overflowed run writes no output. A finite final residual already proves x
        # finite (a NaN or infinity in any cell makes its residual term, and the sum, not
        # finite), so only a run without one pays the host's pass over x.
        _on_root(placement, lambda: None if math.isfinite(result.residual) else check_finite(x))
        result, distribution = placement.totals(result, solve)

        def finish() -> JacobiOutcome:
            # The final checkpoint first: were the process killed while the others are
            # written, a resumed run would only write them.
            iteration = solve.solver.iteration
            written = write_outputs([
                (job.checkpoint,
                 lambda: _save_checkpoint(job.checkpoint, problem, x, iteration)),
                (job.output, lambda: write_array(job.output, x)),
                (job.compare, lambda: write_image(job.compare, _comparison(problem, x))),
            ])
            return JacobiOutcome(compute, problem, x, result, distribution, written)

        return _on_root(placement, finish)


def _comparison(problem: Problem, x: np.ndarray) -> np.ndarray:
    """The ``--compare`` picture (loaded only when asked for)."""
    from oclsci.jacobi.figure import comparison

    return comparison(problem.rhs, x, problem.original)


def _save_checkpoint(path: str, problem: Problem, x: np.ndarray, iteration: int) -> None:
    """Write ``x`` at ``iteration`` as a checkpoint of ``problem`` (loaded only when asked
    for)."""
    from oclsci.jacobi.checkpoint import Checkpoint, save_checkpoint

    save_checkpoint(path, Checkpoint(x=x, rhs=problem.rhs, iteration=iteration,
                                     original=problem.original))
