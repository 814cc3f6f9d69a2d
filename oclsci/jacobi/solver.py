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
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.arrays import check_dtype, check_fits, validate_grid
from oclsci.errors import InputError, InvalidArgumentError
from oclsci.jacobi import kernels
from oclsci.jacobi.kernels import KernelConfig, choose_config, device_candidates
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.launch import Launch
from oclsci.runtime.memory import staged_read, staged_write
from oclsci.runtime.reduction import GroupReduction

KERNEL_NAMES = tuple(kernels.KERNELS)
# Launches enqueued between throttling events (see JacobiSolver.advance).
LAUNCH_BATCH = 256
RESIDUAL_GROUP_SIZE = 64


def validate_rhs(rhs: Any, check_finite: bool = True) -> np.ndarray:
    """Return ``rhs`` as a 2-D finite float array, or raise :class:`InputError`
    (``check_finite=False``: the shape and kind only)."""
    return validate_grid(rhs, "the right-hand side", check_finite)


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
    ``rhs_checked=True``: the caller has checked that ``rhs`` holds finite values that fit
    ``dtype`` (the commands do, before choosing a device), so the solver skips that pass
    over the grid; its shape and kind are still checked. ``rows_read`` (first, stop: interior
    rows counted from 0): the only rows read after each full launch (an MPI sub-slab whose
    other rows an exchange refreshes after every launch of a whole period); kernels that can
    (``temporal``) then write only the tiles over them in full launches, and the other rows
    go stale. Launches of fewer steps write every row.
    """

    def __init__(self, compute: ComputeContext, rhs: Any, x0: Any = None, dtype: Any = np.float32,
                 kernel: str = "auto", config: KernelConfig | None = None,
                 rhs_checked: bool = False, rows_read: tuple[int, int] | None = None):
        rhs = validate_rhs(rhs, check_finite=not rhs_checked)
        self.compute = compute
        self.dtype = compute.check_dtype(check_dtype(dtype))
        if not rhs_checked:
            check_fits(rhs, self.dtype, "the right-hand side")
        if x0 is not None:
            x0 = validate_grid(x0, "x0")
            if x0.shape != rhs.shape:
                raise InvalidArgumentError(f"x0 has shape {x0.shape}, expected {rhs.shape} "
                                           "(the right-hand side's)")
            check_fits(x0, self.dtype, "x0")
        compute.warn_if_flushed(self.dtype, rhs, x0)
        self.m, self.n = rhs.shape
        self.rows_read = rows_read
        # Pad rows to a multiple of 16 elements so that rows start aligned.
        self.row_stride = -(-(self.n + 2) // 16) * 16
        nbytes = 3 * (self.m + 2) * self.row_stride * self.dtype.itemsize
        compute.check_allocation(nbytes, f"a {self.m}x{self.n} {self.dtype.name} grid")
        candidates = [config] if config else _candidates(compute, kernel, self.dtype,
                                                         (self.m, self.n))
        self.config = candidates[0]
        kernels.get(self.config.name)
        self.iteration = 0

        # B and x0 go up once each, padded on the way through small page-locked blocks (no
        # padded host copy; pageable memory would go at a fraction of the bus's speed); the
        # ping-pong buffers start as device copies (Oclgrind counts those as initialising).
        # Finished before returning: callers may read the buffers on another queue (MPI).
        self.rhs_buffer = self._upload(rhs, cl.mem_flags.READ_ONLY)
        first = self._device_copy(self.rhs_buffer) if x0 is None \
            else self._upload(x0, cl.mem_flags.READ_WRITE)
        self.x_buffers = [first, self._device_copy(first)]
        compute.queue.finish()
        self.current = 0
        self._rhs_sums_of_squares: dict[tuple[int, int], float] = {}
        self._reductions: dict[bool, GroupReduction] = {}  # by rhs_only
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

    def _upload(self, interior: np.ndarray, flags: int) -> Any:
        """A device buffer holding ``interior`` in the padded layout: a ring of zeros, rows
        padded with zeros to ``row_stride``."""
        m, n = self.m, self.n
        buffer = cl.Buffer(self.compute.context, flags, (m + 2) * self.row_stride
                           * self.dtype.itemsize)

        def fill(block: np.ndarray, first: int) -> None:
            block[:, 0] = 0
            block[:, n + 1:] = 0
            low, high = self._interior_rows(first, len(block))
            block[low - first:high - first, 1:n + 1] = interior[low - 1:high - 1]
            if first == 0:
                block[0] = 0
            if first + len(block) == m + 2:
                block[-1] = 0

        staged_write(self.compute, buffer, (m + 2, self.row_stride), self.dtype, fill)
        return buffer

    def _interior_rows(self, first: int, count: int) -> tuple[int, int]:
        """The interior rows (padded numbering, ``low <= row < high``) among padded rows
        ``first .. first + count - 1``."""
        return max(first, 1), min(first + count, self.m + 1)

    def _device_copy(self, source: Any) -> Any:
        """A new read-write device buffer holding a copy of ``source`` (enqueued, in order:
        wait for the queue before using it elsewhere)."""
        buffer = cl.Buffer(self.compute.context, cl.mem_flags.READ_WRITE, source.size)
        cl.enqueue_copy(self.compute.queue, buffer, source)
        return buffer

    def _build_kernels(self) -> None:
        config, spec = self.config, self.config.spec
        config.validate(max_work_group_size=self.compute.facts.max_work_group_size,
                        local_mem_bytes=self.compute.facts.local_mem_bytes,
                        dtype=self.dtype)
        params = dict(config.template_params(), dtype=self.dtype)
        self.steps_per_launch = config.steps_per_launch
        self.global_size, self.local_size = config.launch_shape(self.m, self.n)
        # The kernel's arguments by name (its spec lists them in order).
        values: dict[str, Any] = {"rhs": self.rhs_buffer, "m": self.m, "n": self.n,
                                  "row_stride": self.row_stride,
                                  "steps": self.steps_per_launch, "row_first": 1}
        # Full launches write the tiles over rows_read only, where the kernel can.
        full_size, full_first = self.global_size, 1
        if self.rows_read is not None and any(a.name == "row_first" for a in spec.arguments):
            first, stop = self.rows_read
            full_size = config.launch_shape(stop - first, self.n)[0]
            full_first = first + 1
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
            kernel = programs.new_kernel(self.compute, spec.template,
                                         **dict(params, row_window=full_first != 1))
            if source == 0:
                self._check_kernel_work_group(kernel)
            kernel.set_args(*[argument.value(dict(values, row_first=full_first)[argument.name])
                              for argument in spec.arguments])
            self._launches.append(Launch(queue, kernel, full_size, self.local_size))
            if multi_step:
                remainder = programs.new_kernel(self.compute, spec.template, **params)
                if source == 0 and full_first != 1:  # another program than the full launches'
                    self._check_kernel_work_group(remainder)
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
        m, n = self.m, self.n
        interior = np.empty((m, n), dtype=self.dtype)

        def take(block: np.ndarray, first: int) -> None:
            low, high = self._interior_rows(first, len(block))
            interior[low - 1:high - 1] = block[low - first:high - first, 1:n + 1]

        staged_read(self.compute, self.x_buffer, (m + 2, self.row_stride), self.dtype, take)
        return interior

    def residual_sum_of_squares(self, first_row: int = 1, last_row: int | None = None) -> float:
        """Sum over padded rows first_row..last_row of the squared residual ``L x - B``."""
        return self._sum_of_squares(first_row, last_row, rhs_only=False)

    def rhs_sum_of_squares(self, first_row: int = 1, last_row: int | None = None) -> float:
        """Sum of B squared over padded rows first_row..last_row, once per range: on the
        device in float64, or on the host in float64 where the device has no fp64 (float32
        squares of large B overflow)."""
        key = (first_row, self.m if last_row is None else last_row)
        if key not in self._rhs_sums_of_squares:
            self._rhs_sums_of_squares[key] = (
                self._sum_of_squares(*key, rhs_only=True) if self.compute.supports_fp64
                else self._host_rhs_sum_of_squares(*key))
        return self._rhs_sums_of_squares[key]

    def _host_rhs_sum_of_squares(self, first_row: int, last_row: int) -> float:
        """Sum of B squared in float64 on the host, B read back a few rows at a time."""
        total = 0.0
        chunk = max(1, (1 << 22) // self.row_stride)
        for start in range(first_row, last_row + 1, chunk):
            count = min(chunk, last_row + 1 - start)
            rows = np.empty((count, self.row_stride), dtype=self.dtype)
            cl.enqueue_copy(self.compute.queue, rows, self.rhs_buffer,
                            src_offset=start * self.row_stride * self.dtype.itemsize)
            interior = rows[:, 1:self.n + 1].astype(np.float64)
            total += float(np.einsum("ij,ij->", interior, interior))
        return total

    def _sum_of_squares(self, first_row: int, last_row: int | None, rhs_only: bool) -> float:
        """One pass of the jacobi/residual reduction over padded rows first_row..last_row,
        in float64 where the device has it; the work-groups' partial sums added on the host."""
        last_row = self.m if last_row is None else last_row
        rows = last_row - first_row + 1
        if rows <= 0:
            return 0.0
        by_rows = self.compute.is_cpu  # one work-item along a row (see the template)
        if rhs_only not in self._reductions:
            acc_dtype = np.float64 if self.compute.supports_fp64 else np.float32
            kernel = programs.get_kernel(self.compute, "jacobi/residual", dtype=self.dtype,
                                         acc_dtype=acc_dtype, group_size=RESIDUAL_GROUP_SIZE,
                                         rhs_only=rhs_only, by_rows=by_rows)
            self._reductions[rhs_only] = GroupReduction(
                self.compute, kernel, group_size=RESIDUAL_GROUP_SIZE, result_dtype=acc_dtype,
                arg_types=(None, None, np.int32, np.int32, np.int32, np.int32))
        return float(self._reductions[rhs_only](
            self.x_buffer, self.rhs_buffer, first_row, rows, self.n, self.row_stride,
            items=rows if by_rows else rows * self.n))
