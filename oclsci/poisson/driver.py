"""One ``oclsci poisson`` run, from its options to its written solution, on one device or many.

:func:`run_job` hands a :class:`PoissonJob` (the options, frozen) to the driver
(:func:`oclsci.driver.drive`) with :class:`PoissonRun`: check the options, read the problem
as ``oclsci jacobi`` does (an input file or the built-in picture,
:func:`oclsci.jacobi.job.load_problem`), solve with :func:`oclsci.poisson.solve` on one device
or :func:`oclsci.poisson.distributed.solve_on_ranks` over MPI ranks, write the solution and
return a :class:`PoissonOutcome` holding what the summary prints. Signals are collected while
kernels build and run; a poll between cycles stops the run (128 + N, nothing written; under
MPI every rank). Once the cycles are done, one waits for the outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.driver import Notify, Placement, ProgressFactory, Writes, drive, on_root, shown
from oclsci.io import check_output_path, write_array
from oclsci.jacobi.job import OUTPUT_SUFFIXES, Problem, load_problem
from oclsci.jacobi.solver import validate_rhs
from oclsci.poisson.solve import (
    DEFAULT_MAX_CYCLES,
    DEFAULT_TOL,
    PoissonResult,
    check_options,
    solve,
)
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.signals import StopFlag


@dataclass(frozen=True)
class PoissonJob:
    """What ``oclsci poisson`` is asked to do: its options (checked by :func:`run_job`)."""

    input: str | None = None  # None: the built-in picture
    output: str | None = None  # .npy, .png or .pgm
    tol: float = DEFAULT_TOL
    method: str = "multigrid"
    max_cycles: int = DEFAULT_MAX_CYCLES
    dtype: str | None = None  # None: float64 where the device has it
    cycle: str = "V"
    pre: int = 2
    post: int = 2
    smoother: str = "rbgs"
    device: str | None = None

    def solve_options(self) -> dict[str, Any]:
        """The options of :func:`oclsci.poisson.solve` (``device``, ``rhs`` aside)."""
        return dict(tol=self.tol, max_cycles=self.max_cycles, method=self.method,
                    dtype=self.dtype, cycle=self.cycle, pre=self.pre, post=self.post,
                    smoother=self.smoother)


@dataclass
class PoissonOutcome:
    """A finished run (on rank 0 of an MPI run): what the summary prints."""

    compute: ComputeContext
    problem: Problem
    result: PoissonResult  # extra["mpi"]: how the ranks shared the levels, for an MPI run
    written: list[str] = field(default_factory=list)


def check_job(job: PoissonJob) -> None:
    """Refuse bad options and an unusable output path before anything is read or computed."""
    check_options(job.tol, job.max_cycles, job.method, job.cycle, job.pre, job.post,
                  job.smoother)
    check_output_path(job.output, OUTPUT_SUFFIXES, {"INPUT": job.input})


def read_problem(job: PoissonJob) -> tuple[Problem, np.ndarray]:
    """Check ``job``, read its problem and check the right-hand side (returned as solved)."""
    check_job(job)
    problem = load_problem(job.input, None)
    return problem, validate_rhs(problem.rhs)


class PoissonRun:
    """``oclsci poisson`` on a placement: the driver's :class:`~oclsci.driver.Runner`."""

    def __init__(self, job: PoissonJob, placement: Placement):
        self.job, self.placement = job, placement
        # One device: a poll that finds a signal raises. Over ranks the answer is agreed
        # first (solve_on_ranks), so that every rank stops at the same poll.
        self.raising = placement.world is None
        self.problem: Problem | None = None  # on the root
        self.rhs: np.ndarray | None = None  # on the root

    def prepare(self) -> None:
        """Check the options and read the problem on the root."""
        read = on_root(self.placement, lambda: read_problem(self.job))
        if self.placement.is_root:
            self.problem, self.rhs = read

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> PoissonOutcome | None:
        """Cycle to the tolerance; progress on the root: cycles done of those expected at
        the current rate, and the residual."""
        job, world = self.job, self.placement.world
        with shown(progress, job.max_cycles) as update:
            report = cycle_report(update, job.tol)
            if world is None:
                result = solve(self.rhs, device=compute, should_stop=stop_flag, progress=report,
                               **job.solve_options())
            else:
                from oclsci.poisson.distributed import solve_on_ranks  # MPI runs only

                result = solve_on_ranks(world, compute, self.rhs, stop_flag=stop_flag,
                                        progress=report, **job.solve_options())
        if not self.placement.is_root:
            return None
        return PoissonOutcome(compute, self.problem, result)

    def outputs(self, outcome: PoissonOutcome) -> Writes:
        """The solution."""
        return [(self.job.output, lambda: write_array(self.job.output, outcome.result.x))]


def run_job(job: PoissonJob, *, placement: Placement | None = None,
            progress: ProgressFactory | None = None,
            notify: Callable[[str], None] | None = None) -> PoissonOutcome | None:
    """Run ``job`` to the end and return its outcome (None on the other ranks of an MPI run).

    ``placement``: the ranks of the launcher's MPI world when it started several, else this
    process's device. ``progress(total, start)``: a progress display counting cycles (its
    ``update`` hears the residual as its note); ``notify(text)`` gets the device lines.
    """
    return drive(job, PoissonRun, placement=placement, progress=progress, notify=notify)


def cycle_report(update: Any, tol: float) -> Any:
    """A progress display's ``update`` as a solver's ``progress(cycles, expected,
    residual)``."""
    if update is None:
        return None
    return lambda cycles, expected, residual: update(
        cycles, expected, f"residual {residual:.3e} (--tol {tol:g})")
