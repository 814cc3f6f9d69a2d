"""``oclsci selftest``'s Mandelbrot checks: the device's kernel shape in both dtypes, escape
counts as in the tests (at most 0.5% of the pixels may differ by rounding at the set's edge).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oclsci.mandelbrot.reference import mandelbrot_numpy
from oclsci.mandelbrot.renderer import mandelbrot

MANDELBROT_AGREEMENT = 0.995


def selftest_checks(compute: Any, size: dict) -> Iterator[tuple[str, Callable]]:
    """``(name, check)`` pairs for ``compute`` at ``size`` (oclsci.selftest.SIZES); each check
    returns (passed, largest difference, detail)."""
    width, height, maxiter = size["mandelbrot"]
    for dtype in compute.facts.float_dtypes:
        def check(dtype=dtype):
            result = mandelbrot(width, height, maxiter, dtype=dtype, device=compute)
            expected, _ = mandelbrot_numpy(width, height, maxiter, dtype=dtype)
            agreement = float(np.mean(result.counts == expected))
            diff = float(np.max(np.abs(result.counts.astype(np.int64) - expected)))
            return (agreement >= MANDELBROT_AGREEMENT and expected.max() > 0, diff,
                    f"{100 * agreement:.2f}% of counts equal")
        yield f"mandelbrot {dtype.name} {width}x{height} maxiter {maxiter}", check
