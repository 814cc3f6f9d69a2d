"""Running a Jacobi solver: the loop that advances it in paced chunks between the points
where a run must stop (halo exchanges, residual checks, checkpoints, stop requests), the
checks of its arguments (tolerance, periods; step counts: :func:`oclsci.arrays.check_steps`),
the relative residual, and the result of a run; the solver of a whole grid on one device
(:func:`whole_grid_solver`: one JacobiSolver, or the grid in bands of rows on queues of their
own where :func:`queue_bands` gives several).

:func:`run` takes any solver with the interface of
:class:`~oclsci.jacobi.solver.JacobiSolver` and a ``halo`` (:class:`SingleDevice`, or an MPI
rank's :class:`~oclsci.mpi.slabs.SlabHalo`).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.arrays import check_dtype, check_finite, check_fits, check_steps
from oclsci.errors import (
    ArgumentTypeError,
    DeviceMemoryError,
    InputError,
    Interrupted,
    InvalidArgumentError,
)
from oclsci.jacobi.kernels import KernelConfig, choose_config
from oclsci.jacobi.solver import JacobiSolver, validate_rhs
from oclsci.runtime.device import as_compute_context
from oclsci.runtime.launch import Pacer
from oclsci.runtime.signals import EXIT_SIGNAL_BASE, signal_name, stop_exit_code


def check_run_options(tol: Any, check_every: Any, checkpoint_every: Any) -> None:
    """Refuse a non-positive or NaN ``tol`` and step periods that are not positive integers."""
    if tol is not None:
        if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
            raise ArgumentTypeError(f"tol must be a number, got {type(tol).__name__} {tol!r}")
        if not (math.isfinite(tol) and tol > 0):
            raise InvalidArgumentError(f"tol must be a positive finite number, got {tol}")
    for name, value, least in (("check_every", check_every, 1),
                               ("checkpoint_every", checkpoint_every, 0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ArgumentTypeError(f"{name} must be an integer, got {type(value).__name__} "
                                    f"{value!r}")
        if value < least:
            raise InvalidArgumentError(f"{name} must be >= {least}, got {value}")


@dataclass
class JacobiResult:
    """What a run produced: the iterate and the figures of its summary."""

    x: np.ndarray
    iterations: int
    kernel: str
    config: KernelConfig
    device_seconds: float
    wall_seconds: float
    timing_source: str
    residual: float
    converged: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def us_per_iteration(self) -> float:
        """Device microseconds per Jacobi step."""
        return 1e6 * self.device_seconds / max(self.extra.get("steps_run", self.iterations), 1)

    def cell_updates_per_second(self, cells: int) -> float:
        """Cell updates per second of device time, for a grid of ``cells`` cells."""
        steps = self.extra.get("steps_run", self.iterations)
        return cells * steps / self.device_seconds if self.device_seconds > 0 else float("nan")


class SingleDevice:
    """The halo object of a one-device run: nothing to exchange, sums are local."""

    steps_between_exchanges = 0

    def exchange(self, solver: JacobiSolver) -> None:
        """Nothing to exchange on one device."""

    def allreduce_sum(self, value: float) -> float:
        """The sum over one device is the value itself."""
        return value

    def agree(self, stop: Any, launches: int) -> tuple[Any, int]:
        """One device: its own stop request (a signal's number, or a truth value) and chunk
        size."""
        return stop, launches

    def owned_rows(self, solver: JacobiSolver) -> tuple[int, int]:
        """All interior rows belong to the one device."""
        return 1, solver.m


def relative_residual(solver: JacobiSolver, halo: Any = None) -> float:
    """``||L x - B||_2 / ||B||_2`` over the whole (possibly distributed) grid."""
    halo = halo or SingleDevice()
    first, last = halo.owned_rows(solver)
    residual = halo.allreduce_sum(solver.residual_sum_of_squares(first, last))
    scale = halo.allreduce_sum(solver.rhs_sum_of_squares(first, last))
    return math.sqrt(residual / scale) if scale > 0 else math.sqrt(residual)


def run(solver: JacobiSolver, iterations: int, *, tol: float | None = None,
        check_every: int = 1000, checkpoint: Callable[[JacobiSolver], None] | None = None,
        checkpoint_every: int = 0, progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None, halo: Any = None,
        residual: bool = True) -> JacobiResult:
    """Advance ``solver`` until it has done ``iterations`` steps in all (or met ``tol``).

    Between chunks of launches: exchange halos (``halo``), test the residual every
    ``check_every`` steps when ``tol`` is set, call ``checkpoint`` every ``checkpoint_every``
    steps, report ``progress(done, total)``, and on ``should_stop()`` write a checkpoint and
    raise :class:`Interrupted`. The host stays about a tenth of a second of device work ahead
    (:class:`~oclsci.runtime.launch.Pacer`) and polls ``should_stop`` that often. ``residual=False``
    skips the final residual (NaN in the result), for timings.
    """
    iterations = check_steps(iterations, "iterations")
    check_run_options(tol, check_every, checkpoint_every)
    halo = halo or SingleDevice()
    stopwatch = solver.compute.stopwatch()
    start = solver.iteration
    spl = solver.steps_per_launch
    # Host synchronisation points that the options ask for; between them, the pacer keeps
    # the host about a tenth of a second ahead of the device and sets when to poll.
    periods = [p for p in (halo.steps_between_exchanges, check_every if tol else 0,
                           checkpoint_every if checkpoint else 0) if p]
    pacer = Pacer()
    next_poll = start + pacer.launches() * spl
    converged = False
    while solver.iteration < iterations:
        done = solver.iteration
        chunk_end = min([iterations, next_poll] + [(done // p + 1) * p for p in periods])
        steps = chunk_end - done
        pacer.submitted(solver.advance(steps, stopwatch), -(-steps // spl))
        done = solver.iteration
        if halo.steps_between_exchanges and done % halo.steps_between_exchanges == 0:
            halo.exchange(solver)
        if tol and done % check_every == 0 and relative_residual(solver, halo) < tol:
            converged = True
            break
        if checkpoint and checkpoint_every and done % checkpoint_every == 0 and done < iterations:
            checkpoint(solver)
        if done < next_poll:
            continue
        # Every rank polls at the same step and agrees on the next poll.
        stop, launches = halo.agree(should_stop() if should_stop else False, pacer.launches())
        next_poll = done + launches * spl
        if progress:
            progress(done, iterations)
        if stop:
            stopwatch.stop()
            code = stop_exit_code(stop)
            signum = code - EXIT_SIGNAL_BASE if code > EXIT_SIGNAL_BASE else None
            by = signal_name(signum) if signum else "a stop request"
            if checkpoint:
                checkpoint(solver)
                raise Interrupted(f"stopped by {by} at iteration {done}; checkpoint written, "
                                  "resume with --resume", signum=signum)
            raise Interrupted(f"stopped by {by} at iteration {done}; no checkpoint requested",
                              exit_code=code, signum=signum)
    pacer.drain()
    if halo.steps_between_exchanges and solver.iteration % halo.steps_between_exchanges:
        halo.exchange(solver)
    stopwatch.stop()
    final = relative_residual(solver, halo) if residual else math.nan
    if tol and final < tol:
        converged = True
    return JacobiResult(
        x=np.empty(0), iterations=solver.iteration, kernel=solver.config.name,
        config=solver.config, device_seconds=stopwatch.device_seconds,
        wall_seconds=stopwatch.wall_seconds, timing_source=stopwatch.source, residual=final,
        converged=converged, extra={"steps_run": solver.iteration - start},
    )


def queue_bands(compute: Any, config: KernelConfig, shape: tuple[int, int],
                environ: Any = None, *, exchanged: bool = False) -> int:
    """Bands of rows for a grid of ``shape`` on ``compute`` with ``config``:
    ``OCLSCI_QUEUE_BANDS`` (a count; 1 turns bands off; at most one per row), or, unset or
    ``auto``, what the configuration's spec asks for there (``exchanged``: the grid is an
    MPI rank's interior, :class:`~oclsci.jacobi.overlap.JacobiPieces`)."""
    text = (environ if environ is not None else os.environ).get("OCLSCI_QUEUE_BANDS", "")
    text = text.strip().lower()
    if text in ("", "auto"):
        return max(1, int(config.spec.queue_bands(config.values(), tuple(shape),
                                                  bool(compute.is_gpu), exchanged)))
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"OCLSCI_QUEUE_BANDS must be a positive count of bands or auto, "
                         f"got {text!r}")
    return min(int(text), shape[0])


def whole_grid_solver(compute: Any, rhs: Any, x0: Any = None, *, dtype: Any = np.float32,
                      kernel: str = "auto", rhs_checked: bool = False) -> Any:
    """The solver of a whole grid on ``compute``'s device, arguments as for
    :class:`JacobiSolver`: a :class:`~oclsci.jacobi.concurrent.ConcurrentJacobi` where
    :func:`queue_bands` gives more than one band and the bands' extra rows fit the device's
    memory, else a JacobiSolver."""
    grid = validate_rhs(rhs, check_finite=False)  # the shape and kind; values below
    checked = compute.check_dtype(check_dtype(dtype))
    config = choose_config(compute, kernel, checked, grid.shape)
    bands = queue_bands(compute, config, grid.shape)
    if bands > 1:
        from oclsci.jacobi.concurrent import ConcurrentJacobi, banded_bytes  # only in bands

        try:
            compute.check_allocation(
                banded_bytes(grid.shape, checked, config.steps_per_launch, bands), "bands")
        except DeviceMemoryError:
            bands = 1  # the grid alone may fit: one queue
    if bands == 1:
        return JacobiSolver(compute, rhs, x0=x0, dtype=dtype, kernel=kernel,
                            rhs_checked=rhs_checked)
    grid = validate_rhs(rhs, check_finite=not rhs_checked)
    if not rhs_checked:
        check_fits(grid, checked, "the right-hand side")
    return ConcurrentJacobi(compute, grid, x0, dtype=checked, bands=bands, kernel=kernel)


def jacobi(rhs: Any, iterations: int = 150000, x0: Any = None, dtype: Any = np.float32,
           device: Any = None, kernel: str = "auto", tol: float | None = None,
           check_every: int = 1000) -> np.ndarray:
    """Reconstruct X from its Laplacian ``rhs`` by ``iterations`` Jacobi steps; return X.

    ``device`` is a SPEC string, a :class:`~oclsci.runtime.device.ComputeContext` or None (default
    selection). ``kernel`` is one of :data:`KERNEL_NAMES` or ``auto``. Bad arguments raise
    :class:`~oclsci.errors.InvalidArgumentError` (a ValueError) or
    :class:`~oclsci.errors.ArgumentTypeError` (a TypeError) before any work; a result that
    overflowed the dtype raises :class:`~oclsci.errors.NonFiniteResultError`.
    """
    iterations = check_steps(iterations, "iterations")
    check_run_options(tol, check_every, 0)
    dtype = check_dtype(dtype)
    if not isinstance(kernel, str):
        raise ArgumentTypeError(f"kernel must be a name such as 'auto', got {kernel!r}")
    compute = as_compute_context(device)
    solver = whole_grid_solver(compute, rhs, x0=x0, dtype=dtype, kernel=kernel)
    run(solver, iterations, tol=tol, check_every=check_every)
    return check_finite(solver.read())
