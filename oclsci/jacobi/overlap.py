"""Jacobi's slab with the halo exchange behind the interior's steps: the sub-slabs of
:class:`oclsci.mpi.overlap.OverlappedSlab` as :class:`~oclsci.jacobi.JacobiSolver` grids,
and the residual sums and rows that :func:`oclsci.jacobi.run` and the gather read from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.arrays import check_fits
from oclsci.errors import DeviceMemoryError
from oclsci.jacobi.runner import queue_bands
from oclsci.jacobi.solver import JacobiSolver, validate_rhs
from oclsci.mpi.concurrent import bands_that_fit
from oclsci.mpi.overlap import OverlappedSlab
from oclsci.mpi.slabs import Decomposition, Slab
from oclsci.mpi.world import World


def rows_written(config: Any, period: int, owned: tuple[int, int]) -> tuple[int, int] | None:
    """The rows a sub-slab's full launches of ``config`` need to write (JacobiSolver's
    ``rows_read``): its ``owned`` rows where one launch makes the ``period`` (the exchange
    after each launch refreshes the others), else None (every row)."""
    return owned if config.steps_per_launch == period else None


class JacobiPieces:
    """How a Jacobi slab's sub-slabs are made (:class:`oclsci.mpi.overlap.Pieces`): each a
    solver of its rows of ``rhs_rows`` and ``x0_rows`` (the slab's rows ``lo..hi-1``, or
    None), the strips on ``strip_config`` (default ``config``). One level travels: the
    iterate, written into both ping-pong buffers (the fixed rows are read from either)."""

    def __init__(self, compute: Any, rhs_rows: np.ndarray, x0_rows: np.ndarray | None, *,
                 dtype: Any, config: Any, period: int, strip_config: Any = None):
        self.compute = compute
        self.rhs_rows, self.x0_rows = rhs_rows, x0_rows
        self.dtype, self.config, self.strip_config = dtype, config, strip_config
        self.period = period

    def solver(self, rows: slice, strip: bool, owned: slice) -> Any:
        """The sub-slab's solver for the slab's rows ``rows``; where one launch makes the
        period, its full launches need to write only the ``owned`` rows (the exchange after
        each refreshes the others). The interior runs in bands of rows on queues of their
        own where :func:`~oclsci.jacobi.runner.queue_bands` asks for them on its shape and
        they fit (:func:`~oclsci.mpi.concurrent.bands_that_fit`)."""
        config = self.strip_config if strip and self.strip_config else self.config
        if not strip:
            held = self.rhs_rows[rows]
            wanted = queue_bands(self.compute, config, held.shape, exchanged=True)
            bands = bands_that_fit(len(held), wanted, config.steps_per_launch,
                                   edge=self.period + 1)
            if bands > 1:
                from oclsci.jacobi.concurrent import ConcurrentJacobi  # only in bands

                held = validate_rhs(held)  # as a JacobiSolver checks its own
                check_fits(held, self.dtype, "the right-hand side")
                try:
                    # Every band on a queue of its own, none on the strips' queue, which
                    # waits for the rows from other ranks once a period.
                    return ConcurrentJacobi(
                        self.compute.with_own_queue(), held,
                        None if self.x0_rows is None else self.x0_rows[rows],
                        dtype=self.dtype, bands=bands, config=config)
                except DeviceMemoryError:
                    pass  # the interior alone may fit: one queue
        return JacobiSolver(self.compute, self.rhs_rows[rows],
                            x0=None if self.x0_rows is None else self.x0_rows[rows],
                            dtype=self.dtype, config=config,
                            rows_read=rows_written(config, self.period,
                                                   (owned.start, owned.stop)))

    @staticmethod
    def levels(solver: JacobiSolver) -> list[tuple[Any, list[Any]]]:
        """The iterate: read from the current buffer, written into both."""
        return [(solver.x_buffer, solver.x_buffers)]

    @staticmethod
    def row_stride(solver: JacobiSolver) -> int:
        """Elements of a padded row."""
        return solver.row_stride


class OverlappedJacobi(OverlappedSlab):
    """This rank's Jacobi sub-slabs: the solver and the ``halo`` that
    :func:`oclsci.jacobi.run` drives. Rows are numbered as in the rank's whole slab ``slab``
    (padded local rows, as :class:`~oclsci.jacobi.JacobiSolver` numbers them); ``rhs_rows``
    and ``x0_rows`` (or None) hold the slab's rows ``slab.lo..slab.hi-1``. The strips run
    ``strip_config`` (default ``config``), the interior ``config``; ``period`` is a multiple
    of both steps per launch, or launches of fewer steps make up the difference.
    """

    def __init__(self, world: World, compute: Any, slab: Slab,
                 pieces: tuple[Decomposition, list[int]], rhs_rows: np.ndarray,
                 x0_rows: np.ndarray | None, *, dtype: Any, config: Any, period: int,
                 strip_config: Any = None):
        super().__init__(world, compute, slab, pieces,
                         JacobiPieces(compute, rhs_rows, x0_rows, dtype=dtype, config=config,
                                      period=period, strip_config=strip_config),
                         period=period)

    def residual_sum_of_squares(self, first_row: int, last_row: int) -> float:
        """Sum of the squared residual over the slab's padded rows first..last (owned)."""
        return sum(solver.residual_sum_of_squares(a, b)
                   for solver, a, b in self.pieces_in(first_row, last_row))

    def rhs_sum_of_squares(self, first_row: int, last_row: int) -> float:
        """Sum of B squared over the slab's padded rows first..last (owned)."""
        return sum(solver.rhs_sum_of_squares(a, b)
                   for solver, a, b in self.pieces_in(first_row, last_row))

    def read_rows(self, first: int, count: int) -> np.ndarray:
        """The slab's owned padded rows ``first..first+count-1`` of the current iterate."""
        parts = [solver.read_rows(a, b - a + 1)
                 for solver, a, b in self.pieces_in(first, first + count - 1)]
        rows = np.concatenate(parts) if parts else np.empty((0, self.row_stride), self.dtype)
        if len(rows) != count:
            raise ValueError(f"rows {first}..{first + count - 1} are not all owned here")
        return rows
