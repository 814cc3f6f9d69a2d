"""One ``oclsci mandelbrot`` run, from its options to its written picture, on one device or many.

:func:`run_job` hands a :class:`MandelbrotJob` (the options, frozen) to the driver
(:func:`oclsci.driver.drive`) with :class:`MandelbrotRun`: check the options, render the
escape counts ``repeat`` times (on one device, or in bands of rows over MPI ranks with
:func:`oclsci.mandelbrot.distributed.render_on_ranks`), colour and write the picture and the
counts, and return a :class:`MandelbrotOutcome` holding what the summary prints. Signals are
collected while kernels build and run, and stop the run between bands (128 + N, nothing
written; under MPI every rank); once the image is computed, one only waits for the outputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oclsci.driver import Notify, Placement, ProgressFactory, Writes, drive
from oclsci.errors import InputError
from oclsci.io import check_distinct_outputs, check_output_path, write_image, write_npy
from oclsci.mandelbrot.renderer import DEFAULTS, MandelbrotRenderer, parse_horizon, validate
from oclsci.mandelbrot.shading import shade
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.signals import StopFlag


@dataclass(frozen=True)
class MandelbrotJob:
    """What ``oclsci mandelbrot`` is asked to do: its options (checked by :func:`run_job`)."""

    image: str | None = "mandelbrot.png"  # the PNG to write; None: none
    counts: str | None = None  # .npy of the escape counts
    width: int = DEFAULTS["width"]
    height: int = DEFAULTS["height"]
    maxiter: int = DEFAULTS["maxiter"]
    xmin: float = DEFAULTS["xmin"]
    xmax: float = DEFAULTS["xmax"]
    ymin: float = DEFAULTS["ymin"]
    ymax: float = DEFAULTS["ymax"]
    horizon: Any = "2**40"  # a number or a**b
    dtype: str = "float32"
    device: str | None = None
    renderer: str = "auto"  # the colouring (oclsci.mandelbrot.shading.RENDERERS)
    repeat: int = 1  # computations, for timing; the last one is written


@dataclass
class MandelbrotOutcome:
    """A finished run (on rank 0 of an MPI run): what the summary prints."""

    compute: ComputeContext
    horizon: float
    plan: MandelbrotRenderer  # its parameters and kernel shape
    result: Any  # the last computation's MandelbrotResult, the whole image
    timings: list  # each computation's MandelbrotTimings (the slowest rank's)
    distribution: str | None = None  # how ranks shared the rows, for an MPI run
    colour_seconds: float = 0.0
    write_seconds: float = 0.0
    written: list[str] = field(default_factory=list)


def check_job(job: MandelbrotJob) -> float:
    """Refuse bad parameters and unusable outputs before anything is computed; return the
    horizon as a number."""
    if job.repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {job.repeat}")
    check_output_path(job.image, (".png",))
    check_output_path(job.counts, (".npy",))
    check_distinct_outputs(output=job.image, counts=job.counts)
    horizon = parse_horizon(job.horizon)
    validate(job.width, job.height, job.maxiter, job.xmin, job.xmax, job.ymin, job.ymax,
             horizon, job.dtype)
    return horizon


class MandelbrotRun:
    """``oclsci mandelbrot`` on a placement: the driver's :class:`~oclsci.driver.Runner`."""

    raising = True  # nothing to keep: a stop signal ends the run at the next poll

    def __init__(self, job: MandelbrotJob, placement: Placement):
        self.job, self.placement = job, placement
        self.horizon = 0.0

    def prepare(self) -> None:
        """Check the options (on every rank, errors agreed)."""
        self.horizon = self.placement.agree(lambda: check_job(self.job))

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> MandelbrotOutcome | None:
        """Compute the escape counts (and the smooth count for a picture) ``repeat`` times."""
        job, world = self.job, self.placement.world
        params = dict(width=job.width, height=job.height, maxiter=job.maxiter, xmin=job.xmin,
                      xmax=job.xmax, ymin=job.ymin, ymax=job.ymax, horizon=self.horizon,
                      dtype=job.dtype)
        want_smooth = job.image is not None
        distribution = None
        if world is None:
            plan = MandelbrotRenderer(compute, **params)
            timings = []
            for _ in range(job.repeat):  # only the last result is kept (each pins its memory)
                result = plan.run(want_z=False, want_smooth=want_smooth)
                timings.append(result.timings)
        else:  # several ranks: each renders bands of rows, rank 0 gathers
            from oclsci.mandelbrot.distributed import describe_bands, render_on_ranks

            plan, result, timings = render_on_ranks(world, compute, repeat=job.repeat,
                                                    want_smooth=want_smooth,
                                                    stop_flag=stop_flag, **params)
            if not world.is_root:
                return None
            distribution = describe_bands(world, job.height)
        return MandelbrotOutcome(compute, self.horizon, plan, result, timings, distribution)

    def outputs(self, outcome: MandelbrotOutcome) -> Writes:
        """The picture (coloured first, both timed), then the counts."""
        def write_picture() -> None:
            start = time.perf_counter()
            picture = shade(outcome.result.smooth, renderer=self.job.renderer,
                            compute=outcome.compute)
            outcome.colour_seconds = time.perf_counter() - start
            write_image(self.job.image, picture)
            outcome.write_seconds = time.perf_counter() - start - outcome.colour_seconds

        return [(self.job.image, write_picture),
                (self.job.counts, lambda: write_npy(self.job.counts, outcome.result.counts))]


def run_job(job: MandelbrotJob, *, placement: Placement | None = None,
            notify: Callable[[str], None] | None = None) -> MandelbrotOutcome | None:
    """Run ``job`` to the end and return its outcome (None on the other ranks of an MPI run).

    ``placement``: the ranks of the launcher's MPI world when it started several, else this
    process's device. ``notify(text)`` gets the device lines.
    """
    return drive(job, MandelbrotRun, placement=placement, notify=notify)
