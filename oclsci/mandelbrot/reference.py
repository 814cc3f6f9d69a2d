"""The seed's NumPy Mandelbrot code, kept as the reference that the OpenCL kernel must match.

:func:`mandelbrot_set_np` is the seed talk's function as it was written (float32 coordinates,
complex64 ``Z`` and ``C``). :func:`mandelbrot_numpy` is the same algorithm with a choice of
precision (float32 -> complex64, float64 -> complex128), a band of rows and the smooth count.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# The seed's case (1500 x 1250 pixels, 400 iterations, horizon 2**40).
SEED_CASE = {
    "xmin": -2.25, "xmax": 0.75, "ymin": -1.25, "ymax": 1.25,
    "width": 1500, "height": 1250, "maxiter": 400, "horizon": 2.0**40,
}


def mandelbrot_set_np(xmin, xmax, ymin, ymax, xn, yn, maxiter, horizon=2.0, dummy=None):
    """The seed's code, verbatim apart from layout: returns ``(Z, N)``."""
    X = np.linspace(xmin, xmax, int(xn), dtype=np.float32)
    Y = np.linspace(ymin, ymax, int(yn), dtype=np.float32)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, np.complex64)
    for n in range(maxiter):
        I = np.less(np.abs(Z), horizon)  # noqa: E741 - the seed's name
        N[I] = n
        Z[I] = Z[I] ** 2 + C[I]
    N[N == maxiter - 1] = 0
    return Z, N


def log_horizon_of(horizon: float) -> float:
    """``log2(log(horizon))``, the offset of the smooth count."""
    return math.log(math.log(horizon)) / math.log(2)


def smooth_count(counts: np.ndarray, z: np.ndarray, horizon: float) -> np.ndarray:
    """The seed's normalised count ``nan_to_num(N + 1 - log2(log|Z|) + log_horizon)``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(counts + 1 - np.log(np.log(abs(z))) / np.log(2)
                             + log_horizon_of(horizon))


def coordinates(xmin: float, xmax: float, ymin: float, ymax: float, width: int, height: int,
                dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The pixel abscissae and ordinates, exactly as the seed's ``np.linspace`` calls."""
    return (np.linspace(xmin, xmax, int(width), dtype=dtype),
            np.linspace(ymin, ymax, int(height), dtype=dtype))


def mandelbrot_numpy(width: int = 1500, height: int = 1250, maxiter: int = 400,
                     xmin: float = -2.25, xmax: float = 0.75, ymin: float = -1.25,
                     ymax: float = 1.25, horizon: float = 2.0**40, dtype: Any = np.float32,
                     rows: tuple[int, int] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The seed's algorithm in NumPy: returns ``(counts int64, z complex)``.

    ``dtype`` float32 is the seed's code exactly; float64 uses complex128 throughout.
    ``rows=(first_row, row_count)`` computes only that band of rows of the full image.
    """
    dtype = np.dtype(dtype)
    complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
    X, Y = coordinates(xmin, xmax, ymin, ymax, width, height, dtype)
    if rows is not None:
        first, count = rows
        Y = Y[first:first + count]
    C = (X + Y[:, None] * 1j).astype(complex_dtype)
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, complex_dtype)
    limit = dtype.type(horizon)
    for n in range(maxiter):
        inside = np.less(np.abs(Z), limit)
        N[inside] = n
        Z[inside] = Z[inside] ** 2 + C[inside]
    N[N == maxiter - 1] = 0
    return N, Z
