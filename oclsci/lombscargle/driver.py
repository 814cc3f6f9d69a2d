"""One ``oclsci lombscargle`` run, from its options to its written periodogram, on one device or
many.

:func:`run_job` hands a :class:`LombScargleJob` (the options, frozen) to the driver
(:func:`oclsci.driver.drive`) with :class:`LombScargleRun`: check the output, read the samples
and the frequencies (on every rank), compute the periodogram (on one device, or the
frequencies shared out over MPI ranks with
:func:`oclsci.lombscargle.distributed.periodogram_on_ranks`), write it and return a
:class:`LombScargleOutcome` holding what the summary prints. Signals are collected while
kernels build and run; a poll between launches stops the run (128 + N, nothing written; under
MPI every rank). Once the periodogram is computed, one only waits for the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oclsci.arrays import check_finite
from oclsci.driver import Notify, Placement, ProgressFactory, Writes, drive, on_root, shown
from oclsci.lombscargle import Periodogram
from oclsci.lombscargle.files import check_output, parse_freqs, read_samples, write_periodogram
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.signals import StopFlag


@dataclass(frozen=True)
class LombScargleJob:
    """What ``oclsci lombscargle`` is asked to do: its options (checked by :func:`run_job`)."""

    input: str  # (time, value) samples: .npy (2, N) or (N, 2), or two-column text
    freqs: str | None = None  # MIN:MAX:COUNT
    freqs_file: str | None = None  # a 1-D .npy of angular frequencies
    output: str | None = None  # .npy, .csv or .png
    precenter: bool = False
    normalize: bool = False
    dtype: str = "float64"
    fast_math: bool = False
    device: str | None = None

    def options(self) -> dict[str, Any]:
        """The options of :class:`~oclsci.lombscargle.Periodogram`."""
        return {"precenter": self.precenter, "normalize": self.normalize,
                "dtype": self.dtype, "fast_math": self.fast_math}


@dataclass
class LombScargleOutcome:
    """A finished run (on rank 0 of an MPI run): what the summary prints."""

    compute: ComputeContext
    samples: int
    freqs: np.ndarray
    pgram: np.ndarray
    device_seconds: float  # the slowest rank's
    launches: int | None = None  # on one device
    distribution: str | None = None  # how ranks shared the frequencies, for an MPI run
    written: list[str] = field(default_factory=list)


class LombScargleRun:
    """``oclsci lombscargle`` on a placement: the driver's :class:`~oclsci.driver.Runner`."""

    raising = True  # nothing to keep: a stop signal ends the run at the next poll

    def __init__(self, job: LombScargleJob, placement: Placement):
        self.job, self.placement = job, placement
        self.output: Path | None = None
        self.times = self.values = self.freqs = np.empty(0)

    def prepare(self) -> None:
        """Refuse an unusable output, then read the samples and frequencies (every rank reads
        them; errors agreed)."""
        self.placement.agree(self._read)

    def _read(self) -> None:
        job = self.job
        self.output = check_output(job.output, {"INPUT": job.input, "--freqs-file":
                                                job.freqs_file})
        self.times, self.values = read_samples(job.input, normalize=job.normalize,
                                               precenter=job.precenter)
        self.freqs = parse_freqs(job.freqs, job.freqs_file)

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> LombScargleOutcome | None:
        """The periodogram; progress on the root counts its frequencies."""
        times, values, freqs, world = self.times, self.values, self.freqs, self.placement.world
        if world is not None:
            from oclsci.lombscargle.distributed import (  # MPI runs only
                describe_frequency_bands,
                periodogram_on_ranks,
            )

            pgram, seconds = periodogram_on_ranks(world, compute, times, values, freqs,
                                                  stop_flag=stop_flag, progress=progress,
                                                  **self.job.options())
            # The root's check, its error raised on every rank (an agreed end, not an abort).
            on_root(self.placement, lambda: None if pgram is None
                    else check_finite(pgram, "the periodogram"))
            if pgram is None:
                return None
            return LombScargleOutcome(compute, times.size, freqs, pgram, seconds,
                                      distribution=describe_frequency_bands(world))
        plan = Periodogram(compute, times, values, freqs, **self.job.options())
        if notify is not None:
            notify(f"lombscargle: computing {freqs.size} frequencies of {times.size} samples")
        with shown(progress, freqs.size) as update:
            pgram = plan.run(should_stop=stop_flag, progress=update).get()
        return LombScargleOutcome(compute, times.size, freqs,
                                  check_finite(pgram, "the periodogram"),
                                  plan.timings.device_seconds, plan.timings.launches)

    def outputs(self, outcome: LombScargleOutcome) -> Writes:
        """The periodogram, titled with its input and options."""
        job = self.job
        title = (f"{job.input}: {outcome.samples} samples, {job.dtype}"
                 + (", precentered" if job.precenter else "")
                 + (", normalized" if job.normalize else ""))
        return [(self.output,
                 lambda: write_periodogram(self.output, outcome.freqs, outcome.pgram, title))]


def run_job(job: LombScargleJob, *, placement: Placement | None = None,
            progress: ProgressFactory | None = None,
            notify: Callable[[str], None] | None = None) -> LombScargleOutcome | None:
    """Run ``job`` to the end and return its outcome (None on the other ranks of an MPI run).

    ``placement``: the ranks of the launcher's MPI world when it started several, else this
    process's device. ``progress(total, start)``: a progress display counting frequencies;
    ``notify(text)`` gets the device lines and the size of the work.
    """
    return drive(job, LombScargleRun, placement=placement, progress=progress, notify=notify)
