"""A stencil slab with the halo exchange behind the interior's steps: the sub-slabs of
:class:`oclsci.mpi.overlap.OverlappedSlab` as :class:`~oclsci.stencil.solver.StencilSolver`
grids (:class:`StencilPieces`), as :mod:`oclsci.jacobi.overlap` makes Jacobi's; and the bands
of :class:`oclsci.mpi.concurrent.ConcurrentBands` the same way (:class:`StencilBands`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from oclsci.stencil.problem import Problem
from oclsci.stencil.solver import NeededLayers, StencilSolver


class StencilPieces:
    """How a stencil slab's sub-slabs are made (:class:`oclsci.mpi.overlap.Pieces`): each a
    :class:`StencilSolver` of its layers of ``local`` (the rank's slab problem: layers
    ``lo..hi-1`` of u, u.prev and the read-only fields, whose ghost layers never change), the
    strips trying ``strip_candidates``, the interior ``candidates``; the strips' kernels,
    where they can write some layers only, write those that the ``period`` steps to the next
    exchange need (the interior's would save little: its kernel built for all layers runs
    faster on NVIDIA's GPUs, docs/mpi.md). The levels that travel: u.prev's (with u.prev)
    and u's, each read from and written into the buffer that the next step reads (the
    exchange refreshes every ghost layer there). A periodic ``local`` makes each sub-slab a
    :class:`~oclsci.stencil.periodic.PeriodicGrid` wrapped along the other axes, all with
    ``r S`` computed ghost cells (so that their layers match), and wraps them after every
    exchange (:attr:`grids`: each sub-slab's solver's grid)."""

    def __init__(self, compute: Any, local: Problem, candidates: list, strip_candidates: list,
                 period: int):
        self.compute, self.local, self.period = compute, local, period
        self.candidates, self.strip_candidates = candidates, strip_candidates
        self.grids: dict[StencilSolver, Any] = {}

    def solver(self, rows: slice, strip: bool, owned: slice) -> StencilSolver:
        """The sub-slab's solver for the slab's layers ``rows``, of which ``owned`` (counted
        from its first) are its own."""
        candidates = self.strip_candidates if strip else self.candidates
        needed = NeededLayers(owned.start, owned.stop, self.period) if strip else None
        if not self.local.periodic:
            return StencilSolver(self.compute, layers(self.local, rows), candidates=candidates,
                                 needed=needed)
        from oclsci.stencil.periodic import PeriodicGrid  # periodic grids only

        grid = PeriodicGrid(self.compute, layers(self.local, rows), period=self.period,
                            axes=tuple(range(1, len(self.local.shape))), candidates=candidates,
                            widening=self.local.expression.radius * self.period, needed=needed)
        self.grids[grid.solver] = grid
        return grid.solver

    def after_exchange(self, solver: StencilSolver) -> None:
        """Wrap a periodic sub-slab along the other axes, its ghost layers refreshed."""
        grid = self.grids.get(solver)
        if grid is not None:
            grid.exchange(solver)

    @staticmethod
    def levels(solver: StencilSolver) -> list[tuple[Any, list[Any]]]:
        """u.prev's buffer (with u.prev), then u's, as the next step reads them."""
        return [(buffer, [buffer]) for buffer in solver.buffers_now() if buffer is not None]

    @staticmethod
    def row_stride(solver: StencilSolver) -> int:
        """Elements of a padded layer (a plane in 3-D)."""
        return solver.layer_stride


def layers(problem: Problem, rows: slice) -> Problem:
    """The problem's layers ``rows`` of u, u.prev and the read-only fields."""
    return dataclasses.replace(
        problem, u0=problem.u0[rows], prev0=None if problem.prev0 is None else problem.prev0[rows],
        fields={name: array[rows] for name, array in problem.fields.items()})


class StencilBands:
    """How a stencil grid's bands on queues of their own are made
    (:class:`oclsci.mpi.concurrent.BandAdapter`): each a :class:`StencilSolver` of its layers
    of ``problem`` running ``config``; the levels as :class:`StencilPieces` names them."""

    def __init__(self, problem: Problem, config: Any):
        self.problem, self.config = problem, config

    def solver(self, compute: Any, rows: slice) -> StencilSolver:
        """The band's solver on ``compute`` (its own queue)."""
        return StencilSolver(compute, layers(self.problem, rows), candidates=[self.config])

    levels = staticmethod(StencilPieces.levels)
    row_stride = staticmethod(StencilPieces.row_stride)
