"""The generic parts of a search for a kernel's fastest configuration on a device.

A workload's tuner (:mod:`oclsci.jacobi.tuner`: ``oclsci tune``) makes candidate
configurations, checks each one, and times it with :func:`time_per_step` within a
:class:`SearchBudget`; :class:`TuneReport` collects the :class:`Trial` s, and the winners go to
the tuning cache (:mod:`oclsci.kernelspec.registry`) through :func:`save_report`.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.errors import InputError
from oclsci.kernelspec import KernelConfig, round_up
from oclsci.kernelspec.registry import make_entry, save_entry
from oclsci.runtime import signals

# The finalists' re-timing: runs of FINAL_FACTOR x min_seconds, FINAL_REPEATS of them, within
# at most FINAL_SHARE of the budget, kept back from the screening.
FINAL_FACTOR, FINAL_REPEATS, FINAL_SHARE = 3, 3, 0.3


@dataclass
class Trial:
    """One candidate's outcome: seconds per step, or why it was dropped."""

    config: KernelConfig
    seconds_per_step: float = math.inf
    status: str = "not run"
    predicted: float = math.nan

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class TuneReport:
    """What a search found: every trial, and how long it took."""

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype
    trials: list[Trial] = field(default_factory=list)
    seconds: float = 0.0

    def best_by_kernel(self) -> dict[str, Trial]:
        """The fastest exact trial of each kernel."""
        best: dict[str, Trial] = {}
        for trial in self.trials:
            if trial.ok and (trial.config.name not in best
                             or trial.seconds_per_step < best[trial.config.name].seconds_per_step):
                best[trial.config.name] = trial
        return best

    @property
    def best(self) -> Trial | None:
        """The fastest exact trial."""
        ranked = sorted(self.best_by_kernel().values(), key=lambda t: t.seconds_per_step)
        return ranked[0] if ranked else None


def interleave(lists: list[list]) -> list:
    """The lists' items, first of each, then second of each, and so on (kernels
    interleaved, so that a short budget tries each kernel's most promising)."""
    merged = []
    for group in itertools.zip_longest(*lists):
        merged.extend(item for item in group if item is not None)
    return merged


def _seconds(solver: Any, steps: int) -> float:
    queue = solver.compute.queue
    queue.finish()
    signals.poll()  # each timing is a point where a stop signal is acted on
    start = time.perf_counter()
    solver.advance(steps)
    queue.finish()
    return time.perf_counter() - start


def time_per_step(solver: Any, min_seconds: float, repeats: int = 2,
                  max_steps: int = 10_000_000) -> float:
    """Seconds per step (best of ``repeats``), over runs of at least ``min_seconds``, of a
    ``solver`` with ``advance(steps)``, ``steps_per_launch`` and ``compute``.

    Step counts are whole launches, so that no remainder launch is timed.
    """
    per_launch = solver.steps_per_launch
    steps = per_launch * 2
    _seconds(solver, steps)  # warm-up
    elapsed = _seconds(solver, steps)
    while elapsed < min_seconds / 4 and steps < max_steps:
        grow = max(2.0, min(64.0, (min_seconds / 4) / max(elapsed, 1e-7)))
        steps = round_up(int(steps * grow), per_launch)
        elapsed = _seconds(solver, steps)
    steps = round_up(max(steps, int(steps * min_seconds / max(elapsed, 1e-9))), per_launch)
    steps = min(steps, round_up(max_steps, per_launch))
    return min(_seconds(solver, steps) for _ in range(repeats)) / steps


class SearchBudget:
    """How a search spends ``seconds`` of ``clock``, counted from this object's making:
    the set-up, every candidate's build, check and timing, and the finalists' re-timing.

    Seconds are kept for the re-timing (:meth:`keep`): a candidate is screened only while it
    would end before them, as long as the longest candidate so far took (the first is always
    screened, however long it takes); the re-timing then shares what is left.
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.perf_counter):
        self.clock, self.seconds = clock, seconds
        self.start = clock()
        self.deadline = self.start + seconds
        self.reserve = 0.0  # seconds kept for the re-timing
        self.longest = 0.0  # seconds of the longest candidate so far

    def keep(self, seconds: float) -> None:
        """Keep ``seconds`` for the re-timing, :data:`FINAL_SHARE` of the budget at most."""
        self.reserve = max(0.0, min(seconds, FINAL_SHARE * self.seconds))

    def elapsed(self) -> float:
        """Seconds since the search started."""
        return self.clock() - self.start

    def screen_next(self, screened: int) -> bool:
        """Whether to screen another candidate, ``screened`` having been."""
        if screened == 0:
            return True
        return self.clock() + self.longest <= self.deadline - self.reserve

    def screened(self, started: float) -> None:
        """Note a candidate that began at ``started`` (a reading of the clock) and has ended."""
        self.longest = max(self.longest, self.clock() - started)

    def final_seconds(self, count: int, wanted: float, repeats: int = FINAL_REPEATS) -> float:
        """``min_seconds`` for each of ``count`` re-timings (``repeats`` runs each, and as much
        again for the warm-up and the sizing runs): ``wanted``, or less so that they end by
        the deadline; 0 when no time is left."""
        left = self.deadline - self.clock()
        if count <= 0 or left <= 0:
            return 0.0
        return min(wanted, left / (count * (repeats + 1)))


def save_report(report: TuneReport) -> Any:
    """Store the report's winners in the tuning cache; return the cache's path."""
    best = report.best
    if best is None:
        raise InputError("no candidate configuration ran correctly; nothing to save")
    kernels = {name: (trial.config, trial.seconds_per_step)
               for name, trial in report.best_by_kernel().items()}
    entry = make_entry(best.config, kernels, report.shape, best.seconds_per_step)
    return save_entry(report.key, entry)
