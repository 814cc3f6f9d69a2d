"""The grids of a multigrid solve: any size, coarsened by keeping every second point.

An axis of ``k`` unknowns lies between two boundary points (value zero). The finest axis has
unit spacing, so its operator is the 5-point Laplacian of ``oclsci jacobi`` (``L x = B``).
A coarser axis keeps the odd points (0-based) of the finer one, ``k // 2`` of them: for
``k = 2**j - 1`` the spacing doubles everywhere, otherwise the last interval is shorter. Each
level discretises the same Laplacian on its own points (second differences for uneven spacing),
so every size and shape coarsens, 1 x N and N x 1 included; an axis of one point stays as it
is while the other goes on. Interpolation is linear between a fine point's coarse neighbours
(bilinear in 2-D), restriction its transpose weighted by the points' shares of the axis
(full weighting where the spacing is even), and every level's data is per axis: the 2-D
weights are products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Coarsen while a level has more cells than this; the coarsest is solved by sweeps.
COARSEST_CELLS = 64
# The coarsest solve reduces its error by this factor (enough for the cycle's rate).
COARSE_REDUCTION = 1e-6
MAX_COARSE_SWEEPS = 1000


@dataclass(frozen=True)
class Axis:
    """Positions of one axis's points, its two boundary points included (``k + 2`` of them)."""

    positions: np.ndarray

    @classmethod
    def uniform(cls, points: int) -> Axis:
        """The finest axis: ``points`` unknowns at unit spacing."""
        return cls(np.arange(-1.0, points + 1.0))

    @property
    def points(self) -> int:
        """Number of unknowns."""
        return self.positions.size - 2

    @property
    def can_coarsen(self) -> bool:
        """True when a coarser axis has at least one point."""
        return self.points >= 2

    def coarsened(self) -> Axis:
        """The axis of every second point (0-based odd ones) between the same boundaries."""
        inner = self.positions[1:-1][1::2]
        return Axis(np.concatenate([self.positions[:1], inner, self.positions[-1:]]))

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """Weights (lower, upper) of each point's neighbours in the second difference:
        ``u'' ~ lower u[i-1] + upper u[i+1] - (lower + upper) u[i]``; 1 and 1 at unit spacing."""
        p = self.positions
        below, above = p[1:-1] - p[:-2], p[2:] - p[1:-1]
        return 2.0 / (below * (below + above)), 2.0 / (above * (below + above))

    def shares(self) -> np.ndarray:
        """Each point's share of the axis (half the distance between its neighbours)."""
        p = self.positions
        return 0.5 * (p[2:] - p[:-2])


@dataclass(frozen=True)
class Transfer:
    """Interpolation from a coarse axis to a fine one, and restriction back, per point.

    ``lower[i]``: the coarse point below fine point ``i`` (-1: the boundary), with weight
    ``weights[i, 0]``; the point above is ``lower[i] + 1`` with weight ``weights[i, 1]``.
    ``step`` is 2 for a coarsened axis and 1 for one kept as it is; coarse point ``c`` then
    gathers fine points ``step * c + step - 2 + (0, 1, 2)`` with ``restrict[c]``.
    """

    step: int
    lower: np.ndarray
    weights: np.ndarray
    restrict: np.ndarray

    @classmethod
    def between(cls, fine: Axis, coarse: Axis) -> Transfer:
        """The transfer between ``fine`` and ``coarse`` (``coarse`` is ``fine`` or coarser)."""
        k, kc = fine.points, coarse.points
        if kc == k:
            return cls(1, np.arange(k, dtype=np.int32),
                       np.tile([1.0, 0.0], (k, 1)), np.tile([0.0, 1.0, 0.0], (k, 1)))
        x, pc = fine.positions[1:-1], coarse.positions
        upper = np.searchsorted(pc, x, side="left")  # first coarse position >= x
        exact = pc[upper] == x
        upper = np.where(exact, upper + 1, upper)
        below, above = pc[upper - 1], pc[upper]
        w_low = np.where(exact, 1.0, (above - x) / (above - below))
        weights = np.stack([w_low, 1.0 - w_low], axis=1)
        lower = (upper - 2).astype(np.int32)  # interior index of the coarse point below
        # Restriction: the transpose of interpolation, weighted by the points' shares.
        restrict = np.zeros((kc, 3))
        f_share, c_share = fine.shares(), coarse.shares()
        for side in (0, 1):
            c = lower + side
            inside = (c >= 0) & (c < kc) & (weights[:, side] != 0.0)
            offset = np.arange(k)[inside] - 2 * c[inside]
            assert np.all((offset >= 0) & (offset <= 2)), "fine point outside its stencil"
            np.add.at(restrict, (c[inside], offset),
                      weights[inside, side] * f_share[inside] / c_share[c[inside]])
        return cls(2, lower, weights, restrict)


@dataclass(frozen=True)
class Level:
    """One grid of the hierarchy: its axes and, below the finest, the transfer from it."""

    rows: Axis
    cols: Axis
    row_transfer: Transfer | None = None  # from the next finer level's rows to these
    col_transfer: Transfer | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of unknowns."""
        return self.rows.points, self.cols.points

    def coarse_sweeps(self) -> int:
        """Red-black sweeps that reduce this level's error by :data:`COARSE_REDUCTION` whatever
        the error: the fewest k with ||S^k|| below it, S the matrix of one sweep and the
        Frobenius norm a cheap upper bound of the 2-norm (the coarsest level has at most a
        few dozen cells; the spectral radius alone would promise too much, S being far from
        normal on uneven levels)."""
        m, n = self.shape
        cells = m * n
        sweep = np.empty((cells, cells))
        zero = np.zeros((m, n))
        for k in range(cells):  # one sweep on zero f, from each unit error
            u = np.zeros(cells)
            u[k] = 1.0
            u = u.reshape(m, n)
            smooth_red_black(self, u, zero, 1)
            sweep[:, k] = u.ravel()
        power = sweep
        for sweeps in range(1, MAX_COARSE_SWEEPS + 1):
            if np.linalg.norm(power) <= COARSE_REDUCTION:
                return sweeps
            power = sweep @ power
        return MAX_COARSE_SWEEPS


def build_levels(shape: tuple[int, int], coarsest_cells: int = COARSEST_CELLS) -> list[Level]:
    """The levels for an ``m x n`` grid, finest first, down to at most ``coarsest_cells``
    cells (or until neither axis can be coarsened)."""
    m, n = shape
    if m < 1 or n < 1:
        raise ValueError(f"grid must have at least one row and column, got {shape}")
    levels = [Level(Axis.uniform(m), Axis.uniform(n))]
    while True:
        fine = levels[-1]
        rows_m, cols_n = fine.shape
        if rows_m * cols_n <= coarsest_cells or not (fine.rows.can_coarsen
                                                      or fine.cols.can_coarsen):
            return levels
        rows = fine.rows.coarsened() if fine.rows.can_coarsen else fine.rows
        cols = fine.cols.coarsened() if fine.cols.can_coarsen else fine.cols
        levels.append(Level(rows, cols, Transfer.between(fine.rows, rows),
                            Transfer.between(fine.cols, cols)))


def smooth_red_black(level: Level, u: np.ndarray, f: np.ndarray, sweeps: int) -> None:
    """``sweeps`` red-black Gauss-Seidel sweeps in place (red: row + column even, first;
    post-smoothing too: black first halves the rate of convergence, measured)."""
    m, n = u.shape
    north, south = level.rows.coefficients()
    west, east = level.cols.coefficients()
    diagonal = (north + south)[:, None] + (west + east)[None, :]
    parity = np.add.outer(np.arange(m), np.arange(n)) % 2
    for _ in range(sweeps):
        for colour in (0, 1):
            padded = np.pad(u, 1)
            neighbours = (north[:, None] * padded[:-2, 1:-1] + south[:, None] * padded[2:, 1:-1]
                          + west[None, :] * padded[1:-1, :-2] + east[None, :] * padded[1:-1, 2:])
            update = (neighbours - f) / diagonal
            u[parity == colour] = update[parity == colour]
