"""A stencil slab with the halo exchange behind the interior's steps: the sub-slabs of
:class:`oclsci.mpi.overlap.OverlappedSlab` as :class:`~oclsci.stencil.solver.StencilSolver`
grids (:class:`StencilPieces`), as :mod:`oclsci.jacobi.overlap` makes Jacobi's.
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
    exchange refreshes every ghost layer there)."""

    def __init__(self, compute: Any, local: Problem, candidates: list, strip_candidates: list,
                 period: int):
        self.compute, self.local, self.period = compute, local, period
        self.candidates, self.strip_candidates = candidates, strip_candidates

    def solver(self, rows: slice, strip: bool, owned: slice) -> StencilSolver:
        """The sub-slab's solver for the slab's layers ``rows``, of which ``owned`` (counted
        from its first) are its own."""
        local = self.local
        piece = dataclasses.replace(
            local, u0=local.u0[rows], prev0=None if local.prev0 is None else local.prev0[rows],
            fields={name: array[rows] for name, array in local.fields.items()})
        return StencilSolver(self.compute, piece, candidates=self.strip_candidates if strip
                             else self.candidates,
                             needed=NeededLayers(owned.start, owned.stop, self.period)
                             if strip else None)

    @staticmethod
    def levels(solver: StencilSolver) -> list[tuple[Any, list[Any]]]:
        """u.prev's buffer (with u.prev), then u's, as the next step reads them."""
        return [(buffer, [buffer]) for buffer in solver.buffers_now() if buffer is not None]

    @staticmethod
    def row_stride(solver: StencilSolver) -> int:
        """Elements of a padded layer (a plane in 3-D)."""
        return solver.layer_stride
