"""Geometric multigrid on one OpenCL device: the levels' buffers and the V- and F-cycle.

:class:`Multigrid` holds every level below the finest (its unknowns, right-hand side and
residual, the per-axis coefficients and transfer weights of :mod:`oclsci.poisson.hierarchy`)
and runs one cycle for ``L u = f`` on finest-level buffers it is given, so that the same
object serves as the solver (:mod:`oclsci.poisson.solve`) and as the preconditioner of the
conjugate gradients. The steps are those of :func:`oclsci.poisson.reference.cycle`, in order.

Every level's buffer holds its rows between two ghost rows (:meth:`Multigrid.vector`): zeros
on one device; under MPI (:mod:`oclsci.poisson.distributed`) a slab of rows whose ghost rows a
``halo`` fills from the neighbouring ranks before each step that reads them, down to the
level where the halo gathers the coarse problem on one rank. This module knows no MPI: the
halo is any object with the methods that :class:`SlabHalo` lists.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Protocol

import numpy as np
import pyopencl as cl

from oclsci.errors import ArgumentTypeError, Interrupted, InvalidArgumentError
from oclsci.poisson.hierarchy import COARSEST_CELLS, Level
from oclsci.poisson.kernels import KERNEL_PREFIX, REGISTRY, TEMPLATE
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.launch import Launch, Pacer
from oclsci.runtime.reduction import GroupReduction
from oclsci.runtime.signals import EXIT_SIGNAL_BASE, signal_name, stop_exit_code

SMOOTHERS = ("rbgs", "jacobi")
CYCLES = ("V", "F")
# Weighted Jacobi's damping: 4/5 smooths the 2-D Laplacian's upper half of frequencies best.
JACOBI_WEIGHT = 0.8
# Work-group size of the dot product (the other kernels': oclsci.poisson.kernels).
GPU_DOT_GROUP, CPU_DOT_GROUP = 256, 16
GROUPS_PER_UNIT = 8
# Under MPI, grids of this many cells or more poll (collectively) twice a cycle, so that a stop
# signal is acted on within a cycle; on one device every grid polls by time (_StopPoll).
POLL_INSIDE_CELLS = 1 << 22


class SlabHalo(Protocol):
    """What :class:`Multigrid` asks of a decomposition into slabs of rows (MPI)."""

    gather_level: int  # the first level solved on one rank (>= 1)

    def rows(self, index: int) -> tuple[int, int]:
        """(first global row, row count) of this rank's slab on level ``index``."""

    def exchange(self, buffer: Any, index: int) -> None:
        """Fill the ghost rows of ``buffer`` (level ``index``) from the neighbouring ranks."""

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""

    def coarse(self, u: Any, f: Any, kind: str) -> None:
        """Solve level ``gather_level`` (``u``, ``f``: this rank's slabs) by one cycle."""


def stopped(answer: Any, where: str) -> Interrupted:
    """The error for a true answer of ``should_stop()``: exit code 128 + the answer when it
    is a signal's number, else 1."""
    code = stop_exit_code(answer)
    signum = code - EXIT_SIGNAL_BASE if code > EXIT_SIGNAL_BASE else None
    by = signal_name(signum) if signum else "a stop request"
    return Interrupted(f"stopped by {by} {where}; no output written", exit_code=code,
                       signum=signum)


class _StopPoll:
    """The poll a recorded cycle calls between the finest level's steps; it holds the queue and
    ``should_stop``, not the :class:`Multigrid`, so that a plan makes no reference cycle.

    On one device (``paced``) it is called after every sweep of every level and polls by time,
    whatever the grid's size: a :class:`~oclsci.runtime.launch.Pacer` keeps the host a
    fraction of a second of device work ahead and the poll comes at each of its waits. Under
    MPI the poll is collective: every rank polls at every call, after waiting for its queue.
    """

    def __init__(self, queue: Any, paced: bool):
        self.queue, self.should_stop, self.paced = queue, None, paced
        self._pacer = Pacer(in_flight=1)
        self._calls = 0

    def __call__(self) -> None:
        if self.should_stop is None:
            return
        if self.paced:
            self._calls += 1
            if self._calls < self._pacer.launches():
                return
            self._pacer.submitted(cl.enqueue_marker(self.queue), self._calls)
            self._calls = 0
        else:
            self.queue.finish()
        answer = self.should_stop()
        if answer:
            raise stopped(answer, "during a cycle")


def check_cycle(cycle: str, pre: int, post: int, smoother: str) -> None:
    """Refuse a cycle that :class:`Multigrid` cannot run, with a one-line
    :class:`~oclsci.errors.InvalidArgumentError` (a bad value) or
    :class:`~oclsci.errors.ArgumentTypeError` (sweeps that are not integers)."""
    if not isinstance(cycle, str) or cycle not in CYCLES:
        raise InvalidArgumentError(f"cycle must be one of {', '.join(CYCLES)}, got {cycle!r}")
    if not isinstance(smoother, str) or smoother not in SMOOTHERS:
        raise InvalidArgumentError(f"smoother must be one of {', '.join(SMOOTHERS)}, got "
                                   f"{smoother!r}")
    for sweeps in (pre, post):
        if isinstance(sweeps, (bool, np.bool_)) or not isinstance(sweeps, numbers.Integral):
            raise ArgumentTypeError(f"smoothing sweeps must be integers, got "
                                    f"{type(sweeps).__name__} {sweeps!r}")
    if pre < 0 or post < 0 or pre + post == 0:
        raise InvalidArgumentError(f"smoothing sweeps must be >= 0 and not both 0, got {pre}, "
                                   f"{post}")


class Multigrid:
    """The cycle of the hierarchy ``levels`` on ``compute``, in ``dtype``.

    ``cycle``: "V" or "F"; ``pre``, ``post``: smoothing sweeps before and after the coarse
    correction; ``smoother``: "rbgs" (red-black Gauss-Seidel) or "jacobi" (weighted, 4/5).
    ``halo``: this rank's slabs under MPI (None: every level whole on this device).
    :attr:`should_stop`, when set, is polled between the finest level's steps; a true answer
    raises :class:`~oclsci.errors.Interrupted`.
    """

    def __init__(self, compute: ComputeContext, levels: list[Level], dtype: Any, *,
                 cycle: str = "V", pre: int = 2, post: int = 2, smoother: str = "rbgs",
                 halo: SlabHalo | None = None):
        check_cycle(cycle, pre, post, smoother)
        self.compute, self.dtype = compute, np.dtype(dtype)
        self.kind, self.pre, self.post, self.smoother = cycle, pre, post, smoother
        self.levels, self.halo = levels, halo
        # Levels held here: all on one device; under MPI, down to the gathered one.
        self.depth = len(levels) if halo is None else halo.gather_level + 1
        self.layout = [halo.rows(index) if halo is not None else (0, level.shape[0])
                       for index, level in enumerate(levels[:self.depth])]
        self.acc_dtype = np.dtype(np.float64 if compute.supports_fp64 else np.float32)
        self.device_kind = "cpu" if compute.is_cpu else "gpu"
        self.dot_group = CPU_DOT_GROUP if compute.is_cpu else GPU_DOT_GROUP
        self._params = dict(dtype=self.dtype, acc_dtype=self.acc_dtype,
                            group_size=self.dot_group, chunked=compute.is_cpu,
                            coarse_cells=COARSEST_CELLS)
        self._local_sizes: dict[str, tuple] = {}
        self._recording: list | None = None
        self.first_event: Any = None  # of the immediate launches since reset (timing)
        self.last_event: Any = None
        self._stop_poll = _StopPoll(compute.queue, paced=halo is None)
        self._plans: dict[tuple, tuple] = {}
        self.kernels = {name: programs.get_kernel(compute, TEMPLATE, name=KERNEL_PREFIX + name,
                                                  **self._params)
                        for name in ("smooth_rb", "smooth_jacobi", "residual", "apply",
                                     "restrict", "interpolate_add", "coarse_solve", "dot",
                                     "axpby", "zero")}
        compute.check_allocation(self.device_bytes(),
                                 f"a multigrid solve of {levels[0].shape[0]} x "
                                 f"{levels[0].shape[1]}")
        self._data = [self._level_buffers(index) for index in range(self.depth)]
        self.coarse_sweeps = levels[-1].coarse_sweeps()
        self._dot = GroupReduction(compute, self.kernels["dot"], group_size=self.dot_group,
                                   arg_types=(None, None, np.uint64, np.uint64),
                                   result_dtype=self.acc_dtype,
                                   per_unit=4 if compute.is_cpu else GROUPS_PER_UNIT)

    def device_bytes(self) -> int:
        """Bytes of this object's buffers: three per level below the finest, one on it."""
        sizes = [self.size(index) for index in range(self.depth)]
        return self.dtype.itemsize * (3 * sum(sizes) - 2 * sizes[0])

    def size(self, index: int = 0) -> int:
        """Elements of a buffer of level ``index``: its rows here and two ghost rows."""
        return (self.layout[index][1] + 2) * self.levels[index].shape[1]

    # -- buffers -----------------------------------------------------------------------------

    def _upload(self, values: np.ndarray, dtype: Any) -> Any:
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self.compute.context, flags,
                         hostbuf=np.ascontiguousarray(values, dtype=dtype))

    def _level_buffers(self, index: int) -> dict:
        level, real = self.levels[index], self.dtype
        data = {"rows": self._upload(np.concatenate(level.rows.coefficients()), real),
                "cols": self._upload(np.concatenate(level.cols.coefficients()), real),
                "r": self.vector(index)}
        if index > 0:
            data["u"], data["f"] = self.vector(index), self.vector(index)
            rt, ct = level.row_transfer, level.col_transfer
            data.update(row_lower=self._upload(rt.lower, np.int32),
                        row_interp=self._upload(rt.weights.ravel(), real),
                        col_lower=self._upload(ct.lower, np.int32),
                        col_interp=self._upload(ct.weights.ravel(), real),
                        row_restrict=self._upload(rt.restrict.ravel(), real),
                        col_restrict=self._upload(ct.restrict.ravel(), real),
                        row_step=rt.step, col_step=ct.step)
        return data

    def vector(self, index: int = 0) -> Any:
        """A zeroed buffer of level ``index`` (its rows here between two ghost rows)."""
        buffer = cl.Buffer(self.compute.context, cl.mem_flags.READ_WRITE,
                           self.size(index) * self.dtype.itemsize)
        self.zero(buffer, index)
        return buffer

    def upload(self, buffer: Any, values: np.ndarray) -> None:
        """Write this rank's rows ``values`` (rows x n) into a finest-level ``buffer``, with
        zero ghost rows. The whole buffer is written: after a partial host write into a buffer
        that a kernel wrote, Oclgrind 21.10 reads the kernel's values as uninitialised."""
        n = self.levels[0].shape[1]
        padded = np.zeros((values.shape[0] + 2, n), self.dtype)
        padded[1:-1] = values
        cl.enqueue_copy(self.compute.queue, buffer, padded)

    def download(self, buffer: Any) -> np.ndarray:
        """This rank's rows of a finest-level ``buffer``."""
        rows, n = self.layout[0][1], self.levels[0].shape[1]
        out = np.empty((rows, n), self.dtype)
        if rows:
            cl.enqueue_copy(self.compute.queue, out, buffer, src_offset=n * self.dtype.itemsize)
        return out

    # -- launches ----------------------------------------------------------------------------

    def _launch(self, name: str, global_size: tuple, local: tuple | None, *args: Any) -> Any:
        if self._recording is not None:
            # A cycle's plan: a kernel of its own, arguments set once, enqueued without event.
            kernel = programs.new_kernel(self.compute, TEMPLATE, name=KERNEL_PREFIX + name,
                                         **self._params)
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

    def _host_step(self, function: Any, *args: Any) -> None:
        """Run a host step now, or add it to the plan being recorded."""
        if self._recording is not None:
            self._recording.append(functools.partial(function, *args))
        else:
            function(*args)

    def _exchange(self, buffer: Any, index: int) -> None:
        if self.halo is not None:
            self._host_step(self.halo.exchange, buffer, index)

    def _local_size(self, name: str, wanted: tuple) -> tuple:
        if name not in self._local_sizes:
            kernel = self.kernels[name]
            self._local_sizes[name] = programs.fitted_local_size(self.compute, kernel, wanted) \
                if len(wanted) == 2 \
                else (min(wanted[0], programs.kernel_work_group_size(self.compute, kernel)),)
        return self._local_sizes[name]

    def _run(self, name: str, *sizes: int, **arguments: Any) -> Any:
        """Launch kernel ``name`` over a problem of ``sizes``, its arguments bound by name and
        its work-group and launch shape from its spec (:mod:`oclsci.poisson.kernels`)."""
        spec = REGISTRY.get(name)
        local = self._local_size(name, spec.local_sizes[self.device_kind])
        global_size, local = spec.launch({}, local, *sizes)
        return self._launch(name, global_size, local, *spec.bind(arguments, self.dtype))

    def _shape(self, index: int) -> dict:
        """The kernels' ``m, n, row0, mg`` arguments of level ``index``: its rows here, its
        columns, its first row here and its rows in all."""
        row0, rows = self.layout[index]
        mg, n = self.levels[index].shape
        return {"m": rows, "n": n, "row0": row0, "mg": mg}

    def zero(self, buffer: Any, index: int = 0) -> None:
        """Set a buffer of level ``index`` to zero, ghost rows included."""
        count = self.size(index)
        self._run("zero", count, u=buffer, count=count)

    def axpby(self, z: Any, alpha: float, x: Any, beta: float, y: Any) -> None:
        """``z = alpha x + beta y`` on finest-level buffers."""
        count = self.size(0)
        self._run("axpby", count, z=z, alpha=alpha, x=x, beta=beta, y=y, count=count)

    def dot(self, a: Any, b: Any) -> float:
        """``sum(a * b)`` over the finest level's rows (every rank's), summed in float64 where
        the device can."""
        n = self.levels[0].shape[1]
        event = self._dot.enqueue(a, b, n, self.layout[0][1] * n)
        if self.first_event is None:
            self.first_event = event
        self.last_event = event
        total = float(self._dot.result())
        return total if self.halo is None else self.halo.allreduce_sum(total)

    def residual(self, r: Any, u: Any, f: Any, index: int = 0) -> None:
        """``r = f - L u`` on level ``index``."""
        data, shape = self._data[index], self._shape(index)
        self._exchange(u, index)
        self._run("residual", shape["m"], shape["n"], r=r, u=u, f=f, rows=data["rows"],
                  cols=data["cols"], **shape)

    def apply(self, out: Any, u: Any) -> None:
        """``out = L u`` on the finest level."""
        data, shape = self._data[0], self._shape(0)
        self._exchange(u, 0)
        self._run("apply", shape["m"], shape["n"], out=out, u=u, rows=data["rows"],
                  cols=data["cols"], **shape)

    def smooth(self, u: Any, f: Any, index: int, sweeps: int) -> None:
        """``sweeps`` smoothing sweeps of ``u`` on level ``index`` (weighted Jacobi goes
        through the level's scratch buffer and back)."""
        data, shape = self._data[index], self._shape(index)
        m, n = shape["m"], shape["n"]
        level = dict(shape, rows=data["rows"], cols=data["cols"])
        for sweep in range(sweeps):
            if sweep and self.halo is None:  # on every level: --sweeps may ask for thousands
                self._host_step(self._stop_poll)
            if self.smoother == "rbgs":
                for colour in (0, 1):
                    self._exchange(u, index)
                    self._run("smooth_rb", m, n, u=u, f=f, colour=colour, **level)
            else:
                scratch = data["r"]
                self._exchange(u, index)
                self._run("smooth_jacobi", m, n, u_out=scratch, u_in=u, f=f,
                          weight=JACOBI_WEIGHT, **level)
                count = self.size(index)
                self._run("axpby", count, z=u, alpha=1, x=scratch, beta=0, y=scratch,
                          count=count)

    # -- the cycle ---------------------------------------------------------------------------

    def cycle(self, u: Any, f: Any, kind: str | None = None) -> None:
        """Enqueue one cycle for ``L u = f`` on the finest level (``u``, ``f``: the caller's
        buffers, from :meth:`vector`). The first cycle on a pair of buffers records its
        launches, each kernel with its arguments set once
        (:class:`~oclsci.runtime.launch.Launch`), and the halo's steps; later ones replay
        them, a few microseconds of host time per launch."""
        kind = kind or self.kind
        key = (id(u), id(f), kind)
        if key not in self._plans:
            self._recording = []
            try:
                self._record(u, f, 0, kind)
                self._plans[key] = (u, f, self._recording)  # the buffers stay referenced
            finally:
                self._recording = None
        for step in self._plans[key][2]:
            step()

    def _record(self, u: Any, f: Any, index: int, kind: str) -> None:
        level, data = self.levels[index], self._data[index]
        if self.halo is not None and index == self.halo.gather_level:
            self._host_step(self.halo.coarse, u, f, kind)
            return
        if index == len(self.levels) - 1:
            m, n = level.shape
            self._run("coarse_solve", u=u, f=f, rows=data["rows"], cols=data["cols"], m=m, n=n,
                      sweeps=self.coarse_sweeps)
            return
        self.smooth(u, f, index, self.pre)
        if index == 0:
            self._host_step(self._stop_poll)
        self.residual(data["r"], u, f, index)
        self._exchange(data["r"], index)
        below, coarse, fine = self._data[index + 1], self._shape(index + 1), self._shape(index)
        mc, nc, row0c = coarse["m"], coarse["n"], coarse["row0"]
        m, n, row0 = fine["m"], fine["n"], fine["row0"]
        self._run("restrict", mc, nc, coarse=below["f"], r=data["r"],
                  row_weights=below["row_restrict"], col_weights=below["col_restrict"], mc=mc,
                  nc=nc, row0c=row0c, n=n, row0f=row0, mf=fine["mg"],
                  row_step=below["row_step"], col_step=below["col_step"])
        self.zero(below["u"], index + 1)
        self._record(below["u"], below["f"], index + 1, kind)
        if kind == "F":
            self._record(below["u"], below["f"], index + 1, "V")
        self._exchange(below["u"], index + 1)
        self._run("interpolate_add", m, n, u=u, e=below["u"], row_lower=below["row_lower"],
                  row_weights=below["row_interp"], col_lower=below["col_lower"],
                  col_weights=below["col_interp"], m=m, n=n, row0f=row0, nc=nc, row0c=row0c,
                  mc=coarse["mg"])
        if index == 0:
            self._host_step(self._stop_poll)
        self.smooth(u, f, index, self.post)

    @property
    def should_stop(self) -> Any:
        """Polled between the finest level's steps when set (None: not polled)."""
        return self._stop_poll.should_stop

    @should_stop.setter
    def should_stop(self, function: Any) -> None:
        self._stop_poll.should_stop = function

    def release(self) -> None:
        """Forget the recorded cycles (they keep their buffers and kernels alive)."""
        self._plans.clear()

    def describe(self) -> str:
        """The cycle in words, for the summary."""
        shapes = " > ".join(f"{m}x{n}" for m, n in (level.shape for level in self.levels))
        smoother = "red-black Gauss-Seidel" if self.smoother == "rbgs" \
            else f"Jacobi (weight {JACOBI_WEIGHT})"
        return (f"{self.kind}({self.pre},{self.post}) cycle, {smoother}, {len(self.levels)} "
                f"levels ({shapes}; coarsest: {self.coarse_sweeps} sweeps)")
