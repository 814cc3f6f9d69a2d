"""One ``oclsci stencil`` run, from its options to its written field, on one device or over
MPI ranks.

:func:`run_job` hands a :class:`StencilJob` (the options, frozen) to the driver
(:func:`oclsci.driver.drive`) with :class:`StencilRun`: parse the expression (every rank),
check the outputs and read the inputs or the checkpoint to resume (the root, the problem
checked and rounded before any device work), run the steps on the kernel asked for (``auto``
by default: :mod:`oclsci.stencil.kernels`), write the field and return a
:class:`StencilOutcome` holding what the summary prints.

The grid lies on the placement as a layout: :class:`WholeGrid` on one device, or
:class:`oclsci.stencil.distributed.SlabLayout` (slabs over the ranks of a launcher's MPI
world). Signals are collected while kernels build and run and acted on between chunks of
steps, agreed over ranks: with ``--checkpoint`` the state is written and the run ends with
exit 75 (``--resume`` goes on, on any number of ranks), else with 128 + N and nothing
written. Once the steps are done, a signal waits for the outputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import numpy as np

from oclsci.arrays import check_finite
from oclsci.driver import Notify, Placement, ProgressFactory, Writes, drive, on_root, shown
from oclsci.errors import InputError, Interrupted
from oclsci.io import (
    check_distinct_outputs,
    check_inputs_kept,
    check_output_path,
    existing_file,
    read_npy,
    write_npy,
)
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.signals import StopFlag
from oclsci.stencil.api import Stencil
from oclsci.stencil.periodic import PeriodicGrid
from oclsci.stencil.problem import Problem
from oclsci.stencil.runner import run_steps
from oclsci.stencil.solver import StencilSolver, divides


@dataclass(frozen=True)
class StencilJob:
    """What ``oclsci stencil`` is asked to do: its options (checked by :func:`run_job`)."""

    expression: str
    input: str | None  # u at the start, .npy (None: resumed from the checkpoint)
    steps: int  # in all, a resumed checkpoint's steps included
    output: str  # .npy
    fields: Mapping[str, str] = field(default_factory=dict)  # name -> .npy
    params: Mapping[str, float] = field(default_factory=dict)
    prev: str | None = None  # u.prev at the start, .npy (default: the input)
    boundary: float | str = 0.0  # or "periodic"
    dtype: str | None = None  # None: INPUT's (float32 or float64), the checkpoint's on resume
    device: str | None = None
    kernel: str = "auto"  # or a kernel's name (oclsci.stencil.kernels)
    kernel_params: Mapping[str, int] = field(default_factory=dict)  # the kernel's, by name
    checkpoint: str | None = None  # .npz
    checkpoint_every: int = 0  # steps; 0: only on a stop signal and at the end
    resume: str | None = None  # a checkpoint to go on from


@dataclass
class StencilOutcome:
    """A finished run (on rank 0 of an MPI run): what the summary prints."""

    compute: ComputeContext
    stencil: Stencil
    problem: Problem
    result: np.ndarray
    started: float  # time.perf_counter() once the inputs were read and checked
    kernel: str = ""  # the kernel that ran (rank 0's), with its parameters
    first_step: int = 0  # the steps a resumed checkpoint had done
    distribution: str | None = None  # how ranks shared the grid, for an MPI run
    step_seconds: float = 0.0  # the steps' wall time (under MPI: the slowest rank's)
    boundary: str | None = None  # how periodic boundaries ran (None: a boundary value)
    written: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Start:
    """What every rank needs: the problem without its arrays, the grid's shape, the step the
    run starts at."""

    skeleton: Problem
    shape: tuple[int, ...]
    step: int


class WholeGrid:
    """The whole grid on this process's one device."""

    def __init__(self, compute: Any, problem: Problem, job: StencilJob):
        params = dict(job.kernel_params) or None
        if problem.periodic:  # the solver's grid widened by ghost cells, refreshed as a halo
            self.halo = PeriodicGrid(compute, problem, kernel=job.kernel, kernel_params=params)
            self.solver, self.levels = self.halo.solver, self.halo
        else:
            self.solver = self.levels = StencilSolver(compute, problem, kernel=job.kernel,
                                                      kernel_params=params)
            self.halo = None

    def gather(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The field and the previous level (None without u.prev)."""
        return self.levels.read(), self.levels.read_prev()

    def describe(self) -> None:
        """No distribution."""

    @staticmethod
    def close() -> None:
        """One device: no exchanges to free."""

    def boundary(self) -> str | None:
        """How periodic boundaries ran, for the summary (None: a boundary value)."""
        return self.halo.describe() if self.halo else None

    @staticmethod
    def ready() -> None:
        """One device: nothing to wait for."""

    @staticmethod
    def slowest(seconds: float) -> float:
        """One device: its own time."""
        return seconds

    @staticmethod
    def stopped(error: Interrupted, step: int, checkpoint: str | None) -> NoReturn:
        """Exit 75 after a checkpoint, else 128 + the signal's number."""
        from oclsci.checkpoints import stop_error  # stopped runs only

        raise stop_error(error, step, checkpoint, "step") from None


def check_job(job: StencilJob) -> None:
    """Refuse bad options and unusable output paths before anything is read or computed."""
    if job.input is None and not job.resume:
        raise InputError("INPUT.npy is needed (or --resume CHECKPOINT to go on from one)")
    if job.checkpoint_every < 0:
        raise InputError(f"--checkpoint-every must be >= 0, got {job.checkpoint_every}")
    if job.checkpoint_every and not job.checkpoint:
        raise InputError(f"--checkpoint-every {job.checkpoint_every} needs --checkpoint "
                         "FILE.npz to write to")
    inputs = {"INPUT": job.input, "--prev": job.prev,
              **{f"--field {name}": path for name, path in job.fields.items()}}
    check_output_path(job.output, (".npy",), inputs={**inputs, "--resume": job.resume})
    check_output_path(job.checkpoint, (".npz",))
    check_distinct_outputs(output=job.output, checkpoint=job.checkpoint)
    # --checkpoint may name the --resume file: the run goes on writing it.
    check_inputs_kept(inputs, checkpoint=job.checkpoint)


def load_problem(stencil: Stencil, job: StencilJob) -> tuple[Problem, int]:
    """The problem and the step it starts at: from the inputs, or from ``--resume``'s
    checkpoint (INPUT and --prev are then not read; fields named again must be the
    checkpoint's)."""
    fields = {name: read_npy(existing_file(path)) for name, path in job.fields.items()}

    def build(u0: Any, fields: Mapping, prev: Any, dtype: str) -> Problem:
        return stencil.problem(u0, job.steps, fields=fields, prev=prev, dtype=dtype)

    if not job.resume:
        prev = read_npy(existing_file(job.prev)) if job.prev else None
        return build(read_npy(existing_file(job.input)), fields, prev,
                     job.dtype), 0
    from oclsci.stencil.checkpoint import load_checkpoint, resumed_problem  # resumed only

    state = load_checkpoint(job.resume)
    problem = resumed_problem(job.resume, state, stencil.expression.text, build, fields,
                              job.dtype, names=(stencil.expression.params,
                                                stencil.expression.fields))
    return problem, state.step


class StencilRun:
    """``oclsci stencil`` on a placement: the driver's :class:`~oclsci.driver.Runner`."""

    raising = False  # a stop ends the run agreed over ranks, with its checkpoint when asked

    def __init__(self, job: StencilJob, placement: Placement):
        self.job, self.placement = job, placement
        self.stencil: Stencil | None = None
        self.problem: Problem | None = None  # on the root
        self.start: Start | None = None
        self.started = 0.0
        self.step = 0  # the run's at the end
        self.prev: np.ndarray | None = None  # u.prev at the end, on the root

    def prepare(self) -> None:
        """Parse the expression (every rank); on the root check the options, read and check
        the inputs; every rank gets the :class:`Start`."""
        job, placement = self.job, self.placement
        # Resumed without --field: the names that are no parameter are the checkpoint's fields.
        names = list(job.fields) if job.fields or not job.resume else None
        self.stencil = placement.agree(lambda: Stencil(
            job.expression, params=dict(job.params), fields=names, boundary=job.boundary))

        def read() -> tuple[Problem, Start]:
            check_job(job)
            problem, step = load_problem(self.stencil, job)
            skeleton = replace(problem, u0=None, prev0=None, fields={})
            return problem, Start(skeleton, problem.shape, step)

        prepared = on_root(placement, read)
        self.problem = prepared[0] if placement.is_root else None
        self.start = placement.share(prepared[1] if placement.is_root else None)
        self.started = time.perf_counter()

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> StencilOutcome | None:
        """Run the steps (to a stop signal: a checkpoint when asked, then the stop); progress
        counts them."""
        job, placement, start = self.job, self.placement, self.start
        if placement.world is None:
            layout, grid = WholeGrid, WholeGrid(compute, self.problem, job)
        else:
            from oclsci.stencil.distributed import SlabLayout  # MPI runs only

            layout = SlabLayout(placement.world)
            grid = layout.build(compute, start.skeleton, start.shape, self.problem, job)

        def write_checkpoint(step: int) -> None:
            u, prev = grid.gather()
            if placement.is_root:
                _save_checkpoint(job.checkpoint, self.problem, u, prev, step)

        # Once the steps are done, a stop signal only waits for the outputs.
        steps = progress if job.steps > start.step else None
        grid.ready()
        watch = compute.stopwatch()
        try:
            with shown(steps, job.steps, start.step) as update:
                self.step = run_steps(grid.solver, job.steps, done=start.step, halo=grid.halo,
                                      progress=update, should_stop=stop_flag,
                                      checkpoint=write_checkpoint if job.checkpoint else None,
                                      checkpoint_every=job.checkpoint_every)
        except Interrupted as error:
            stop_flag.stopping()
            layout.stopped(error, start.step + grid.solver.iteration, job.checkpoint)
        stop_flag.work_done()
        step_seconds = grid.slowest(watch.stop())
        u, self.prev = grid.gather()
        on_root(placement, lambda: check_finite(u, divides=divides(self.problem.expression.root)))
        distribution = grid.describe()
        grid.close()
        if not placement.is_root:
            return None
        return StencilOutcome(compute, self.stencil, self.problem, u, self.started,
                              kernel=grid.solver.config.describe(), first_step=start.step,
                              distribution=distribution, step_seconds=step_seconds,
                              boundary=grid.boundary())

    def outputs(self, outcome: StencilOutcome) -> Writes:
        """The final checkpoint first (were the process killed while the field is written, a
        resumed run would only write it), then the field."""
        job = self.job
        return [(job.checkpoint, lambda: _save_checkpoint(job.checkpoint, outcome.problem,
                                                          outcome.result, self.prev,
                                                          self.step)),
                (job.output, lambda: write_npy(job.output, outcome.result))]


def _save_checkpoint(path: str, problem: Problem, u: np.ndarray, prev: np.ndarray | None,
                     step: int) -> None:
    """Write the run's state at ``step`` (loaded only when asked for)."""
    from oclsci.stencil.checkpoint import save_checkpoint

    save_checkpoint(path, problem, u, prev, step)


def run_job(job: StencilJob, *, placement: Placement | None = None,
            progress: ProgressFactory | None = None,
            notify: Callable[[str], None] | None = None) -> StencilOutcome | None:
    """Run ``job`` and return its outcome (None on the other ranks of an MPI run).

    ``placement``: the ranks of the launcher's MPI world when it started several, else this
    process's device (:func:`oclsci.driver.launched_placement`). ``progress(total, start)``:
    a progress display counting steps; ``notify(text)`` gets the device lines."""
    return drive(job, StencilRun, placement=placement, progress=progress, notify=notify)
