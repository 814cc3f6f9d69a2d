"""Mandelbrot benchmark case: the seed's 1500x1250 image, 400 iterations, horizon 2**40.

Variants: NumPy (the seed's code), oclsci's kernel alone (counts left on the device) and with
the counts copied back to the host (what the seed's CuPy timing included). On CPUs, whose
kernel computes several pixels per work-item, also the one-pixel-per-work-item kernel.
One "iteration" is one of the ``maxiter`` escape-time iterations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.bench.core import Case, Check, Timing, host_timed
from oclsci.mandelbrot.reference import mandelbrot_numpy
from oclsci.mandelbrot.renderer import DEFAULTS, MandelbrotRenderer, default_vector_width

QUICK_SIZE = (600, 500)
# Pixels whose escape count may differ from NumPy's (float rounding at the set's edge).
MAX_MISMATCH_FRACTION = 1e-5


def compare_counts(max_fraction: float = MAX_MISMATCH_FRACTION):
    """A checker of escape counts: pass when at most ``max_fraction`` of pixels differ."""
    def check(output: Any, reference: Any) -> Check:
        counts, expected = np.asarray(output), np.asarray(reference)
        if counts.shape != expected.shape:
            return Check(False, f"shape {counts.shape} instead of {expected.shape}")
        wrong = int(np.count_nonzero(counts != expected))
        fraction = wrong / max(expected.size, 1)
        passed = fraction <= max_fraction
        return Check(passed, f"{'ok' if passed else 'WRONG'}: {wrong} of {expected.size} "
                             f"escape counts differ (tolerance {max_fraction:g} of pixels)",
                     {"mismatched": wrong, "mismatched_fraction": fraction,
                      "max_mismatched_fraction": max_fraction})
    return check


class NumpyMandelbrot:
    """The seed's NumPy code (float32 / complex64)."""

    kind = "host"
    name = "numpy"
    description = "NumPy on the host: the seed's masked loop, complex64"

    def __init__(self, params: dict):
        self.params, self.function = params, mandelbrot_numpy

    def run(self, iterations: int) -> Timing:
        timing = host_timed(lambda: self.function(maxiter=iterations, **self.params)[0])
        timing.output = timing.output.astype(np.int32)
        return timing


class RendererMandelbrot:
    """oclsci's kernel through :class:`oclsci.mandelbrot.MandelbrotRenderer`."""

    kind = "opencl"

    def __init__(self, compute, params: dict, *, copy_back: bool,
                 vector_width: int | None = None):
        self.compute, self.params = compute, params
        self.copy_back, self.vector_width = copy_back, vector_width
        self.renderer_class = MandelbrotRenderer
        width = default_vector_width(compute, np.dtype(np.float32)) \
            if vector_width is None else vector_width
        self.name = ("opencl+copy" if copy_back else "opencl") + (
            "" if vector_width is None else f"-vw{vector_width}")
        self.description = (f"oclsci.mandelbrot kernel, {width} pixel(s) per work-item, "
                            + ("counts copied back to the host inside the timing"
                               if copy_back else "counts left on the device"))
        self.renderers: dict[int, Any] = {}

    def _renderer(self, maxiter: int) -> Any:
        if maxiter not in self.renderers:
            self.renderers[maxiter] = self.renderer_class(
                self.compute, maxiter=maxiter, vector_width=self.vector_width,
                dtype=np.float32, **self.params)
        return self.renderers[maxiter]

    def run(self, iterations: int) -> Timing:
        renderer = self._renderer(iterations)
        if self.copy_back:
            result = renderer.run(want_z=False, want_smooth=False)
            timings = result.timings
            return Timing(timings.wall_seconds, timings.total_seconds, result.counts,
                          timings.source)
        stopwatch = self.compute.stopwatch()
        stopwatch.record(renderer.enqueue(want_z=False, want_smooth=False))
        stopwatch.stop()
        counts = np.empty((renderer.row_count, renderer.width), dtype=np.int32)
        cl.enqueue_copy(self.compute.queue, counts, renderer.counts_buffer)
        return Timing(stopwatch.wall_seconds, stopwatch.device_seconds, counts,
                      stopwatch.source)


def cases(compute, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The seed's Mandelbrot case (smaller with ``quick``), or a note when unavailable."""
    params = {k: v for k, v in DEFAULTS.items() if k != "maxiter"}
    if quick:
        params["width"], params["height"] = QUICK_SIZE
    maxiter = int(DEFAULTS["maxiter"])
    variants = [RendererMandelbrot(compute, params, copy_back=False),
                RendererMandelbrot(compute, params, copy_back=True)]
    if default_vector_width(compute, np.dtype(np.float32)) > 1:
        variants.append(RendererMandelbrot(compute, params, copy_back=False, vector_width=1))
    pixels = params["width"] * params["height"]
    title = (f"Mandelbrot {params['width']}x{params['height']}, {maxiter} iterations, "
             "float32 (the seed's image)")
    problem = dict(params, maxiter=maxiter, dtype="float32")
    return [Case(
        id=f"mandelbrot-{params['width']}x{params['height']}", workload="mandelbrot",
        title=title, problem=problem, iterations=maxiter, iteration_unit="iteration",
        reference=NumpyMandelbrot(params), variants=variants, work=float(pixels),
        throughput_unit="pixels/s", bytes_moved=None, warmup_iterations=20,
        checker=compare_counts(), extrapolate=False)], []
