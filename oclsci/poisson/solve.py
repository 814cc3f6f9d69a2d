"""``oclsci.poisson.solve``: the 5-point Poisson problem of ``oclsci jacobi`` to a tolerance.

Three methods on one device, each from zero until ``||B - L x|| / ||B|| < tol``:

- ``multigrid`` (default): cycles of :class:`~oclsci.poisson.multigrid.Multigrid`;
- ``cg``: conjugate gradients preconditioned by one cycle (the flexible form, Polak-Ribiere
  beta, since red-black smoothing in the same order before and after is not symmetric); its
  history holds the true residual ``B - L x``, not the recurrence's;
- ``jacobi``: the talk's method (:mod:`oclsci.jacobi`), one "cycle" being
  :data:`JACOBI_STEPS_PER_CYCLE` steps, for comparison.

The residual is measured after every cycle (one synchronisation each) and kept as the history.
A run stops when it meets ``tol``, after ``max_cycles``, when the residual stalls (multigrid
and CG: the dtype's accuracy floor, less than a :data:`STALL_FACTOR` reduction over
:data:`STALL_CYCLES` cycles),
or when ``should_stop()`` answers true (:class:`~oclsci.errors.Interrupted`; a
:class:`~oclsci.runtime.signals.StopFlag` made with ``raising=True`` raises its own exit).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.arrays import check_dtype, check_fits, check_shape, extremes_finite, validate_grid
from oclsci.errors import ArgumentTypeError, InputError, InvalidArgumentError
from oclsci.poisson.hierarchy import build_levels
from oclsci.poisson.multigrid import POLL_INSIDE_CELLS, Multigrid, check_cycle, stopped
from oclsci.runtime.device import ComputeContext, as_compute_context
from oclsci.runtime.memory import check_memory

METHODS = ("multigrid", "cg", "jacobi")
DEFAULT_TOL = 1e-6
DEFAULT_MAX_CYCLES = 100
JACOBI_STEPS_PER_CYCLE = 1000
STALL_CYCLES, STALL_FACTOR = 3, 0.5


@dataclass
class PoissonResult:
    """A finished solve: the solution and how it got there."""

    x: np.ndarray
    residuals: list[float]  # relative residual before the first cycle and after each
    method: str
    converged: bool
    stalled: bool
    device_seconds: float
    wall_seconds: float
    timing_source: str
    description: str
    extra: dict = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        """Cycles run (CG: iterations; jacobi: blocks of JACOBI_STEPS_PER_CYCLE steps)."""
        return len(self.residuals) - 1

    @property
    def residual(self) -> float:
        """The final relative residual."""
        return self.residuals[-1]

    def rate(self) -> float:
        """Mean reduction of the residual per cycle (geometric mean; NaN without cycles)."""
        first, last = self.residuals[0], self.residuals[-1]
        if self.cycles == 0 or first <= 0 or last <= 0:
            return math.nan
        return (last / first) ** (1.0 / self.cycles)


def check_options(tol: float, max_cycles: int, method: str, cycle: str = "V", pre: int = 2,
                  post: int = 2, smoother: str = "rbgs") -> None:
    """Refuse options that :func:`solve` cannot use, with a one-line
    :class:`~oclsci.errors.InvalidArgumentError` (a bad value) or
    :class:`~oclsci.errors.ArgumentTypeError` (an argument of the wrong type), both
    :class:`InputError` as the command prints them."""
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real):
        raise ArgumentTypeError(f"tol must be a positive number, got {tol!r}")
    if not (math.isfinite(tol) and tol > 0):
        raise InvalidArgumentError(f"tol must be a positive number, got {tol!r}")
    if isinstance(max_cycles, (bool, np.bool_)) or not isinstance(max_cycles, numbers.Integral):
        raise ArgumentTypeError(f"max_cycles must be a whole number >= 1, got {max_cycles!r}")
    if max_cycles < 1:
        raise InvalidArgumentError(f"max_cycles must be a whole number >= 1, got {max_cycles!r}")
    if not isinstance(method, str):
        raise ArgumentTypeError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method not in METHODS:
        raise InvalidArgumentError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    check_cycle(cycle, pre, post, smoother)


class _Progress:
    """The residual history and the stopping rules shared by the methods."""

    def __init__(self, tol: float, max_cycles: int, should_stop: Callable[[], Any] | None,
                 detect_stall: bool = True,
                 report: Callable[[int, int, float], None] | None = None):
        self.tol, self.max_cycles, self.should_stop = tol, max_cycles, should_stop
        self.detect_stall, self.report = detect_stall, report
        self.history: list[float] = []
        self.converged = self.stalled = False

    def expected_cycles(self) -> int:
        """Cycles the solve should take in all, at the last cycle's rate of convergence
        (``max_cycles`` until the residual falls)."""
        cycles = len(self.history) - 1
        if cycles < 1 or not 0 < self.history[-1] < self.history[-2]:
            return self.max_cycles
        if self.history[-1] < self.tol:
            return cycles
        left = math.log(self.tol / self.history[-1]) / math.log(self.history[-1]
                                                                / self.history[-2])
        return min(self.max_cycles, cycles + max(1, math.ceil(left - 1e-9)))

    def record(self, relative: float) -> bool:
        """Add a residual; True when the solve should go on."""
        self.history.append(relative)
        if not math.isfinite(relative):
            raise InputError(f"the residual became {relative} after {len(self.history) - 1} "
                             "cycles: the values overflow the dtype")
        if self.report is not None:
            self.report(len(self.history) - 1, self.expected_cycles(), relative)
        if relative < self.tol:
            self.converged = True
            return False
        cycles = len(self.history) - 1
        if self.detect_stall and cycles >= STALL_CYCLES and \
                relative > STALL_FACTOR * self.history[-1 - STALL_CYCLES]:
            self.stalled = True
            return False
        if self.should_stop is not None:
            answer = self.should_stop()
            if answer:
                raise stopped(answer, f"after {cycles} cycles")
        return cycles < self.max_cycles


def _multigrid(mg: Multigrid, f: Any, u: Any, work: list, scale: float,
               progress: _Progress) -> None:
    r = work[0]
    mg.residual(r, u, f)
    while progress.record(math.sqrt(mg.dot(r, r)) / scale):
        mg.cycle(u, f)
        mg.residual(r, u, f)


def _cg(mg: Multigrid, f: Any, x: Any, work: list, scale: float,
        progress: _Progress) -> None:
    # r is updated by the recurrence; the history records the true residual f - L x (in
    # true_r), which the recurrence can pass below once rounding dominates.
    r, r_old, z, p, q, true_r = work
    mg.axpby(r, 1.0, f, 0.0, f)  # x = 0: r = f
    if not progress.record(math.sqrt(mg.dot(r, r)) / scale):
        return
    mg.zero(z)
    mg.cycle(z, r)
    mg.axpby(p, 1.0, z, 0.0, z)
    rz = mg.dot(r, z)
    while True:
        mg.apply(q, p)
        pq = mg.dot(p, q)
        if pq == 0.0 or rz == 0.0:
            progress.stalled = True
            return
        alpha = rz / pq
        mg.axpby(x, 1.0, x, alpha, p)
        mg.axpby(r_old, 1.0, r, 0.0, r)
        mg.axpby(r, 1.0, r, -alpha, q)
        mg.residual(true_r, x, f)
        if not progress.record(math.sqrt(mg.dot(true_r, true_r)) / scale):
            return
        mg.zero(z)
        mg.cycle(z, r)
        rz_new = mg.dot(r, z)
        beta = (rz_new - mg.dot(r_old, z)) / rz
        mg.axpby(p, 1.0, z, beta, p)
        rz = rz_new


def _jacobi(compute: ComputeContext, rhs: np.ndarray, dtype: np.dtype,
            progress: _Progress) -> tuple[np.ndarray, float, str, str]:
    from oclsci.jacobi.runner import relative_residual, run
    from oclsci.jacobi.solver import JacobiSolver

    solver = JacobiSolver(compute, rhs, x0=np.zeros(rhs.shape, dtype), dtype=dtype)
    seconds, source = 0.0, "host clock"
    keep_going = progress.record(relative_residual(solver))
    while keep_going:
        result = run(solver, solver.iteration + JACOBI_STEPS_PER_CYCLE,
                     should_stop=progress.should_stop)
        seconds += result.device_seconds
        source = result.timing_source
        keep_going = progress.record(result.residual)
    return solver.read(), seconds, source, f"Jacobi, kernel {solver.config.describe()}"


def _check_memory(compute: ComputeContext, dtype: np.dtype, rows: int, n: int, grids: int,
                  what: str) -> None:
    """Refuse, before the levels (host arrays) and buffers are made, a solve whose ``grids``
    finest-level buffers of ``rows`` x ``n`` (with two ghost rows) do not fit the device, or
    whose host arrays do not fit the host: three grids (the right-hand side in ``dtype``, its
    padded upload and the solution) and the levels' per-axis data."""
    cells = (rows + 2) * n
    compute_bytes = grids * cells * dtype.itemsize
    host_bytes = 3 * cells * dtype.itemsize + 128 * (rows + n)
    check_memory(compute, compute_bytes, what, host_bytes=host_bytes)


class PoissonSolver:
    """Buffers and kernels of one grid shape, method and dtype, for :meth:`solve` on one or
    many right-hand sides; everything on the device is made here, before the first solve.

    ``method``, ``dtype``, ``cycle``, ``pre``, ``post``, ``smoother``: as for :func:`solve`
    (``dtype`` None: float64 where the device has it, else float32). ``halo``: this rank's
    slabs under MPI (:class:`oclsci.poisson.distributed.PoissonHalo`, made for
    ``build_levels(shape)``); :meth:`solve` then takes and returns this rank's rows and every
    rank calls it together. ``shape``: (rows, columns), positive integers. Bad arguments,
    and a problem too large for the device's or the host's memory, raise
    :class:`~oclsci.errors.InvalidArgumentError` or :class:`~oclsci.errors.ArgumentTypeError`
    before anything is made.
    """

    def __init__(self, compute: ComputeContext, shape: tuple[int, int], *,
                 method: str = "multigrid", dtype: Any = None, cycle: str = "V",
                 pre: int = 2, post: int = 2, smoother: str = "rbgs", halo: Any = None):
        check_options(DEFAULT_TOL, 1, method, cycle, pre, post, smoother)
        self.compute, self.method, self.shape = compute, method, check_shape(shape, "shape")
        if dtype is None:
            dtype = np.float64 if compute.supports_fp64 else np.float32
        self.dtype = compute.check_dtype(check_dtype(dtype))
        self.halo = halo
        self.mg: Multigrid | None = None
        if method == "jacobi" and halo is not None:
            raise InvalidArgumentError("--method jacobi does not run over MPI ranks here: use "
                                       "`oclsci jacobi --tol`, which does")
        m, n = self.shape
        what = f"a {method} solve of {m} x {n}"
        vectors = 2 + (1 if method == "multigrid" else 6)  # f, x and the work vectors
        _check_memory(compute, self.dtype, m if halo is None else halo.rows(0)[1], n,
                      3 if method == "jacobi" else vectors + 1, what)
        if method == "jacobi":
            return
        self.mg = Multigrid(compute, build_levels(self.shape), self.dtype, cycle=cycle,
                            pre=pre, post=post, smoother=smoother, halo=halo)
        compute.check_allocation(self.mg.device_bytes() + vectors * self.mg.size(0)
                                 * self.dtype.itemsize, what)
        self._f, self._x = self.mg.vector(), self.mg.vector()
        self._work = [self.mg.vector() for _ in range(vectors - 2)]

    @property
    def rows(self) -> tuple[int, int]:
        """(first global row, row count) of the rows that :meth:`solve` takes and returns."""
        return (0, self.shape[0]) if self.mg is None else self.mg.layout[0]

    def solve(self, rhs: Any, tol: float = DEFAULT_TOL, *, max_cycles: int = DEFAULT_MAX_CYCLES,
              should_stop: Callable[[], Any] | None = None,
              progress: Callable[[int, int, float], None] | None = None) -> PoissonResult:
        """Solve ``L x = rhs`` from zero (see :func:`solve`); ``rhs``: :attr:`rows` of it.
        ``progress(cycles, expected_cycles, relative_residual)``, when given, hears each
        cycle's residual and how many cycles the solve should take at its current rate."""
        check_options(tol, max_cycles, self.method)
        values = validate_grid(rhs, "the right-hand side")
        expected = (self.rows[1], self.shape[1])
        if values.shape != expected:
            raise InvalidArgumentError(f"the right-hand side has shape {values.shape}, this "
                                       f"solver takes {expected}")
        check_fits(values, self.dtype, "the right-hand side")
        host = np.ascontiguousarray(values, dtype=self.dtype)
        # Jacobi's residual falls slowly on large grids: only the cycles' stalls end a run.
        progress = _Progress(tol, max_cycles, should_stop, detect_stall=self.method != "jacobi",
                             report=progress)
        wall = time.perf_counter()
        if self.mg is None:
            x, seconds, source, description = _jacobi(self.compute, host, self.dtype, progress)
            extra: dict = {"steps": (len(progress.history) - 1) * JACOBI_STEPS_PER_CYCLE}
        else:
            mg = self.mg
            big = self.shape[0] * self.shape[1] >= POLL_INSIDE_CELLS
            mg.should_stop = should_stop if big or self.halo is None else None
            mg.upload(self._f, host)
            squares = mg.dot(self._f, self._f)
            scale = math.sqrt(squares) or 1.0
            stopwatch = self.compute.stopwatch()
            mg.first_event = None
            mg.zero(self._x)
            run = _multigrid if self.method == "multigrid" else _cg
            run(mg, self._f, self._x, self._work, scale, progress)
            stopwatch.record(mg.first_event)
            stopwatch.record(mg.last_event)
            seconds = stopwatch.stop()
            source = stopwatch.source
            x = mg.download(self._x)
            description = mg.describe() if self.method == "multigrid" \
                else f"conjugate gradients preconditioned by one {mg.describe()}"
            extra = {"levels": [level.shape for level in mg.levels]}
        bad = not extremes_finite(x)
        if self.halo is not None:  # every rank raises alike (under MPI, x is this rank's rows)
            bad = self.halo.allreduce_sum(float(bad)) > 0
        if bad:
            raise InputError("the solution holds NaN or infinite values: the values overflow "
                             f"{self.dtype.name}")
        return PoissonResult(x=x, residuals=progress.history, method=self.method,
                             converged=progress.converged, stalled=progress.stalled,
                             device_seconds=seconds, wall_seconds=time.perf_counter() - wall,
                             timing_source=source, description=description, extra=extra)


def solve(rhs: Any, tol: float = DEFAULT_TOL, *, method: str = "multigrid",
          dtype: Any = None, device: Any = None, max_cycles: int = DEFAULT_MAX_CYCLES,
          cycle: str = "V", pre: int = 2, post: int = 2, smoother: str = "rbgs",
          should_stop: Callable[[], Any] | None = None,
          progress: Callable[[int, int, float], None] | None = None) -> PoissonResult:
    """Solve ``L x = rhs`` (5-point Laplacian, zero boundary; ``oclsci jacobi``'s system).

    ``tol``: stop when ``||rhs - L x|| / ||rhs|| < tol``; ``method``: "multigrid", "cg" or
    "jacobi"; ``dtype``: float32 or float64 (None: float64 where the device has it, else
    float32); ``device``: a SPEC, a ComputeContext or None (``PYOPENCL_CTX``);
    ``max_cycles``: most cycles (CG iterations, blocks of 1000 Jacobi steps); ``cycle``
    ("V" or "F"), ``pre``, ``post`` and ``smoother`` ("rbgs" or "jacobi") shape the multigrid
    cycle. Returns a :class:`PoissonResult` whose ``converged`` says whether ``tol`` was met
    (``stalled``: the residual stopped falling, the dtype's floor). For many right-hand sides
    of one shape, make a :class:`PoissonSolver` once and call its ``solve``.
    ``progress(cycles, expected_cycles, relative_residual)`` hears every cycle.
    """
    check_options(tol, max_cycles, method, cycle, pre, post, smoother)
    compute = as_compute_context(device)
    shape = np.shape(rhs)
    if len(shape) != 2 or 0 in shape:
        validate_grid(rhs, "the right-hand side")  # says what is wrong; solver.solve checks
    solver = PoissonSolver(compute, shape, method=method, dtype=dtype, cycle=cycle, pre=pre,
                           post=post, smoother=smoother)
    return solver.solve(rhs, tol, max_cycles=max_cycles, should_stop=should_stop,
                        progress=progress)


__all__ = ["METHODS", "PoissonResult", "PoissonSolver", "solve"]
