"""NumPy reference for the Jacobi reconstruction: the seed talk's code, for tests and benchmarks."""

from __future__ import annotations

import numpy as np


def laplacian(image: np.ndarray) -> np.ndarray:
    """Discrete 5-point Laplacian with zero Dirichlet boundary, in float64.

    ``B = X[i-1,j] + X[i+1,j] + X[i,j-1] + X[i,j+1] - 4 X[i,j]`` with X padded by zeros, so that
    the Jacobi iteration with right-hand side B converges to ``image``.
    """
    image = np.asarray(image, dtype=np.float64)
    padded = np.pad(image, 1)
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
            - 4.0 * image)


def jacobi_step(x_new: np.ndarray, x_old: np.ndarray, rhs: np.ndarray) -> None:
    """One Jacobi step on padded arrays, exactly as the seed's ``jacobi_cpu_mat``."""
    x_new[1:-1, 1:-1] = 0.25 * (x_old[0:-2, 1:-1] + x_old[2:, 1:-1] + x_old[1:-1, 0:-2]
                                + x_old[1:-1, 2:] - rhs)


def jacobi_numpy(rhs: np.ndarray, iterations: int, x0: np.ndarray | None = None,
                 dtype=np.float32) -> np.ndarray:
    """Run ``iterations`` Jacobi steps in NumPy and return the interior (same shape as rhs).

    X starts as ``x0`` (default: rhs itself, as in the seed) inside a ring of zeros.
    """
    rhs = np.asarray(rhs, dtype=dtype)
    m, n = rhs.shape
    x = np.zeros((m + 2, n + 2), dtype=dtype)
    x[1:-1, 1:-1] = rhs if x0 is None else np.asarray(x0, dtype=dtype)
    x_next = x.copy()
    for _ in range(iterations):
        jacobi_step(x_next, x, rhs)
        x, x_next = x_next, x
    return x[1:-1, 1:-1].copy()


def residual_norm(x: np.ndarray, rhs: np.ndarray) -> float:
    """Relative residual ||rhs - L x||_2 / ||rhs||_2 (L the 5-point Laplacian), in float64."""
    rhs = np.asarray(rhs, dtype=np.float64)
    r = laplacian(x) - rhs
    scale = np.linalg.norm(rhs)
    return float(np.linalg.norm(r) / scale) if scale > 0 else float(np.linalg.norm(r))
