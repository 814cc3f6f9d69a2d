"""NumPy reference of the multigrid solver: the same levels, smoother and transfers in float64.

The device solver (:mod:`oclsci.poisson.multigrid`) does these steps in the same order, so
its residual history follows this one to rounding; the tests compare both, and both against
a direct sparse solve.
"""

from __future__ import annotations

import numpy as np

from oclsci.poisson.hierarchy import Level, Transfer, build_levels, smooth_red_black


def apply_operator(level: Level, u: np.ndarray) -> np.ndarray:
    """``L u`` on ``level``: second differences along both axes, zero outside the grid."""
    padded = np.pad(u, 1)
    north, south = level.rows.coefficients()
    west, east = level.cols.coefficients()
    return (north[:, None] * padded[:-2, 1:-1] + south[:, None] * padded[2:, 1:-1]
            + west[None, :] * padded[1:-1, :-2] + east[None, :] * padded[1:-1, 2:]
            - (north + south)[:, None] * u - (west + east)[None, :] * u)


def residual(level: Level, u: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``f - L u``."""
    return f - apply_operator(level, u)


def smooth_jacobi(level: Level, u: np.ndarray, f: np.ndarray, sweeps: int,
                  weight: float) -> None:
    """``sweeps`` weighted Jacobi sweeps in place."""
    north, south = level.rows.coefficients()
    west, east = level.cols.coefficients()
    diagonal = (north + south)[:, None] + (west + east)[None, :]
    for _ in range(sweeps):
        u += weight * (-residual(level, u, f) / diagonal)


def restrict(level: Level, r: np.ndarray) -> np.ndarray:
    """The fine residual ``r`` on the coarser ``level`` (its transfers)."""
    r = _restrict_axis(level.row_transfer, r)
    return _restrict_axis(level.col_transfer, r.T).T


def _restrict_axis(transfer: Transfer, r: np.ndarray) -> np.ndarray:
    kc = transfer.restrict.shape[0]
    out = np.zeros((kc,) + r.shape[1:])
    padded = np.concatenate([np.zeros((1,) + r.shape[1:]), r, np.zeros((2,) + r.shape[1:])])
    for c in range(3):
        rows = transfer.step * np.arange(kc) + transfer.step - 2 + c + 1
        out += transfer.restrict[:, c, None] * padded[rows]
    return out


def interpolate(level: Level, e: np.ndarray, fine_shape: tuple[int, int]) -> np.ndarray:
    """The coarse correction ``e`` of ``level`` on the next finer grid."""
    e = _interpolate_axis(level.row_transfer, e)
    return _interpolate_axis(level.col_transfer, e.T).T


def _interpolate_axis(transfer: Transfer, e: np.ndarray) -> np.ndarray:
    padded = np.concatenate([np.zeros((1,) + e.shape[1:]), e, np.zeros((1,) + e.shape[1:])])
    low = padded[transfer.lower + 1]
    high = padded[np.minimum(transfer.lower + 2, e.shape[0] + 1)]
    return transfer.weights[:, 0, None] * low + transfer.weights[:, 1, None] * high


def cycle(levels: list[Level], u: np.ndarray, f: np.ndarray, index: int = 0, *,
          kind: str = "V", pre: int = 2, post: int = 2, smoother: str = "rbgs",
          jacobi_weight: float = 0.8) -> None:
    """One V- or F-cycle from level ``index`` on ``u`` (in place) for ``L u = f``."""
    level = levels[index]
    if index == len(levels) - 1:
        smooth_red_black(level, u, f, level.coarse_sweeps())
        return

    def smooth(sweeps: int) -> None:
        if smoother == "rbgs":
            smooth_red_black(level, u, f, sweeps)
        else:
            smooth_jacobi(level, u, f, sweeps, jacobi_weight)

    smooth(pre)
    coarse = levels[index + 1]
    f_coarse = restrict(coarse, residual(level, u, f))
    e = np.zeros(coarse.shape)
    cycle(levels, e, f_coarse, index + 1, kind=kind, pre=pre, post=post, smoother=smoother,
          jacobi_weight=jacobi_weight)
    if kind == "F":
        cycle(levels, e, f_coarse, index + 1, kind="V", pre=pre, post=post,
              smoother=smoother, jacobi_weight=jacobi_weight)
    u += interpolate(coarse, e, u.shape)
    smooth(post)


def solve_numpy(rhs: np.ndarray, tol: float = 1e-8, max_cycles: int = 50,
                **options) -> tuple[np.ndarray, list[float]]:
    """Multigrid cycles from zero in float64 until ``||f - L u|| / ||f|| < tol``: the
    solution and the relative residual before the first and after each cycle."""
    f = np.asarray(rhs, dtype=np.float64)
    levels = build_levels(f.shape)
    u = np.zeros_like(f)
    scale = float(np.linalg.norm(f)) or 1.0
    history = [float(np.linalg.norm(residual(levels[0], u, f))) / scale]
    while history[-1] >= tol and len(history) <= max_cycles:
        cycle(levels, u, f, **options)
        history.append(float(np.linalg.norm(residual(levels[0], u, f))) / scale)
    return u, history
