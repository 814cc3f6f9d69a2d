"""One ``oclsci jacobi`` run, from its options to its written outputs, on one device or many.

:func:`run_job` hands a :class:`~oclsci.jacobi.job.JacobiJob` (the options, frozen) to the
driver (:func:`oclsci.driver.drive`) with :class:`JacobiRun`, Jacobi's runner: check the
options, read the problem (an input file, the built-in picture or a checkpoint; see
:mod:`oclsci.jacobi.job`), solve, name the outputs (the result, the comparison picture, the
final checkpoint) and return a :class:`JacobiOutcome` holding what the summary prints. It
prints nothing itself: the caller passes ``progress`` (a progress bar) and ``notify`` (the
device lines for stderr).

The grid lies on the placement the driver picks as a :class:`GridLayout`: :class:`WholeGrid`
on one device, or :class:`oclsci.jacobi.distributed.SlabGrid`, slabs of rows over MPI ranks
(rank 0 reads and writes, every rank solves its slab).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

import numpy as np

from oclsci.arrays import check_finite
from oclsci.driver import Notify, Placement, ProgressFactory, Writes, drive, on_root, shown
from oclsci.errors import Interrupted
from oclsci.io import write_array, write_image
from oclsci.jacobi.job import JacobiJob, Problem, Start, prepare, stop_error
from oclsci.jacobi.runner import JacobiResult, run, whole_grid_solver
from oclsci.jacobi.solver import JacobiSolver
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.signals import StopFlag


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
    """A solver set up by a layout (for MPI:
    :class:`~oclsci.jacobi.distributed.DistributedJacobi`)."""

    solver: JacobiSolver

    def run(self, iterations: int, **options: Any) -> JacobiResult:
        """:func:`oclsci.jacobi.run` over the layout (collective)."""

    def gather(self) -> np.ndarray | None:
        """The whole current iterate on the root, None elsewhere (collective)."""

    def close(self) -> None:
        """Free what the layout's exchanges hold (collective), after the last gather."""


class GridLayout(Protocol):
    """How the grid lies on the placement: whole on one device, or slabs over MPI ranks."""

    def build(self, compute: Any, problem: Problem | None, start: Start, kernel: str) -> Solve:
        """This rank's solver, at ``start.iteration`` (``problem`` is None off the root)."""

    def totals(self, result: JacobiResult, solve: Solve) -> tuple[JacobiResult, str | None]:
        """The result with the slowest rank's times, and a line on the distribution."""

    def stopped(self, error: Interrupted, iteration: int, checkpoint: str | None) -> NoReturn:
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

    def close(self) -> None:
        """One device: no exchanges to free."""


class WholeGrid:
    """The whole grid on this process's one device."""

    def build(self, compute: Any, problem: Problem | None, start: Start, kernel: str) -> Solve:
        """A solver of the whole grid (``prepare`` checked the right-hand side)."""
        solver = whole_grid_solver(compute, problem.rhs, x0=problem.x0, dtype=start.dtype,
                                   kernel=kernel, rhs_checked=True)
        solver.iteration = problem.iteration
        return OneDeviceSolve(solver)

    def totals(self, result: JacobiResult, solve: Solve) -> tuple[JacobiResult, str | None]:
        """The result, with the bands where the grid ran on several queues; no
        distribution."""
        bands = getattr(solve.solver, "describe", None)  # ConcurrentJacobi's, not JacobiSolver's
        if bands is not None:
            result.extra["queues"] = bands()
        return result, None

    def stopped(self, error: Interrupted, iteration: int, checkpoint: str | None) -> NoReturn:
        """Exit 75 after a checkpoint, else 128 + the signal's number."""
        raise stop_error(error, iteration, checkpoint) from None


class JacobiRun:
    """``oclsci jacobi`` on a placement: the driver's :class:`~oclsci.driver.Runner`."""

    raising = False  # a stop signal ends the run with its checkpoint when asked

    def __init__(self, job: JacobiJob, placement: Placement):
        self.job, self.placement = job, placement
        if placement.world is None:
            self.layout: GridLayout = WholeGrid()
        else:
            from oclsci.jacobi.distributed import SlabGrid  # MPI runs only

            self.layout = SlabGrid(placement.world)
        self.problem: Problem | None = None  # on the root
        self.start: Start | None = None
        self.iteration = 0  # the solver's at the end

    def prepare(self) -> None:
        """Check the options and read the problem on the root; every rank gets the Start."""
        placement = self.placement
        prepared = on_root(placement, lambda: prepare(self.job))
        self.problem = prepared[0] if placement.is_root else None
        self.start = placement.share(prepared[1] if placement.is_root else None)

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> JacobiOutcome | None:
        """Iterate to the end (or a stop signal: a checkpoint when asked, then the stop)."""
        job, placement, start = self.job, self.placement, self.start
        solve = self.layout.build(compute, self.problem, start, job.kernel)

        def write_checkpoint(solver: JacobiSolver) -> None:
            x = solve.gather()
            if placement.is_root:
                _save_checkpoint(job.checkpoint, self.problem, x, solver.iteration)

        # Once the steps are done, a stop signal is only held until the outputs are written:
        # it never costs the steps.
        steps = progress if job.iterations > start.iteration else None
        try:
            with shown(steps, job.iterations, start.iteration) as update:
                result = solve.run(job.iterations, tol=job.tol, check_every=job.check_every,
                                   checkpoint=write_checkpoint if job.checkpoint else None,
                                   checkpoint_every=job.checkpoint_every, progress=update,
                                   should_stop=stop_flag)
        except Interrupted as error:
            stop_flag.stopping()
            self.layout.stopped(error, solve.solver.iteration, job.checkpoint)
        stop_flag.work_done()
        x = solve.gather()
        # An overflowed run writes no output. A finite final residual already proves x
        # finite (a NaN or infinity in any cell makes its residual term, and the sum, not
        # finite), so only a run without one pays the host's pass over x.
        on_root(placement, lambda: None if math.isfinite(result.residual) else check_finite(x))
        result, distribution = self.layout.totals(result, solve)
        solve.close()
        self.iteration = solve.solver.iteration
        if not placement.is_root:
            return None
        return JacobiOutcome(compute, self.problem, x, result, distribution)

    def outputs(self, outcome: JacobiOutcome) -> Writes:
        """The final checkpoint first (were the process killed while the others are written,
        a resumed run would only write them), the result, the comparison picture."""
        job, problem, x = self.job, outcome.problem, outcome.x
        return [
            (job.checkpoint,
             lambda: _save_checkpoint(job.checkpoint, problem, x, self.iteration)),
            (job.output, lambda: write_array(job.output, x)),
            (job.compare, lambda: write_image(job.compare, _comparison(problem, x))),
        ]


def run_job(job: JacobiJob, *, placement: Placement | None = None,
            progress: ProgressFactory | None = None,
            notify: Callable[[str], None] | None = None) -> JacobiOutcome | None:
    """Run ``job`` to the end and return its outcome (None on the other ranks of an MPI run).

    ``placement``: the ranks of the launcher's MPI world when it started several, else this
    process's device (:func:`oclsci.driver.launched_placement`). ``progress(total, start)``,
    when given, is entered around the iteration on the root and yields ``update(done,
    total)``; ``notify(text)`` gets the device lines. Stop signals are collected from the
    device's creation to the end of the iteration: one ends the run with its checkpoint when
    asked (:class:`~oclsci.errors.Interrupted`, exit code 75) or with 128 + its number.
    """
    return drive(job, JacobiRun, placement=placement, progress=progress, notify=notify)


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
