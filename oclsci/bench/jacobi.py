"""Jacobi benchmark cases: the seed's 400x266 picture (150000 steps) and large grids.

Variants: NumPy (the seed's code), the seed's PyOpenCL loop as written in the talk, and every
kernel of :data:`oclsci.jacobi.kernels.KERNELS` as one device runs it
(:func:`oclsci.jacobi.runner.whole_grid_solver`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl

from oclsci.bench.core import Case, Timing, compare_arrays, host_timed
from oclsci.jacobi.kernels import KERNELS, choose_config
from oclsci.jacobi.picture import builtin_picture
from oclsci.jacobi.reference import jacobi_step, laplacian
from oclsci.jacobi.runner import run, whole_grid_solver
from oclsci.kernelspec import round_up
from oclsci.runtime import programs
from oclsci.runtime.launch import Pacer

SEED_ITERATIONS = 150000
QUICK_ITERATIONS = 1000
# NumPy's 150000 steps take ~20-30 s: time this many and extrapolate (the tables say so).
NUMPY_ITERATIONS = 3000
DTYPE = np.dtype(np.float32)
# Fraction of the device's global memory the large grids may use (X twice and B).
MEMORY_FRACTION = 0.5


class NumpyJacobi:
    """The seed's NumPy loop (``jacobi_cpu_mat``) on padded arrays; set-up untimed."""

    kind = "host"
    name = "numpy"
    description = "NumPy on the host: the seed's slicing loop, float32"

    def __init__(self, rhs: np.ndarray):
        self.rhs = np.asarray(rhs, dtype=DTYPE)

    def run(self, iterations: int) -> Timing:
        m, n = self.rhs.shape
        x = np.zeros((m + 2, n + 2), dtype=DTYPE)
        x[1:-1, 1:-1] = self.rhs
        x_next = x.copy()

        def loop() -> np.ndarray:
            a, b = x, x_next
            for _ in range(iterations):
                jacobi_step(b, a, self.rhs)
                a, b = b, a
            return a[1:-1, 1:-1].copy()

        return host_timed(loop)


class SolverJacobi:
    """One kernel of oclsci's solver, run and timed by :func:`oclsci.jacobi.run` (without its
    final residual)."""

    kind = "opencl"

    def __init__(self, compute, rhs: np.ndarray, kernel: str, default: bool = False):
        self.compute, self.rhs, self.kernel, self.default = compute, rhs, kernel, default
        self.name = kernel
        self.description = self._describe(choose_config(compute, kernel, DTYPE, rhs.shape))

    def _describe(self, config) -> str:
        return (f"oclsci.jacobi kernel {config.describe()}"
                + (" [oclsci's default here]" if self.default else ""))

    def run(self, iterations: int) -> Timing:
        solver = whole_grid_solver(self.compute, self.rhs, dtype=DTYPE, kernel=self.kernel)
        self.description = self._describe(solver.config)  # what actually ran
        bands = getattr(solver, "describe", None)  # ConcurrentJacobi's, not JacobiSolver's
        if bands is not None:
            self.description += f", {bands().split(';')[0]}"
        # oclsci.jacobi.run as users run it, without its final residual (seconds on 16384^2).
        result = run(solver, iterations, residual=False)
        output = solver.read()
        del solver  # do not hold device memory between runs and variants
        return Timing(result.wall_seconds, result.device_seconds, output, result.timing_source)


class SeedLoopJacobi:
    """The talk's PyOpenCL loop: ``prg.kernel(queue, ...)`` at every step, buffers swapped."""

    kind = "opencl"
    name = "seed-loop"
    description = ("the talk's PyOpenCL loop as written: kernel retrieved and arguments set "
                   "at every step; its kernel (work-item dimension 0 along rows)")

    def __init__(self, compute, rhs: np.ndarray):
        self.compute, self.rhs = compute, np.asarray(rhs, dtype=DTYPE)
        self.program = programs.build_program(compute, "jacobi/seed", dtype=DTYPE)

    def run(self, iterations: int) -> Timing:
        m, n = self.rhs.shape
        x = np.zeros((m + 2, n + 2), dtype=DTYPE)
        x[1:-1, 1:-1] = self.rhs
        flags, ctx, queue = cl.mem_flags, self.compute.context, self.compute.queue
        x_d, x2_d, b_d = (cl.Buffer(ctx, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=x)
                          for _ in range(3))
        args = (np.int32(m), np.int32(n), np.int32(n + 2))
        stopwatch = self.compute.stopwatch()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # RepeatedKernelRetrieval: that is the point
            pacer = Pacer()  # the talk's loop never waits: keep its queue short
            for _ in range(iterations):
                event = self.program.jacobi_seed(queue, (m + 2, n + 2), None, x2_d, x_d, b_d,
                                                 *args)
                stopwatch.record(event)
                x_d, x2_d = x2_d, x_d
                pacer.launched(event)
        stopwatch.stop()
        cl.enqueue_copy(queue, x, x_d)
        return Timing(stopwatch.wall_seconds, stopwatch.device_seconds, x[1:-1, 1:-1].copy(),
                      stopwatch.source)


def _variants(compute, rhs: np.ndarray, seed_loop: bool) -> list:
    auto = choose_config(compute, "auto", DTYPE, rhs.shape).name
    variants = [SeedLoopJacobi(compute, rhs)] if seed_loop else []
    return variants + [SolverJacobi(compute, rhs, name, default=name == auto)
                       for name in KERNELS]


def _max_steps(compute, shape: tuple[int, int]) -> int:
    """The most steps one launch of any kernel advances on this grid."""
    return max(choose_config(compute, name, DTYPE, shape).steps_per_launch
               for name in KERNELS)


def grid_case(case_id: str, title: str, rhs: np.ndarray, iterations: int,
              reference_iterations: int, compute, seed_loop: bool = False,
              notes: list | None = None) -> Case:
    """A Jacobi case on right-hand side ``rhs`` with NumPy and every kernel (and the seed's
    loop if ``seed_loop``)."""
    rhs = np.asarray(rhs, dtype=DTYPE)
    m, n = rhs.shape
    return Case(
        id=case_id, workload="jacobi", title=title,
        problem={"rows": m, "cols": n, "dtype": DTYPE.name, "iterations": iterations},
        iterations=iterations, iteration_unit="step",
        reference=NumpyJacobi(rhs), variants=_variants(compute, rhs, seed_loop),
        work=float(m * n) * iterations, throughput_unit="cell updates/s",
        # Least traffic of a step without temporal blocking: read X and B, write X.
        bytes_moved=float(3 * m * n * DTYPE.itemsize) * iterations,
        reference_iterations=reference_iterations,
        # A few launches of every kernel (the multi-step ones advance up to 16 steps each).
        warmup_iterations=min(iterations, _max_steps(compute, (m, n)) + 1),
        checker=compare_arrays(rtol=1e-5), notes=list(notes or []))


def seed_case(compute, quick: bool = False) -> Case:
    """Jacobi on the 400x266 picture, as in the talk (its image replaced by a built-in one)."""
    rhs = laplacian(builtin_picture()).astype(DTYPE)
    iterations = QUICK_ITERATIONS if quick else SEED_ITERATIONS
    reference = min(iterations, NUMPY_ITERATIONS)
    notes = []
    if reference < iterations:
        notes.append(f"NumPy ran {reference} steps; its time for {iterations} is extrapolated "
                     "linearly")
    title = f"Jacobi {rhs.shape[1]}x{rhs.shape[0]}, {iterations} steps (the seed's problem)"
    return grid_case("jacobi-400x266", title, rhs, iterations, reference, compute, True, notes)


def _grid_bytes(size: int) -> int:
    return (size + 2) * round_up(size + 2, 16) * DTYPE.itemsize


def large_plan(compute, quick: bool = False) -> tuple[list[int], int, list[str]]:
    """Grid sizes and step count of the large cases for this device, with notes."""
    notes = []
    if compute.is_cpu:
        sizes, iterations = ([1024] if quick else [4096, 8192]), (20 if quick else 50)
    else:
        sizes, iterations = ([4096] if quick else [8192, 16384]), (50 if quick else 200)
    if compute.is_cpu or quick:
        gpu_full = "8192^2 and 16384^2"
        chosen = " and ".join(f"{size}^2" for size in sizes)
        why = "--quick" if quick else "a CPU device"
        notes.append(f"{why}: {chosen} instead of {gpu_full}, to keep the run short")
    device = compute.device
    kept = []
    for size in sizes:
        need = 3 * _grid_bytes(size)
        if need > MEMORY_FRACTION * device.global_mem_size or \
                _grid_bytes(size) > device.max_mem_alloc_size:
            notes.append(f"{size}^2 skipped: needs {need / 2**30:.2f} GiB, more than "
                         f"{MEMORY_FRACTION:.0%} of the device's "
                         f"{device.global_mem_size / 2**30:.1f} GiB")
            continue
        kept.append(size)
    return kept, iterations, notes


def large_cases(compute, quick: bool = False) -> tuple[list[Case], list[str]]:
    """Square grids where memory bandwidth decides, sized to the device; and skip notes."""
    sizes, iterations, notes = large_plan(compute, quick)
    skipped = [note for note in notes if "skipped" in note]
    notes = [note for note in notes if note not in skipped]
    found = []
    for size in sizes:
        # NumPy (slow on such grids) runs enough steps for one full launch of every
        # multi-step kernel and a remainder launch, for the check.
        steps = _max_steps(compute, (size, size))
        reference = iterations if iterations <= 2 * (steps + 3) else steps + 3
        rhs = np.random.default_rng(size).random((size, size), dtype=DTYPE) - np.float32(0.5)
        case_notes = list(notes)
        if reference < iterations:
            case_notes.append(f"NumPy ran {reference} steps; its time for {iterations} is "
                              "extrapolated linearly")
        title = f"Jacobi {size}x{size}, {iterations} steps (memory-bound)"
        found.append(grid_case(f"jacobi-{size}x{size}", title, rhs, iterations, reference,
                               compute, False, case_notes))
    return found, [f"large grid {note}" for note in skipped]


def cases(compute, quick: bool = False) -> tuple[list[Case], list[str]]:
    """Every Jacobi case for ``compute``, and notes on what was skipped."""
    large, skipped = large_cases(compute, quick)
    return [seed_case(compute, quick), *large], skipped
