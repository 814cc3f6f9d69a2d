"""Elementwise benchmark case: axpy, ``y = a*x + y``, on float32 vectors sized to the device.

A purely memory-bound kernel (12 bytes per element: read x and y, write y), the closest thing
to the copy bandwidth a real computation gets. One "iteration" is one axpy call; every call
updates the same y, so results after k calls are ``y0 + k*a*x`` (checked against NumPy).
Variants: NumPy (``y += a*x``), oclsci's ``axpy`` (:mod:`oclsci.elementwise.ops`) and two
code-generation variants of it, and PyOpenCL's own ``ElementwiseKernel`` for comparison.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from pyopencl.elementwise import ElementwiseKernel

from oclsci.bench.core import Case, Timing, compare_arrays, host_timed
from oclsci.elementwise.ops import AXPY
from oclsci.runtime.launch import Pacer

DTYPE = np.dtype(np.float32)
ALPHA = np.float32(0.5)
# Fraction of the device's global memory the vectors may use (x, y0 and a run's y).
MEMORY_FRACTION = 0.25


def vector_size(compute, quick: bool = False) -> int:
    """Elements per vector: 2**28 on GPUs (1 GiB), 2**26 on CPUs, less with ``quick``, and
    halved until three vectors fit in a quarter of the device's memory."""
    # Full runs: vectors larger than a CPU's caches (some server CPUs have hundreds of MiB).
    size = 2 ** (22 if quick else 26) if compute.is_cpu else 2 ** (26 if quick else 28)
    device = compute.device
    while size > 2**16 and (3 * size * DTYPE.itemsize > MEMORY_FRACTION * device.global_mem_size
                            or size * DTYPE.itemsize > device.max_mem_alloc_size):
        size //= 2
    return size


def _vectors(size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(size)
    return (rng.random(size, dtype=DTYPE), rng.random(size, dtype=DTYPE))


class NumpyAxpy:
    """NumPy on the host: ``y += a * x`` (a temporary for ``a * x``, as NumPy code does)."""

    kind = "host"
    name = "numpy"
    description = "NumPy on the host: y += a * x, float32"

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x, self.y0 = x, y

    def run(self, iterations: int) -> Timing:
        y = self.y0.copy()

        def axpy_calls() -> np.ndarray:
            for _ in range(iterations):
                y[...] += ALPHA * self.x
            return y
        return host_timed(axpy_calls)


class DeviceVectors:
    """x and the initial y on the device, uploaded once and shared by every variant."""

    def __init__(self, compute, x: np.ndarray, y: np.ndarray):
        self.x = cl_array.to_device(compute.queue, x)
        self.y0 = cl_array.to_device(compute.queue, y)


class DeviceAxpy:
    """An OpenCL axpy: ``launch(a, x, y)`` enqueues one call on device arrays, returns an event."""

    kind = "opencl"

    def __init__(self, compute, vectors: DeviceVectors, name: str, description: str,
                 launch: Any):
        self.compute, self.vectors = compute, vectors
        self.name, self.description, self.launch = name, description, launch

    def run(self, iterations: int) -> Timing:
        x, y = self.vectors.x, self.vectors.y0.copy()  # a device-to-device copy of y0
        stopwatch = self.compute.stopwatch()
        with warnings.catch_warnings():  # NVIDIA's build notes (PyOpenCL builds lazily)
            warnings.simplefilter("ignore", cl.CompilerWarning)
            pacer = Pacer()  # a bounded queue however many calls
            for _ in range(iterations):
                event = self.launch(ALPHA, x, y)
                if event is not None:
                    stopwatch.record(event)
                pacer.launched(event)
        stopwatch.stop()
        output = y.get()
        y.data.release()
        return Timing(stopwatch.wall_seconds, stopwatch.device_seconds, output, stopwatch.source)


def pyopencl_variant(compute, vectors: DeviceVectors) -> DeviceAxpy:
    """PyOpenCL's ``ElementwiseKernel`` (what a PyOpenCL user writes by hand)."""
    kernel = ElementwiseKernel(compute.context, "float a, __global const float *x, "
                               "__global float *y", "y[i] = a * x[i] + y[i]", "bench_axpy")

    def launch(alpha, x_array, y_array):
        return kernel(alpha, x_array, y_array, queue=compute.queue)

    return DeviceAxpy(compute, vectors, "pyopencl-elementwise",
                      "pyopencl.elementwise.ElementwiseKernel, y[i] = a * x[i] + y[i]", launch)


def oclsci_variants(compute, vectors: DeviceVectors) -> list:
    """oclsci's ready-made ``axpy`` (:mod:`oclsci.elementwise.ops`) and two code-generation
    variants of it: ``a*x + y`` fused into ``fma``, and 4 elements per work-item."""
    variants = []
    for name, kernel, what in (
            ("oclsci-axpy", AXPY, "oclsci.elementwise.ops.axpy (ElementwiseKernel, "
                                  "one element per work-item, no fma)"),
            ("oclsci-axpy-fma", AXPY.variant(fp_contract=True),
             "the same with fp_contract: a*x + y fused into fma"),
            ("oclsci-axpy-x4", AXPY.variant(per_item=4),
             "the same with 4 elements per work-item")):
        def launch(alpha, x_array, y_array, kernel=kernel):
            kernel(alpha, x_array, y_array, device=compute)
            return kernel.last_event

        variants.append(DeviceAxpy(compute, vectors, name, what, launch))
    return variants


def cases(compute, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The axpy case for ``compute``."""
    size = vector_size(compute, quick)
    x, y = _vectors(size)
    calls = 10 if quick else 20
    vectors = DeviceVectors(compute, x, y)
    variants = [*oclsci_variants(compute, vectors), pyopencl_variant(compute, vectors)]
    notes = [f"one iteration is one axpy call on {size} elements "
                 f"({size * 4 / 2**20:.0f} MiB per vector)"]
    return [Case(
        id=f"elementwise-axpy-{size}", workload="elementwise",
        title=f"axpy y = a*x + y, {size:,} float32 elements, {calls} calls",
        problem={"operation": "axpy", "elements": size, "dtype": DTYPE.name, "calls": calls,
                 "a": float(ALPHA)},
        iterations=calls, iteration_unit="call", reference=NumpyAxpy(x, y), variants=variants,
        work=float(size) * calls, throughput_unit="elements/s",
        bytes_moved=3.0 * size * DTYPE.itemsize * calls,
        reference_iterations=calls if quick else 5,
        warmup_iterations=2, checker=compare_arrays(rtol=1e-5), notes=notes)], []
