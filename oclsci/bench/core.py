"""What every workload shares: variants, cases, timings, checks and the progress line.

A :class:`Case` is one problem (e.g. Jacobi on 400x266, 150000 steps) with a NumPy reference
and OpenCL variants; :func:`oclsci.bench.measure.run_case` runs it.

A variant's ``run(iterations)`` does its own untimed set-up, then returns a :class:`Timing`
of the timed part only: ``wall`` from the host clock (first enqueue to ``queue.finish()``),
``device`` from OpenCL profiling events (None for host code), and the result as a host array.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyopencl as cl

from oclsci.errors import OclsciError
from oclsci.runtime import signals
from oclsci.runtime.launch import timed

# Errors that mark one variant as failed to run rather than stopping the whole benchmark (the
# table shows the message): OpenCL's (build failure, device out of memory), oclsci's (bad input,
# a device that cannot), and host memory. Any other error is a bug and stops the run.
VARIANT_ERRORS = (OclsciError, cl.Error, MemoryError)


@dataclass
class Timing:
    """One timed run: host-clock seconds, device seconds (events) and the result."""

    wall: float
    device: float | None = None
    output: Any = None
    source: str = "host clock"


class Variant(Protocol):
    """What a case runs: NumPy on the host or one OpenCL implementation."""

    name: str
    kind: str  # "host" or "opencl"
    description: str

    def run(self, iterations: int) -> Timing:
        """Set up (untimed), run ``iterations`` iterations (timed), return the timing."""


@dataclass
class Check:
    """The verdict of comparing a result with NumPy's."""

    passed: bool
    message: str
    figures: dict = field(default_factory=dict)


def compare_arrays(rtol: float = 1e-4, atol: float = 0.0) -> Callable[[Any, Any], Check]:
    """A checker: pass when ``max|x - ref| <= atol + rtol * max|ref|`` and x is finite."""
    def check(output: Any, reference: Any) -> Check:
        # In the arrays' own precision (float32 grids of 16384^2 are 1 GiB each).
        x, ref = np.asarray(output), np.asarray(reference)
        if x.shape != ref.shape:
            return Check(False, f"shape {x.shape} instead of {ref.shape}")
        if not np.all(np.isfinite(x)):
            return Check(False, f"{int(np.count_nonzero(~np.isfinite(x)))} non-finite values")
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        error = float(np.max(np.abs(np.subtract(x, ref, dtype=np.result_type(x, ref))))) \
            if ref.size else 0.0
        relative = error / scale if scale > 0 else error
        passed = error <= atol + rtol * scale
        verdict = "ok" if passed else "WRONG"
        return Check(passed, f"{verdict}: max abs error {error:.3g} (relative {relative:.2g}, "
                             f"tolerance {rtol:g} relative)",
                     {"max_abs_error": error, "max_rel_error": relative, "rtol": rtol,
                      "atol": atol})
    return check


def finite_only(output: Any) -> Check:
    """A check of a timed result that has no NumPy counterpart: all values finite."""
    x = np.asarray(output)
    if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
        return Check(False, f"timed result holds {int(np.count_nonzero(~np.isfinite(x)))} "
                            "non-finite values")
    return Check(True, "timed result finite")


@dataclass
class Case:
    """One problem of a workload, its NumPy reference and its OpenCL variants.

    NumPy runs ``reference_iterations`` (<= ``iterations``); when fewer, its time is
    extrapolated linearly and every variant is checked on a separate run of that many
    iterations (see :mod:`oclsci.bench.measure` for slow variants). ``work`` is the amount of
    work of ``iterations`` iterations, counted in ``throughput_unit`` (e.g. cell updates), and
    ``bytes_moved`` the least memory traffic they need (None where memory does not decide),
    for GB/s and % of copy bandwidth.
    """

    id: str
    workload: str
    title: str
    problem: dict
    iterations: int
    iteration_unit: str
    reference: Variant
    variants: list
    work: float
    throughput_unit: str
    bytes_moved: float | None = None
    reference_iterations: int | None = None
    warmup_iterations: int = 1
    checker: Callable[[Any, Any], Check] = field(default_factory=compare_arrays)
    notes: list = field(default_factory=list)
    # True when time grows linearly with iterations, so that a slow variant may be timed on
    # fewer iterations and extrapolated (Jacobi); False for Mandelbrot's escape iterations.
    extrapolate: bool = True

    def __post_init__(self) -> None:
        if self.reference_iterations is None or self.reference_iterations > self.iterations:
            self.reference_iterations = self.iterations


class Progress:
    """One self-overwriting status line on stderr, shown only on a terminal; each call is
    also a point where a pending stop signal is acted on."""

    def __init__(self, enabled: bool | None = None, stream: Any = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.shown = False
        self.start = time.perf_counter()

    def __call__(self, text: str) -> None:
        signals.poll()  # each step of a bench is a point where a stop signal is acted on
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            self.stream.write(f"\r\033[K[{elapsed:5.0f} s] " + text[:140])
            self.stream.flush()
            self.shown = True

    def close(self) -> None:
        """Erase the status line."""
        if self.enabled and self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def host_timed(function: Callable[[], Any]) -> Timing:
    """Time a host (NumPy) call with the host clock."""
    seconds, output = timed(function)
    return Timing(seconds, None, output)
