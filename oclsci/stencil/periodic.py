"""Periodic boundaries: the grid wraps around on every axis, whatever kernel runs, on one
device (and on each MPI rank's slab along its other axes, :mod:`oclsci.stencil.distributed`).

The device buffers hold the grid inside ghost cells that hold the grid's cells from the other
side: ``w`` of them on each side of every axis where the kernels compute (the grid widened),
then the ring of ``r`` cells (``r`` the stencil's radius) that every buffer has, which the
one-step kernel reads and the blocked kernels do not (they take the boundary value there). A
value that is wrong at the edge of what a kernel sees reaches ``r`` cells further in each
step, so with ``w = r S`` (``r (S - 1)`` for the one-step kernel, whose first step reads the
ring right) only ghost cells are wrong after ``S`` steps, and a refresh makes them right
again: every cell of the grid goes through the same operations as in the NumPy reference
(which pads with ``np.pad``'s wrap), bit for bit, with every kernel. The refresh is one launch
of ``kernels/stencil/wrap.cl.mako`` per axis and time level that the next step reads, on the
device (the run's halo: :func:`oclsci.stencil.runner.run_steps` calls it every ``S`` steps,
between chunks of launches); the read-only fields' ghost cells are written once.

``S`` is one launch of the kernel: the one-step kernel then computes the grid alone (its
refreshes fill the ring every step), a blocked kernel ``2 r S / n`` more cells along an axis
of ``n``, and more where they take another column of its tiles. On an H200, 512^3 with
``column``'s 3 steps ran 1.11x the fixed boundary's time per step at ``S = 3``, 1.35x at
``S = 6`` (524 cells across take a tenth column of 64-wide tiles where 518 take nine:
benchmarks/stencil_periodic.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.arrays import check_steps
from oclsci.errors import InvalidArgumentError
from oclsci.kernelspec import round_up
from oclsci.runtime import programs
from oclsci.runtime.launch import Launch
from oclsci.stencil.kernels import choose
from oclsci.stencil.problem import Problem
from oclsci.stencil.runner import OneDevice
from oclsci.stencil.solver import StencilSolver, geometry

WORDS = {4: np.uint32, 8: np.uint64}  # the elements' bits, copied as they are
# Work-items of the wrap kernel's groups on GPUs: on an H200 (512^3), a refresh took 77 us
# with groups of 64, 50 us with 256, 63 us with 1024.
GROUP = 256


def widen(array: np.ndarray | None, depth: int,
          axes: tuple[int, ...] | None = None) -> np.ndarray | None:
    """``array`` inside ``depth`` cells of its other side on each side of every axis (of
    ``axes``, default all)."""
    if array is None:
        return None
    axes = range(array.ndim) if axes is None else axes
    return np.pad(array, [(depth, depth) if axis in axes else (0, 0)
                          for axis in range(array.ndim)], mode="wrap")


class PeriodicGrid(OneDevice):
    """A periodic ``problem`` on ``compute``'s device: :attr:`solver` (a
    :class:`~oclsci.stencil.solver.StencilSolver` of the widened grid, ``kernel`` and
    ``kernel_params`` as it takes them) and the run's halo on its one device (this object:
    every :attr:`steps_between_exchanges` steps, :meth:`exchange` refreshes the ghost cells).
    ``period``: those steps (default: one launch of the kernel); more ghost cells are then
    computed, fewer refreshes run. ``axes``: the axes that wrap here (default all; an MPI
    rank's slab wraps the others, :mod:`oclsci.stencil.distributed`, and its ghost layers
    come from the ranks); ``candidates``: the configurations to try (default: what
    ``kernel`` means for the widened grid); ``widening``: the computed ghost cells a side
    (default: what the kernel needs at ``period``; the sub-slabs of a rank take one for
    all, so that their layers match); ``needed``: the solver's
    :class:`~oclsci.stencil.solver.NeededLayers` (an MPI strip's)."""

    def __init__(self, compute: Any, problem: Problem, kernel: str = "auto",
                 kernel_params: dict | None = None, period: int | None = None, *,
                 axes: tuple[int, ...] | None = None, candidates: list | None = None,
                 widening: int | None = None, needed: Any = None):
        self.compute = compute
        dtype = compute.check_dtype(problem.dtype)
        given = candidates is not None
        if not given:
            candidates = choose(compute, kernel, geometry(problem, dtype), problem.expression,
                                dtype, kernel_params)
        self.axes = tuple(range(len(problem.shape)) if axes is None else axes)
        radius = self.radius = problem.expression.radius
        launch = candidates[0].steps_per_launch
        period = launch if period is None else check_steps(period, "period")
        if period < 1:
            raise InvalidArgumentError(f"period must be at least 1, got {period}")
        # A stencil that reads no neighbour needs no ghost cells.
        self.steps_between_exchanges = period if radius else 0
        # Ghost cells for whichever candidate builds (a blocked one may follow a refused one).
        one_step = all(config.spec.steps_param is None for config in candidates)
        self.widening = radius * (period - 1 if one_step else period) if widening is None \
            else int(widening)
        self.shape = problem.shape
        wide = dataclasses.replace(problem, periodic=False, **{
            "u0": widen(problem.u0, self.widening, self.axes),
            "prev0": widen(problem.prev0, self.widening, self.axes),
            "fields": {name: widen(array, self.widening, self.axes)
                       for name, array in problem.fields.items()}})
        # The configurations for the widened grid (a segment fitted to its layers), where
        # they take as many steps a launch.
        fitted = [] if given else choose(compute, kernel, geometry(wide, dtype),
                                         problem.expression, dtype, kernel_params)
        if fitted and fitted[0].steps_per_launch == launch and (one_step or not all(
                config.spec.steps_param is None for config in fitted)):
            candidates = fitted
        self.solver = solver = StencilSolver(compute, wide, candidates=candidates,
                                             needed=needed)
        # The buffers' extents: the widened grid and the ring (rows without their alignment).
        self.extents = tuple(size + 2 * radius for size in wide.shape)
        self.depth = self.widening + radius  # ghost cells a side in the buffers
        self._refreshes = [self._refresh(axis) for axis in self.axes] if radius else []
        for buffer, array in zip(solver.field_buffers, problem.fields.values(), strict=True):
            host = np.zeros(solver.layout, dtype=solver.dtype)
            # Along an axis that does not wrap here the ring keeps the boundary value (zero).
            ring = [(0, 0) if axis in self.axes else (radius, radius)
                    for axis in range(array.ndim)]
            host[tuple(slice(0, size) for size in self.extents)] = np.pad(
                widen(array, self.depth, self.axes), ring)
            cl.enqueue_copy(compute.queue, buffer, host, is_blocking=True)
        self._wrap(solver)  # the rings of u and u.prev
        self.exchanges = 0

    def _refresh(self, axis: int) -> Launch:
        """The wrap kernel's launch for ``axis`` (its arguments but the buffer set): one
        work-item per ghost cell along the axis, the contiguous axis first; on a GPU in
        whole groups of :data:`GROUP` items (the runtime's own choice for a global size such
        as 6 x 518 x 518 made tiny groups on NVIDIA's driver: a refresh took about 0.2 ms on
        512^3), on a CPU exactly (the runtime's groups)."""
        solver, compute = self.solver, self.compute
        gpu = not compute.facts.kernel_facts()["is_cpu"]
        sizes = list(self.extents)
        sizes[axis] = 2 * self.depth
        sizes = sizes[::-1]
        kernel = programs.new_kernel(
            compute, "stencil/wrap", dims=len(self.shape), axis=axis, checked=gpu,
            once=self.depth <= self.shape[axis], word=np.dtype(WORDS[solver.dtype.itemsize]))
        kernel.set_args(None, *(np.int32(size) for size in self.extents),
                        np.int32(solver.row_stride), np.int32(self.depth))
        if not gpu:
            return Launch(compute.queue, kernel, tuple(sizes), None)
        first = min(GROUP, 1 << (sizes[0] - 1).bit_length())
        local = (first, GROUP // first) + (1,) * (len(sizes) - 2)
        return Launch(compute.queue, kernel,
                      tuple(round_up(s, g) for s, g in zip(sizes, local, strict=True)), local)

    def exchange(self, solver: StencilSolver) -> None:
        """Refresh the ghost cells of the levels the next step reads (u.prev's and u's),
        axis after axis (enqueued: the queue orders them before the next steps)."""
        self._wrap(solver)
        self.exchanges += 1

    def _wrap(self, solver: StencilSolver) -> None:
        previous, current = solver.buffers_now()
        # u.prev is read at the cell: its ghost cells matter where the kernel computes some.
        for buffer in (previous if self.widening else None, current):
            if buffer is None:
                continue
            for launch in self._refreshes:
                launch.kernel.set_arg(0, buffer)
                launch.fast()

    def _own(self, array: np.ndarray | None) -> np.ndarray | None:
        if array is None:
            return None
        return array[tuple(slice(self.widening, self.widening + size) if axis in self.axes
                           else slice(None) for axis, size in enumerate(self.shape))].copy()

    def read(self) -> np.ndarray:
        """The field now (after the steps enqueued so far), of the grid's shape."""
        return self._own(self.solver.read())

    def read_prev(self) -> np.ndarray | None:
        """The previous time level now (None when the update does not read u.prev)."""
        return self._own(self.solver.read_prev())

    def describe(self) -> str:
        """The boundary's line for summaries."""
        if not self.radius:
            return "periodic (the stencil reads no neighbour)"
        where, ranks = "every axis", ""
        if len(self.axes) < len(self.shape):  # an MPI rank's slab
            others = "axis" if len(self.shape) == 2 else "axes"
            where = f"the other {others}"
            ranks = "ghost layers from the ranks around the grid's ends; "
        return (f"periodic ({ranks}{self.depth} ghost cells a side on {where}, "
                f"{self.widening} of them computed; refreshed every "
                f"{self.steps_between_exchanges} steps: {self.exchanges} refreshes)")
