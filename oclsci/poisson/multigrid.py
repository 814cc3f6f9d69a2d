"""Geometric multigrid on one OpenCL device: the levels' buffers and the V- and F-cycle.

:class:`Multigrid` holds every level below the finest (its unknowns, right-hand side and
residual, the per-axis coefficients and transfer weights of :mod:`oclsci.poisson.hierarchy`)
and runs one cycle for ``L u = f`` on finest-level buffers it is given, so that the same
object serves as the solver (:mod:`oclsci.poisson.solve`) and as the preconditioner of the
conjugate gradients. The steps are those of :func:`oclsci.poisson.reference.cycle`, in order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError
from oclsci.poisson.hierarchy import COARSEST_CELLS, Level, build_levels
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.launch import Launch

TEMPLATE = "poisson/multigrid"
SMOOTHERS = ("rbgs", "jacobi")
CYCLES = ("V", "F")
# Weighted Jacobi's damping: 4/5 smooths the 2-D Laplacian's upper half of frequencies best.
JACOBI_WEIGHT = 0.8
# Work-group shapes of the 2-D kernels (columns, rows) and of the dot product.
GPU_LOCAL, CPU_LOCAL = (32, 4), (64, 1)
GPU_DOT_GROUP, CPU_DOT_GROUP = 256, 16
GROUPS_PER_UNIT = 8
# Grids of this many cells or more wait for the device and poll between the finest level's
# steps, so that a stop signal is acted on within a step, not a whole cycle.
POLL_INSIDE_CELLS = 1 << 22


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def check_cycle(cycle: str, pre: int, post: int, smoother: str) -> None:
    """Refuse a cycle that :class:`Multigrid` cannot run, with a one-line :class:`InputError`."""
    if cycle not in CYCLES:
        raise InputError(f"cycle must be one of {', '.join(CYCLES)}, got {cycle!r}")
    if smoother not in SMOOTHERS:
        raise InputError(f"smoother must be one of {', '.join(SMOOTHERS)}, got {smoother!r}")
    if pre < 0 or post < 0 or pre + post == 0:
        raise InputError(f"smoothing sweeps must be >= 0 and not both 0, got {pre}, {post}")


class Multigrid:
    """The cycle of one grid shape on ``compute``, in ``dtype``.

    ``cycle``: "V" or "F"; ``pre``, ``post``: smoothing sweeps before and after the coarse
    correction; ``smoother``: "rbgs" (red-black Gauss-Seidel) or "jacobi" (weighted, 4/5).
    ``should_stop``, when set, is polled between the finest level's steps (it raises to stop).
    """

    def __init__(self, compute: ComputeContext, shape: tuple[int, int], dtype: Any, *,
                 cycle: str = "V", pre: int = 2, post: int = 2, smoother: str = "rbgs"):
        check_cycle(cycle, pre, post, smoother)
        self.compute, self.dtype = compute, np.dtype(dtype)
        self.kind, self.pre, self.post, self.smoother = cycle, pre, post, smoother
        self.levels: list[Level] = build_levels(shape)
        self.acc_dtype = np.dtype(np.float64 if compute.supports_fp64 else np.float32)
        self.local = CPU_LOCAL if compute.is_cpu else GPU_LOCAL
        self.dot_group = CPU_DOT_GROUP if compute.is_cpu else GPU_DOT_GROUP
        params = dict(dtype=self.dtype, acc_dtype=self.acc_dtype, group_size=self.dot_group,
                      chunked=compute.is_cpu, coarse_cells=COARSEST_CELLS)
        self._params = params
        self._local_sizes: dict[str, tuple] = {}
        self._recording: list | None = None
        self._plans: dict[tuple[int, int], tuple] = {}
        self.kernels = {name: programs.get_kernel(compute, TEMPLATE, name=name, **params)
                        for name in ("mg_smooth_rb", "mg_smooth_jacobi", "mg_residual",
                                     "mg_apply", "mg_restrict", "mg_interpolate_add",
                                     "mg_coarse_solve", "mg_dot", "mg_axpby", "mg_zero")}
        compute.check_allocation(self.device_bytes(),
                                 f"a multigrid solve of {shape[0]} x {shape[1]}")
        self._data = [self._level_buffers(index, level) for index, level in enumerate(self.levels)]
        self.coarse_sweeps = self.levels[-1].coarse_sweeps()
        units = max(1, int(compute.device.max_compute_units))
        self.dot_groups = units * (4 if compute.is_cpu else GROUPS_PER_UNIT)
        self._partials = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                   self.dot_groups * self.acc_dtype.itemsize)
        self.last_event: Any = None
        self.first_event: Any = None
        self.should_stop: Any = None

    def device_bytes(self) -> int:
        """Bytes of this object's buffers: three grids per coarse level, one on the finest."""
        cells = sum(m * n for m, n in (level.shape for level in self.levels))
        finest = self.levels[0].shape[0] * self.levels[0].shape[1]
        return self.dtype.itemsize * (3 * cells - 2 * finest)

    # -- buffers -----------------------------------------------------------------------------

    def _upload(self, values: np.ndarray, dtype: Any) -> Any:
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self.compute.context, flags,
                         hostbuf=np.ascontiguousarray(values, dtype=dtype))

    def _level_buffers(self, index: int, level: Level) -> dict:
        m, n = level.shape
        real = self.dtype
        data = {"rows": self._upload(np.concatenate(level.rows.coefficients()), real),
                "cols": self._upload(np.concatenate(level.cols.coefficients()), real),
                "r": self.empty(m * n)}
        if index > 0:
            data["u"], data["f"] = self.empty(m * n), self.empty(m * n)
            rt, ct = level.row_transfer, level.col_transfer
            data.update(row_lower=self._upload(rt.lower, np.int32),
                        row_interp=self._upload(rt.weights.ravel(), real),
                        col_lower=self._upload(ct.lower, np.int32),
                        col_interp=self._upload(ct.weights.ravel(), real),
                        row_restrict=self._upload(rt.restrict.ravel(), real),
                        col_restrict=self._upload(ct.restrict.ravel(), real),
                        row_step=rt.step, col_step=ct.step)
        return data

    def empty(self, count: int) -> Any:
        """A device buffer of ``count`` elements of the solver's dtype."""
        return cl.Buffer(self.compute.context, cl.mem_flags.READ_WRITE,
                         max(count, 1) * self.dtype.itemsize)

    # -- launches ----------------------------------------------------------------------------

    def _launch(self, name: str, global_size: tuple, local: tuple | None, *args: Any) -> Any:
        if self._recording is not None:
            # A cycle's plan: a kernel of its own, arguments set once, enqueued without event.
            kernel = programs.new_kernel(self.compute, TEMPLATE, name=name, **self._params)
            kernel.set_args(*args)
            self._recording.append(Launch(self.compute.queue, kernel, global_size, local).fast)
            return None
        kernel = self.kernels[name]
        kernel.set_args(*args)
        event = cl.enqueue_nd_range_kernel(self.compute.queue, kernel, global_size, local)
        if self.first_event is None:
            self.first_event = event
        self.last_event = event
        return event

    def _local_size(self, name: str, wanted: tuple) -> tuple:
        if name not in self._local_sizes:
            kernel = self.kernels[name]
            self._local_sizes[name] = programs.fitted_local_size(self.compute, kernel, wanted) \
                if len(wanted) == 2 \
                else (min(wanted[0], programs.kernel_work_group_size(self.compute, kernel)),)
        return self._local_sizes[name]

    def _grid(self, name: str, m: int, n: int, *args: Any, half: bool = False) -> Any:
        local = self._local_size(name, self.local)
        width = -(-n // 2) if half else n
        return self._launch(name, (_round_up(width, local[0]), _round_up(m, local[1])), local,
                            *args)

    def _flat(self, name: str, count: int, *args: Any) -> Any:
        local = self._local_size(name, (64 if self.compute.is_cpu else 256,))
        return self._launch(name, (_round_up(max(count, 1), local[0]),), local, *args)

    def zero(self, buffer: Any, count: int) -> None:
        """Set ``count`` elements of ``buffer`` to zero."""
        self._flat("mg_zero", count, buffer, np.uint64(count))

    def axpby(self, z: Any, alpha: float, x: Any, beta: float, y: Any, count: int) -> None:
        """``z = alpha x + beta y`` on ``count`` elements."""
        real = self.dtype.type
        self._flat("mg_axpby", count, z, real(alpha), x, real(beta), y, np.uint64(count))

    def dot(self, a: Any, b: Any, count: int) -> float:
        """``sum(a * b)`` over ``count`` elements, summed in float64 where the device can."""
        group = self.dot_group
        self._launch("mg_dot", (self.dot_groups * group,), (group,), self._partials, a, b,
                     np.uint64(count))
        partials = np.empty(self.dot_groups, self.acc_dtype)
        cl.enqueue_copy(self.compute.queue, partials, self._partials)
        return float(np.sum(partials, dtype=np.float64))

    def residual(self, r: Any, u: Any, f: Any, index: int = 0) -> None:
        """``r = f - L u`` on level ``index``."""
        m, n = self.levels[index].shape
        data = self._data[index]
        self._grid("mg_residual", m, n, r, u, f, data["rows"], data["cols"], np.int32(m),
                   np.int32(n))

    def apply(self, out: Any, u: Any) -> None:
        """``out = L u`` on the finest level."""
        m, n = self.levels[0].shape
        data = self._data[0]
        self._grid("mg_apply", m, n, out, u, data["rows"], data["cols"], np.int32(m),
                   np.int32(n))

    def smooth(self, u: Any, f: Any, index: int, sweeps: int) -> Any:
        """``sweeps`` smoothing sweeps of ``u`` on level ``index``; returns the buffer that
        holds the result (weighted Jacobi alternates between ``u`` and the level's scratch)."""
        m, n = self.levels[index].shape
        data = self._data[index]
        shape = (data["rows"], data["cols"], np.int32(m), np.int32(n))
        for _ in range(sweeps):
            if self.smoother == "rbgs":
                for colour in (0, 1):
                    self._grid("mg_smooth_rb", m, n, u, f, *shape, np.int32(colour), half=True)
            else:
                scratch = data["r"]
                self._grid("mg_smooth_jacobi", m, n, scratch, u, f, *shape,
                           self.dtype.type(JACOBI_WEIGHT))
                self._copy(u, scratch, m * n)
        return u

    def _copy(self, target: Any, source: Any, count: int) -> None:
        self.axpby(target, 1.0, source, 0.0, source, count)

    # -- the cycle ---------------------------------------------------------------------------

    def cycle(self, u: Any, f: Any) -> None:
        """Enqueue one cycle for ``L u = f`` on the finest level (``u``, ``f``: the caller's
        buffers). The first cycle on a pair of buffers records its launches, each kernel with
        its arguments set once (:class:`~oclsci.runtime.launch.Launch`); later ones replay
        them, a few microseconds of host time per launch."""
        key = (id(u), id(f))
        if key not in self._plans:
            self._recording = []
            try:
                self._record(u, f, 0, self.kind)
                self._plans[key] = (u, f, self._recording)  # the buffers stay referenced
            finally:
                self._recording = None
        for step in self._plans[key][2]:
            step()

    def _record(self, u: Any, f: Any, index: int, kind: str) -> None:
        level, data = self.levels[index], self._data[index]
        m, n = level.shape
        if index == len(self.levels) - 1:
            group = self._local_size("mg_coarse_solve", (COARSEST_CELLS,))
            self._launch("mg_coarse_solve", group, group, u, f, data["rows"],
                         data["cols"], np.int32(m), np.int32(n), np.int32(self.coarse_sweeps))
            return
        self.smooth(u, f, index, self.pre)
        if index == 0:
            self._recording.append(self._poll)
        self.residual(data["r"], u, f, index)
        coarse, below = self.levels[index + 1], self._data[index + 1]
        mc, nc = coarse.shape
        self._grid("mg_restrict", mc, nc, below["f"], data["r"], below["row_restrict"],
                   below["col_restrict"], np.int32(mc), np.int32(nc), np.int32(m),
                   np.int32(n), np.int32(below["row_step"]), np.int32(below["col_step"]))
        self.zero(below["u"], mc * nc)
        self._record(below["u"], below["f"], index + 1, kind)
        if kind == "F":
            self._record(below["u"], below["f"], index + 1, "V")
        self._grid("mg_interpolate_add", m, n, u, below["u"], below["row_lower"],
                   below["row_interp"], below["col_lower"], below["col_interp"], np.int32(m),
                   np.int32(n), np.int32(mc), np.int32(nc))
        if index == 0:
            self._recording.append(self._poll)
        self.smooth(u, f, index, self.post)

    def _poll(self) -> None:
        if self.should_stop is not None:
            self.compute.queue.finish()
            self.should_stop()

    def describe(self) -> str:
        """The cycle in words, for the summary."""
        shapes = " > ".join(f"{m}x{n}" for m, n in (level.shape for level in self.levels))
        smoother = "red-black Gauss-Seidel" if self.smoother == "rbgs" \
            else f"Jacobi (weight {JACOBI_WEIGHT})"
        return (f"{self.kind}({self.pre},{self.post}) cycle, {smoother}, {len(self.levels)} "
                f"levels ({shapes}; coarsest: {self.coarse_sweeps} sweeps)")
