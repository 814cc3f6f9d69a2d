"""One ``oclsci stencil`` run, from its options to its written field, on one device.

:func:`run_job` hands a :class:`StencilJob` (the options, frozen) to the driver
(:func:`oclsci.driver.drive`) with :class:`StencilRun`: parse the expression, check the output
and read the inputs (the problem checked and rounded before any device work), run the steps
on the kernel asked for (``auto`` by default: :mod:`oclsci.stencil.kernels`), write the field
and return a :class:`StencilOutcome` holding what the summary prints. Signals are collected
while kernels build and run; a poll between chunks of steps stops the run (128 + N, nothing
written). Once the steps are done, one waits for the output.

A stencil runs on one device, also when started as MPI ranks (each rank its own run, as
before): it has no runner over ranks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.arrays import check_finite
from oclsci.driver import (
    Notify,
    OneDevicePlacement,
    Placement,
    ProgressFactory,
    Writes,
    drive,
    shown,
)
from oclsci.io import check_output_path, existing_file, read_npy, write_npy
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.signals import StopFlag
from oclsci.stencil.api import Stencil, run_steps
from oclsci.stencil.problem import Problem
from oclsci.stencil.solver import StencilSolver


@dataclass(frozen=True)
class StencilJob:
    """What ``oclsci stencil`` is asked to do: its options (checked by :func:`run_job`)."""

    expression: str
    input: str  # u at the start, .npy
    steps: int
    output: str  # .npy
    fields: Mapping[str, str] = field(default_factory=dict)  # name -> .npy
    params: Mapping[str, float] = field(default_factory=dict)
    prev: str | None = None  # u.prev at the start, .npy (default: the input)
    boundary: float = 0.0
    dtype: str | None = None
    device: str | None = None
    kernel: str = "auto"  # or a kernel's name (oclsci.stencil.kernels)
    kernel_params: Mapping[str, int] = field(default_factory=dict)  # the kernel's, by name


@dataclass
class StencilOutcome:
    """A finished run: what the summary prints."""

    compute: ComputeContext
    stencil: Stencil
    problem: Problem
    result: np.ndarray
    started: float  # time.perf_counter() once the inputs were read and checked
    kernel: str = ""  # the kernel that ran, with its parameters
    written: list[str] = field(default_factory=list)


class StencilRun:
    """``oclsci stencil`` on this process's device: the driver's
    :class:`~oclsci.driver.Runner`."""

    raising = True  # nothing to keep: a stop signal ends the run at the next poll

    def __init__(self, job: StencilJob, placement: Placement):
        self.job = job
        self.stencil: Stencil | None = None
        self.problem: Problem | None = None
        self.started = 0.0

    def prepare(self) -> None:
        """Parse the expression, refuse an unusable output, read and check the inputs."""
        job = self.job
        self.stencil = Stencil(job.expression, params=dict(job.params), fields=list(job.fields),
                               boundary=job.boundary)
        check_output_path(job.output, (".npy",),
                          inputs={"input": job.input, "prev": job.prev, **job.fields})
        u0 = read_npy(existing_file(job.input))
        fields = {name: read_npy(existing_file(path)) for name, path in job.fields.items()}
        prev = read_npy(existing_file(job.prev)) if job.prev else None
        self.problem = self.stencil.problem(u0, job.steps, fields=fields, prev=prev,
                                            dtype=job.dtype)
        self.started = time.perf_counter()

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> StencilOutcome:
        """Run the steps; progress counts them."""
        problem, job = self.problem, self.job
        solver = StencilSolver(compute, problem, kernel=job.kernel,
                               kernel_params=dict(job.kernel_params) or None)
        with shown(progress, problem.steps) as update:
            run_steps(solver, problem.steps, progress=update, should_stop=stop_flag)
            result = check_finite(solver.read())
        return StencilOutcome(compute, self.stencil, problem, result, self.started,
                              kernel=solver.config.describe())

    def outputs(self, outcome: StencilOutcome) -> Writes:
        """The field."""
        return [(self.job.output, lambda: write_npy(self.job.output, outcome.result))]


def run_job(job: StencilJob, *, progress: ProgressFactory | None = None,
            notify: Callable[[str], None] | None = None) -> StencilOutcome:
    """Run ``job`` on this process's device and return its outcome. ``progress(total,
    start)``: a progress display counting steps; ``notify(text)`` gets the device line."""
    return drive(job, StencilRun, placement=OneDevicePlacement(), progress=progress,
                 notify=notify)
