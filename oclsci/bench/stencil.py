"""Stencil benchmark cases: a user's stencil against NumPy slicing, and the seed's Jacobi
written as a stencil against ``oclsci jacobi``.

- 2-D 5-point heat on 2048^2 and 3-D 7-point heat on 256^3, float32, 1000 steps (``--quick``:
  256^2 and 48^3): the update written with NumPy slices (the reference), each stencil kernel
  of :data:`oclsci.stencil.kernels.KERNELS` that takes the stencil (``streaming``: the 2-D
  one) with its defaults for the device, and ``auto`` (a
  configuration tuned by ``oclsci tune --stencil`` where the cache holds one);
- the seed's Jacobi sweep as a stencil (``auto``) beside ``oclsci jacobi``'s ``auto`` on the
  same grid (2048^2 on CPUs, 16384^2 on GPUs), the seed's NumPy loop as the reference.

Every result must equal NumPy's bit for bit (:func:`exact`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.bench.core import Case, Check, Timing, host_timed
from oclsci.bench.jacobi import NumpyJacobi, SolverJacobi
from oclsci.jacobi.kernels import choose_config
from oclsci.runtime import programs
from oclsci.runtime.launch import Pacer
from oclsci.stencil import kernels
from oclsci.stencil.api import Stencil
from oclsci.stencil.solver import StencilSolver, program, stencil_geometry

DTYPE = np.dtype(np.float32)
HEAT_2D = "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
HEAT_3D = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
           " + u[0, 0, 1] - 6 * u)")
JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"
K_2D, K_3D = 0.2, 0.1
# (grid side, steps, NumPy's steps) per case and run kind; NumPy's time for the rest of the
# steps is extrapolated (its 2048^2 step takes about 60 ms on a CPU core, 256^3 about 0.5 s).
PLANS = {
    ("heat2d", False): (2048, 1000, 50), ("heat2d", True): (256, 200, 200),
    ("heat3d", False): (256, 1000, 10), ("heat3d", True): (48, 100, 100),
    ("jacobi", False): (2048, 1000, 50), ("jacobi", True): (256, 200, 200),
}
GPU_JACOBI = (16384, 200, 20)  # the grid, on GPUs
MEMORY_FRACTION = 0.5  # of the device's memory the Jacobi grids may take


def exact(output: Any, reference: Any) -> Check:
    """Pass when ``output`` equals ``reference`` bit for bit (same shape and dtype)."""
    x, ref = np.asarray(output), np.asarray(reference)
    if x.shape != ref.shape or x.dtype != ref.dtype:
        return Check(False, f"WRONG: {x.dtype}{list(x.shape)} instead of "
                            f"{ref.dtype}{list(ref.shape)}")
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    differ = int(np.count_nonzero(x.view(unsigned) != ref.view(unsigned)))
    if differ:
        return Check(False, f"WRONG: {differ} cells differ from NumPy's bits",
                     {"cells_differing": differ})
    return Check(True, "ok: equal to NumPy bit for bit", {"cells_differing": 0})


def slicing_step(new: np.ndarray, u: np.ndarray, k: Any, center: Any) -> None:
    """One heat step on padded arrays, written with NumPy slices in the stencil's order
    (2-D: 5 points, 3-D: 7)."""
    inner = (slice(1, -1),) * u.ndim
    total = None
    for axis in range(u.ndim):
        for shift in (slice(None, -2), slice(2, None)):
            window = u[inner[:axis] + (shift,) + inner[axis + 1:]]
            total = window if total is None else total + window
    c = u[inner]
    new[inner] = c + k * (total - center * c)


class NumpySlicing:
    """The heat update written with NumPy slices on padded arrays (set-up untimed)."""

    kind = "host"
    name = "numpy"
    description = "NumPy slicing on the host, float32, in the stencil's order"

    def __init__(self, u0: np.ndarray, k: float):
        self.u0, self.k = u0, DTYPE.type(k)
        self.center = DTYPE.type(2 * u0.ndim)

    def run(self, iterations: int) -> Timing:
        u = np.pad(self.u0, 1)
        new = u.copy()

        def loop() -> np.ndarray:
            a, b = u, new
            for _ in range(iterations):
                slicing_step(b, a, self.k, self.center)
                a, b = b, a
            return a[(slice(1, -1),) * a.ndim].copy()

        return host_timed(loop)


def timed_steps(solver: StencilSolver, steps: int) -> Any:
    """Run ``steps`` steps in paced chunks, the first one launch; return the stopwatch
    (from the first launch to the queue's end)."""
    stopwatch = solver.compute.stopwatch()
    pacer, per_launch = Pacer(), solver.steps_per_launch
    while solver.iteration < steps:
        launches = 1 if solver.iteration == 0 else pacer.launches()
        chunk = min(launches * per_launch, steps - solver.iteration)
        event = solver.advance(chunk)
        stopwatch.record(event)
        pacer.submitted(event, -(-chunk // per_launch))
    stopwatch.stop()
    return stopwatch


class StencilKernel:
    """One stencil kernel (or ``auto``) through :class:`~oclsci.stencil.StencilSolver`:
    buffers and kernels made untimed, the steps timed."""

    kind = "opencl"

    def __init__(self, compute: Any, stencil: Stencil, u0: np.ndarray, kernel: str,
                 fields: dict | None = None, name: str | None = None):
        self.compute, self.stencil, self.u0, self.kernel = compute, stencil, u0, kernel
        self.fields = fields or {}
        self.name = name or kernel
        self.description = f"oclsci.stencil kernel {kernel}"

    def run(self, iterations: int) -> Timing:
        problem = self.stencil.problem(self.u0, iterations, fields=self.fields, dtype=DTYPE)
        solver = StencilSolver(self.compute, problem, kernel=self.kernel)
        rest = iterations % solver.steps_per_launch
        if rest:  # build the remainder launch's program outside the timing
            template, options, params = program(problem, DTYPE, solver.config.with_steps(rest))
            programs.build_program(self.compute, template, options, **params)
        self.description = f"oclsci.stencil kernel {self.kernel}: {solver.config.describe()}"
        stopwatch = timed_steps(solver, iterations)
        output = solver.read()
        del solver  # hold no device memory between runs
        return Timing(stopwatch.wall_seconds, stopwatch.device_seconds, output,
                      stopwatch.source)


def warmup_steps(compute: Any, stencil: Stencil, shape: tuple[int, ...],
                 names: list[str]) -> int:
    """A full launch of every kernel of ``names`` on this grid, and a remainder launch."""
    expression = stencil.expression
    geo = stencil_geometry(expression, shape, DTYPE)
    return 1 + max(kernels.choose(compute, name, geo, expression, DTYPE)[0].steps_per_launch
                   for name in names)


def heat_case(compute: Any, dims: int, quick: bool) -> Case:
    """The 2-D 5-point or 3-D 7-point heat update: NumPy slicing, each kernel, ``auto``."""
    side, steps, numpy_steps = PLANS[(f"heat{dims}d", quick)]
    shape = (side,) * dims
    k = K_2D if dims == 2 else K_3D
    stencil = Stencil(HEAT_2D if dims == 2 else HEAT_3D, params={"k": k})
    u0 = np.random.default_rng(side).uniform(0, 1, shape).astype(DTYPE)
    geo = stencil_geometry(stencil.expression, shape, DTYPE)
    names = [name for name, spec in kernels.KERNELS.items() if spec.handles(geo) is None]
    names.append("auto")
    cells = float(np.prod(shape))
    grid = "x".join(map(str, shape))
    notes = [f"NumPy ran {numpy_steps} steps; its time for {steps} is extrapolated linearly"] \
        if numpy_steps < steps else []
    return Case(
        id=f"stencil-heat{dims}d-{grid}", workload="stencil",
        title=f"Stencil: {dims}-D {2 * dims + 1}-point heat {grid}, {steps} steps",
        problem={"expression": stencil.expression.text, "shape": list(shape),
                 "dtype": DTYPE.name, "iterations": steps},
        iterations=steps, iteration_unit="step", reference=NumpySlicing(u0, k),
        variants=[StencilKernel(compute, stencil, u0, name) for name in names],
        work=cells * steps, throughput_unit="cell updates/s",
        bytes_moved=2 * cells * DTYPE.itemsize * steps,  # read u, write u
        reference_iterations=numpy_steps,
        warmup_iterations=min(steps, warmup_steps(compute, stencil, shape, names)),
        checker=exact, notes=notes)


def jacobi_plan(compute: Any, quick: bool) -> tuple[int, int, int, list[str]]:
    """Grid side, steps and NumPy's steps of the Jacobi case on this device, with notes."""
    side, steps, numpy_steps = PLANS[("jacobi", quick)]
    notes = []
    if not compute.is_cpu and not quick:
        side, steps, numpy_steps = GPU_JACOBI
        while side > 2048 and 3 * side * side * DTYPE.itemsize > \
                MEMORY_FRACTION * compute.device.global_mem_size:
            side //= 2
        if side != GPU_JACOBI[0]:
            notes.append(f"{side}^2 instead of {GPU_JACOBI[0]}^2: the device's memory")
    if numpy_steps < steps:
        notes.append(f"NumPy ran {numpy_steps} steps; its time for {steps} is extrapolated "
                     "linearly")
    return side, steps, numpy_steps, notes


def jacobi_case(compute: Any, quick: bool) -> Case:
    """The seed's Jacobi as a stencil (``auto``) beside ``oclsci jacobi``'s ``auto``."""
    side, steps, numpy_steps, notes = jacobi_plan(compute, quick)
    rhs = np.random.default_rng(side).random((side, side), dtype=DTYPE) - DTYPE.type(0.5)
    stencil = Stencil(JACOBI, fields=["b"])
    jacobi = SolverJacobi(compute, rhs, "auto", default=True)
    jacobi.name = "jacobi-auto"
    variants = [StencilKernel(compute, stencil, rhs, "auto", {"b": rhs}, name="stencil-auto"),
                jacobi]
    cells = float(side * side)
    return Case(
        id=f"stencil-jacobi-{side}x{side}", workload="stencil",
        title=f"Stencil: the seed's Jacobi as a stencil vs oclsci jacobi, {side}x{side}, "
              f"{steps} steps",
        problem={"expression": JACOBI, "shape": [side, side], "dtype": DTYPE.name,
                 "iterations": steps},
        iterations=steps, iteration_unit="step", reference=NumpyJacobi(rhs),
        variants=variants, work=cells * steps, throughput_unit="cell updates/s",
        bytes_moved=3 * cells * DTYPE.itemsize * steps,  # read u and b, write u
        reference_iterations=numpy_steps,
        warmup_iterations=min(steps, max(
            warmup_steps(compute, stencil, rhs.shape, ["auto"]),
            choose_config(compute, "auto", DTYPE, rhs.shape).steps_per_launch + 1)),
        checker=exact, notes=notes)


def cases(compute: Any, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The stencil cases for ``compute``, and notes on what was skipped (none)."""
    return [heat_case(compute, 2, quick), heat_case(compute, 3, quick),
            jacobi_case(compute, quick)], []
