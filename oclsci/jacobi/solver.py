"""Jacobi reconstruction of an image from its Laplacian on one OpenCL device.

``X[i,j] <- 0.25 * (X[i-1,j] + X[i+1,j] + X[i,j-1] + X[i,j+1] - B[i,j])`` with X padded by a
ring of zeros and initialised with B inside, as in the seed talk. Every kernel evaluates the
same operations in the same order as NumPy, so results agree bit for bit with
:func:`oclsci.jacobi.reference.jacobi_numpy`.

The solver is MPI-free: a distributed run (see :mod:`oclsci.mpi`) passes a ``halo`` object to
:func:`run` that exchanges rows between launches and sums residuals over ranks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import ArgumentTypeError, InputError, Interrupted, InvalidArgumentError
from oclsci.jacobi import kernels
from oclsci.jacobi.checks import (
    MAX_ITERATIONS,  # noqa: F401 - re-exported for the commands
    check_dtype,
    check_finite,
    check_fits,
    check_iterations,
    check_run_options,
    validate_grid,
)
from oclsci.jacobi.tuning import KernelConfig, choose_config, device_candidates
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext, as_compute_context
from oclsci.runtime.launch import Launch
from oclsci.runtime.pacing import Pacer

KERNEL_NAMES = tuple(kernels.KERNELS)
# Launches enqueued between throttling events (see JacobiSolver.advance).
LAUNCH_BATCH = 256
RESIDUAL_GROUP_SIZE = 64


def validate_rhs(rhs: Any) -> np.ndarray:
    """Return ``rhs`` as a 2-D finite float array, or raise :class:`InputError`."""
    return validate_grid(rhs, "the right-hand side")


class WorkGroupTooLarge(InputError):
    """A configuration's work-group exceeds what its built kernel allows on the device."""


def _candidates(compute: ComputeContext, kernel: str, dtype: np.dtype,
                shape: tuple[int, int]) -> list[KernelConfig]:
    """The configuration ``kernel`` (or ``auto``) means here, then the smaller defaults."""
    first = choose_config(compute, kernel, dtype, shape)
    return [first] + [c for c in device_candidates(compute, first.name, dtype, shape)
                      if c != first]


def choose_fitting_config(compute: ComputeContext, kernel: str, dtype: Any,
                          shape: tuple[int, int]) -> KernelConfig:
    """The configuration :class:`JacobiSolver` takes for ``kernel`` (or ``auto``): the first
    candidate whose built kernel accepts its work-group (CL_KERNEL_WORK_GROUP_SIZE). For
    callers that must agree on one configuration before building solvers (MPI ranks)."""
    dtype = np.dtype(dtype)
    candidates = _candidates(compute, kernel, dtype, shape)
    for config in candidates:
        built = programs.new_kernel(compute, config.spec.template,
                                    **dict(config.template_params(), dtype=dtype))
        if config.work_group_size() <= programs.kernel_work_group_size(compute, built):
            return config
    return candidates[-1]


class JacobiSolver:
    """Device buffers and kernels for the Jacobi iteration on an m x n grid.

    Rows and columns are numbered in the padded grid: 0 and m+1 (n+1) are the fixed boundary.
    """

    def __init__(self, compute: ComputeContext, rhs: Any, x0: Any = None, dtype: Any = np.float32,
                 kernel: str = "auto", config: KernelConfig | None = None):
        rhs = validate_rhs(rhs)
        self.compute = compute
        self.dtype = compute.check_dtype(check_dtype(dtype))
        check_fits(rhs, self.dtype, "the right-hand side")
        if x0 is not None:
            x0 = validate_grid(x0, "x0")
            if x0.shape != rhs.shape:
                raise InvalidArgumentError(f"x0 has shape {x0.shape}, expected {rhs.shape} "
                                           "(the right-hand side's)")
            check_fits(x0, self.dtype, "x0")
        self.m, self.n = rhs.shape
        # Pad rows to a multiple of 16 elements so that rows start aligned.
        self.row_stride = -(-(self.n + 2) // 16) * 16
        nbytes = 3 * (self.m + 2) * self.row_stride * self.dtype.itemsize
        compute.check_allocation(nbytes, f"a {self.m}x{self.n} {self.dtype.name} grid")
        candidates = [config] if config else _candidates(compute, kernel, self.dtype,
                                                         (self.m, self.n))
        self.config = candidates[0]
        kernels.get(self.config.name)
        self.iteration = 0

        # Upload B and two copies of X (ping-pong) in the padded layout.
        self.rhs_buffer = self._upload(rhs, cl.mem_flags.READ_ONLY)
        x_start = self.rhs_buffer if x0 is None else self._upload(x0, cl.mem_flags.READ_WRITE)
        self.x_buffers = [x_start] if x0 is not None else []
        while len(self.x_buffers) < 2:  # copies on the device, not uploads
            buffer = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE, x_start.size)
            cl.enqueue_copy(compute.queue, buffer, x_start)
            self.x_buffers.append(buffer)
        self.current = 0
        self._rhs_sums_of_squares: dict[tuple[int, int], float] = {}
        # A chosen (not given) configuration that the built kernel cannot run with gives way
        # to the next default, smaller: never a launch failure.
        for index, candidate in enumerate(candidates):
            self.config = candidate
            try:
                self._build_kernels()
                break
            except WorkGroupTooLarge:
                if index == len(candidates) - 1:
                    raise

    def _interior_copy_args(self) -> dict:
        """Arguments of a rectangular copy between the padded grid and an m x n array."""
        item = self.dtype.itemsize
        return {"buffer_origin": (item, 1), "host_origin": (0, 0),
                "region": (self.n * item, self.m), "buffer_pitches": (self.row_stride * item,),
                "host_pitches": (self.n * item,)}

    def _upload(self, interior: np.ndarray, flags: int) -> Any:
        """A padded-grid buffer: zeros, with ``interior`` written in (no padded host copy)."""
        interior = np.ascontiguousarray(interior, dtype=self.dtype)
        nbytes = (self.m + 2) * self.row_stride * self.dtype.itemsize
        buffer = cl.Buffer(self.compute.context, flags, nbytes)
        queue = self.compute.queue
        cl.enqueue_fill_buffer(queue, buffer, np.zeros(1, self.dtype), 0, nbytes)
        cl.enqueue_copy(queue, buffer, interior, **self._interior_copy_args())
        return buffer

    def _build_kernels(self) -> None:
        config, spec = self.config, self.config.spec
        config.validate(max_work_group_size=int(self.compute.device.max_work_group_size),
                        local_mem_bytes=int(self.compute.device.local_mem_size),
                        dtype=self.dtype)
        params = dict(config.template_params(), dtype=self.dtype)
        self.steps_per_launch = config.steps_per_launch
        self.global_size, self.local_size = config.launch_shape(self.m, self.n)
        # The kernel's arguments by name (its spec lists them in order).
        values: dict[str, Any] = {"rhs": self.rhs_buffer, "m": self.m, "n": self.n,
                                  "row_stride": self.row_stride,
                                  "steps": self.steps_per_launch}
        layout = config.scratch_layout(self.m, self.n)
        if layout is not None:
            nbytes = layout["scratch_elements"] * self.dtype.itemsize
            self.compute.check_allocation(2 * nbytes,
                                          f"the {config.name} kernel's scratch ({layout})")
            # Zeros from the host: never read before written, but Oclgrind 21.10 tracks
            # kernel-written memory wrongly in buffers it recycles or fills on the device.
            self._scratch = cl.Buffer(self.compute.context,
                                      cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                      hostbuf=np.zeros(layout["scratch_elements"], self.dtype))
            values.update(layout, scratch=self._scratch)
        multi_step = spec.steps_param is not None
        self._steps_argument = spec.argument_index("steps") if multi_step else None
        # One kernel object per direction (x0 -> x1, x1 -> x0), arguments set once; for
        # multi-step kernels a second pair whose step count is set for remainder launches.
        queue = self.compute.queue
        self._pending_batches: list = []
        self._launches: list[Launch] = []
        self._remainder_launches: list[Launch] = []
        for source in (0, 1):
            values.update(x_new=self.x_buffers[1 - source], x_old=self.x_buffers[source])
            args = [argument.value(values[argument.name]) for argument in spec.arguments]
            kernel = programs.new_kernel(self.compute, spec.template, **params)
            if source == 0:
                self._check_kernel_work_group(kernel)
            kernel.set_args(*args)
            self._launches.append(Launch(queue, kernel, self.global_size, self.local_size))
            if multi_step:
                remainder = programs.new_kernel(self.compute, spec.template, **params)
                remainder.set_args(*args)
                self._remainder_launches.append(
                    Launch(queue, remainder, self.global_size, self.local_size))

    def _check_kernel_work_group(self, kernel: Any) -> None:
        """Refuse a work-group larger than the built kernel allows (CL_KERNEL_WORK_GROUP_SIZE)."""
        if self.local_size is None:
            return
        items = math.prod(self.local_size)
        limit = programs.kernel_work_group_size(self.compute, kernel)
        if items > limit:
            raise WorkGroupTooLarge(
                f"{self.config.describe()}: work-group of {items} exceeds the {limit} that "
                f"device {self.compute.spec} ({self.compute.name}) allows for this kernel "
                "(CL_KERNEL_WORK_GROUP_SIZE); choose a smaller local_w x local_h")

    def _throttle(self, event: Any) -> None:
        """Wait for the batch before last: keeps the queue's backlog bounded."""
        pending = self._pending_batches
        pending.append(event)
        if len(pending) > 2:
            pending.pop(0).wait()

    def reconfigure(self, config: KernelConfig) -> None:
        """Switch to another kernel configuration (same grid, same buffers and iterate)."""
        self.config = config
        self._build_kernels()

    def advance(self, steps: int, stopwatch: Any = None) -> Any:
        """Enqueue ``steps`` Jacobi steps without waiting; return the last launch's event.

        Full launches of ``steps_per_launch`` steps, then one launch for the remainder. Only
        the last launch, the first one when a stopwatch times the run, and one launch in
        ``LAUNCH_BATCH`` (the host waits for the batch before last, so that a long call
        never queues more than two batches) carry an event. Returns None for no steps.
        """
        full_launches, remainder = divmod(int(steps), self.steps_per_launch)
        current = self.current
        launches = (self._launches[current], self._launches[current ^ 1])
        fast = (launches[0].fast, launches[1].fast)
        event = None
        k = 0
        if stopwatch is not None and full_launches:
            event = launches[0].with_event()
            stopwatch.record(event)
            k = 1
        # The launches before the last full one: batches without events, one event per batch.
        while k < full_launches - 1:
            batch_end = min(full_launches - 1, k + LAUNCH_BATCH)
            for j in range(k, batch_end - 1):
                fast[j & 1]()
            if batch_end - k == LAUNCH_BATCH:
                self._throttle(launches[(batch_end - 1) & 1].with_event())
            else:
                fast[(batch_end - 1) & 1]()
            k = batch_end
        if k < full_launches:
            event = launches[k & 1].with_event()
        current ^= full_launches & 1
        if remainder:
            launch = self._remainder_launches[current]
            launch.kernel.set_arg(self._steps_argument, np.int32(remainder))
            event = launch.with_event()
            current ^= 1
        if stopwatch is not None and event is not None:
            stopwatch.record(event)
        self.current = current
        self.iteration += int(steps)
        return event

    @property
    def x_buffer(self) -> Any:
        """The device buffer holding the current iterate."""
        return self.x_buffers[self.current]

    def read_rows(self, first: int, count: int) -> np.ndarray:
        """Copy padded rows ``first .. first+count-1`` of the current iterate to the host."""
        rows = np.empty((count, self.row_stride), dtype=self.dtype)
        cl.enqueue_copy(self.compute.queue, rows, self.x_buffer,
                        src_offset=first * self.row_stride * self.dtype.itemsize)
        return rows

    def write_rows(self, first: int, rows: np.ndarray) -> None:
        """Overwrite padded rows from ``first`` in both buffers (``rows`` as from read_rows)."""
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        offset = first * self.row_stride * self.dtype.itemsize
        for buffer in self.x_buffers:
            cl.enqueue_copy(self.compute.queue, buffer, rows, dst_offset=offset, is_blocking=False)
        self.compute.queue.finish()

    def read(self) -> np.ndarray:
        """The current iterate's interior as an m x n NumPy array."""
        interior = np.empty((self.m, self.n), dtype=self.dtype)
        cl.enqueue_copy(self.compute.queue, interior, self.x_buffer, **self._interior_copy_args())
        return interior

    def residual_sum_of_squares(self, first_row: int = 1, last_row: int | None = None) -> float:
        """Sum over padded rows first_row..last_row of the squared residual ``L x - B``."""
        return self._sum_of_squares(first_row, last_row, rhs_only=False)

    def rhs_sum_of_squares(self, first_row: int = 1, last_row: int | None = None) -> float:
        """Sum of B squared over padded rows first_row..last_row (on the device, once per range)."""
        key = (first_row, self.m if last_row is None else last_row)
        if key not in self._rhs_sums_of_squares:
            self._rhs_sums_of_squares[key] = self._sum_of_squares(*key, rhs_only=True)
        return self._rhs_sums_of_squares[key]

    def _sum_of_squares(self, first_row: int, last_row: int | None, rhs_only: bool) -> float:
        """One pass of the jacobi/residual reduction over padded rows first_row..last_row,
        in float64 where the device has it; the work-groups' partial sums added on the host."""
        last_row = self.m if last_row is None else last_row
        rows = last_row - first_row + 1
        if rows <= 0:
            return 0.0
        acc_dtype = np.float64 if self.compute.supports_fp64 else np.float32
        by_rows = self.compute.is_cpu  # one work-item along a row (see the template)
        kernel = programs.get_kernel(self.compute, "jacobi/residual", dtype=self.dtype,
                                     acc_dtype=acc_dtype, group_size=RESIDUAL_GROUP_SIZE,
                                     rhs_only=rhs_only, by_rows=by_rows)
        items = rows if by_rows else rows * self.n
        groups = min(max(1, math.ceil(items / RESIDUAL_GROUP_SIZE)),
                     4 * self.compute.device.max_compute_units)
        partial = np.zeros(groups, dtype=acc_dtype)
        partial_buffer = cl.Buffer(self.compute.context, cl.mem_flags.WRITE_ONLY, partial.nbytes)
        kernel.set_args(self.x_buffer, self.rhs_buffer, np.int32(first_row), np.int32(rows),
                        np.int32(self.n), np.int32(self.row_stride), partial_buffer)
        cl.enqueue_nd_range_kernel(self.compute.queue, kernel, (groups * RESIDUAL_GROUP_SIZE,),
                                   (RESIDUAL_GROUP_SIZE,))
        cl.enqueue_copy(self.compute.queue, partial, partial_buffer)
        return float(np.sum(partial, dtype=np.float64))


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

    def agree(self, stop: bool, launches: int) -> tuple[bool, int]:
        """One device: its own stop request and chunk size."""
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
    (:class:`~oclsci.runtime.pacing.Pacer`) and polls ``should_stop`` that often. ``residual=False``
    skips the final residual (NaN in the result), for timings.
    """
    iterations = check_iterations(iterations)
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
            if checkpoint:
                checkpoint(solver)
                raise Interrupted(f"stopped by a signal at iteration {done}; checkpoint written, "
                                  "resume with --resume")
            raise Interrupted(f"stopped by a signal at iteration {done}; no checkpoint requested")
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
    iterations = check_iterations(iterations)
    check_run_options(tol, check_every, 0)
    dtype = check_dtype(dtype)
    if not isinstance(kernel, str):
        raise ArgumentTypeError(f"kernel must be a name such as 'auto', got {kernel!r}")
    compute = as_compute_context(device)
    solver = JacobiSolver(compute, rhs, x0=x0, dtype=dtype, kernel=kernel)
    run(solver, iterations, tol=tol, check_every=check_every)
    return check_finite(solver.read())

