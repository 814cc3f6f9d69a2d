"""``oclsci selftest``'s Poisson checks: multigrid and conjugate gradients to a tolerance per
dtype, the residual of the device's solution recomputed in float64 by NumPy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oclsci.poisson.hierarchy import build_levels
from oclsci.poisson.reference import residual as poisson_residual
from oclsci.poisson.solve import solve as poisson_solve

POISSON_TOL = {"float32": 1e-4, "float64": 1e-8}
POISSON_METHODS = ("multigrid", "cg")


def selftest_checks(compute: Any, size: dict) -> Iterator[tuple[str, Callable]]:
    """``(name, check)`` pairs for ``compute`` at ``size`` (oclsci.selftest.SIZES); each check
    returns (passed, largest difference, detail)."""
    shape = size["poisson"]
    rhs = np.random.default_rng(17).standard_normal(shape)
    level = build_levels(shape)[0]
    scale = float(np.linalg.norm(rhs))
    for dtype in compute.facts.float_dtypes:
        tol = POISSON_TOL[dtype.name]
        for method in POISSON_METHODS:
            def check(method=method, dtype=dtype, tol=tol):
                result = poisson_solve(rhs, tol, method=method, dtype=dtype, device=compute)
                relative = float(np.linalg.norm(poisson_residual(
                    level, result.x.astype(np.float64), rhs))) / scale
                return (result.converged and relative < 2 * tol, relative,
                        f"{result.cycles} cycles, residual {relative:.3g} (NumPy, float64)")
            yield f"poisson {method} {dtype.name} {shape[0]}x{shape[1]} tol {tol:g}", check
