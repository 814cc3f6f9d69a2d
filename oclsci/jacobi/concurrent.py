"""Jacobi's grid as bands of rows on queues of their own (:mod:`oclsci.mpi.concurrent`).

:func:`oclsci.jacobi.runner.whole_grid_solver` makes a :class:`ConcurrentJacobi` where the
configuration's spec asks for bands (``streaming`` on GPUs, for grids of 2^25 cells and 4000
rows or more: :func:`oclsci.jacobi.specs.streaming.queue_bands`) or ``OCLSCI_QUEUE_BANDS``
names a count. It offers the interface of :class:`~oclsci.jacobi.JacobiSolver` that
:func:`oclsci.jacobi.run`, the commands and the checkpoints use, over one solver per band;
the results are bit-identical to one solver.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.arrays import check_fits, validate_grid
from oclsci.errors import InvalidArgumentError
from oclsci.jacobi.kernels import KernelConfig, choose_config
from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config
from oclsci.mpi.concurrent import GHOST_LAUNCHES, ConcurrentBands


class _Bands:
    """How :class:`ConcurrentJacobi`'s bands are made (a
    :class:`~oclsci.mpi.concurrent.BandAdapter`): each a JacobiSolver of its rows."""

    def __init__(self, rhs: np.ndarray, x0: np.ndarray | None, dtype: np.dtype,
                 config: KernelConfig):
        self.rhs, self.x0, self.dtype, self.config = rhs, x0, dtype, config

    def solver(self, compute: Any, rows: slice) -> JacobiSolver:
        """The band's solver: its rows of B and X0, the run's configuration."""
        return JacobiSolver(compute, self.rhs[rows],
                            x0=None if self.x0 is None else self.x0[rows],
                            dtype=self.dtype, config=self.config, rhs_checked=True)

    @staticmethod
    def levels(solver: JacobiSolver) -> list[tuple[Any, list[Any]]]:
        """The iterate: read from the current buffer, written into both (the fixed rows
        are read from either)."""
        return [(solver.x_buffer, solver.x_buffers)]

    @staticmethod
    def row_stride(solver: JacobiSolver) -> int:
        """Elements of a padded row."""
        return solver.row_stride


def banded_bytes(shape: tuple[int, int], dtype: Any, steps_per_launch: int,
                 bands: int) -> int:
    """Device bytes of a grid in ``bands`` bands: B and the two iterates, each band with its
    ghost and fixed rows, its rows padded as :class:`~oclsci.jacobi.JacobiSolver` pads them."""
    m, n = shape
    ghost = GHOST_LAUNCHES * steps_per_launch
    row_stride = -(-(n + 2) // 16) * 16
    return 3 * (m + bands * (2 * ghost + 2)) * row_stride * np.dtype(dtype).itemsize


class ConcurrentJacobi(ConcurrentBands):
    """Jacobi on an m x n grid in ``bands`` bands of rows on queues of their own of
    ``compute``'s device, all running ``config`` (default: what ``kernel`` means for the
    whole grid): :class:`~oclsci.jacobi.JacobiSolver`'s interface for runs (``advance``,
    ``iteration``, ``read``, the residual's sums; rows numbered as in the whole padded grid).
    ``rhs`` must be finite and fit ``dtype``."""

    def __init__(self, compute: Any, rhs: np.ndarray, x0: Any = None, *, dtype: Any,
                 bands: int, kernel: str = "auto", config: KernelConfig | None = None):
        self.m, self.n = rhs.shape
        dtype = np.dtype(dtype)
        if x0 is not None:
            x0 = validate_grid(x0, "x0")
            if x0.shape != rhs.shape:
                raise InvalidArgumentError(f"x0 has shape {x0.shape}, expected {rhs.shape} "
                                           "(the right-hand side's)")
            check_fits(x0, dtype, "x0")
        # Checks first, the build (seconds on some drivers) last.
        steps = (config or choose_config(compute, kernel, dtype, rhs.shape)).steps_per_launch
        compute.check_allocation(banded_bytes(rhs.shape, dtype, steps, bands),
                                 f"a {self.m}x{self.n} {dtype.name} grid")
        config = config or choose_fitting_config(compute, kernel, dtype, rhs.shape)
        self.config = config
        super().__init__(compute, self.m, self.n, _Bands(rhs, x0, dtype, config), bands=bands,
                         steps_per_launch=config.steps_per_launch)

    def read(self) -> np.ndarray:
        """The current iterate's interior as an m x n NumPy array."""
        x = np.empty((self.m, self.n), dtype=self.dtype)
        for slab, solver in zip(self.decomposition.slabs, self.solvers, strict=True):
            x[slab.first:slab.stop] = solver.read()[slab.first - slab.lo:slab.stop - slab.lo]
        return x

    def read_rows(self, first: int, count: int) -> np.ndarray:
        """Copy padded rows ``first .. first+count-1`` of the current iterate to the host
        (rows of the grid's interior, each from the band that owns it)."""
        parts = [solver.read_rows(a, b - a)
                 for _, solver, a, b in self.owned(first - 1, first - 1 + count)]
        rows = np.concatenate(parts) if parts else np.empty((0, self.row_stride), self.dtype)
        if len(rows) != count:
            raise ValueError(f"padded rows {first}..{first + count - 1} are not all interior "
                             "rows")
        return rows

    def residual_sum_of_squares(self, first_row: int = 1, last_row: int | None = None) -> float:
        """Sum over padded rows first_row..last_row of the squared residual ``L x - B`` (the
        bands' ghost rows next to their own refreshed first where they may be stale)."""
        self.refresh_stale()
        return sum(solver.residual_sum_of_squares(a, b - 1)
                   for _, solver, a, b in self._padded(first_row, last_row))

    def rhs_sum_of_squares(self, first_row: int = 1, last_row: int | None = None) -> float:
        """Sum of B squared over padded rows first_row..last_row."""
        return sum(solver.rhs_sum_of_squares(a, b - 1)
                   for _, solver, a, b in self._padded(first_row, last_row))

    def _padded(self, first_row: int, last_row: int | None):
        last_row = self.m if last_row is None else last_row
        return self.owned(first_row - 1, last_row)
