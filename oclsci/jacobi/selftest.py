"""``oclsci selftest``'s Jacobi checks: every kernel of :data:`oclsci.jacobi.kernels.KERNELS`
with the device's default configuration, and the configuration ``--kernel auto`` picks (tuned
or default), for the test's grid and for a large one (:data:`LARGE_GRID`: the configurations
are run on the test's grid), in float32 and float64 (where the device has fp64), bit for bit
against :func:`oclsci.jacobi.reference.jacobi_numpy`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oclsci.jacobi.kernels import KERNELS, choose_config, device_default
from oclsci.jacobi.reference import jacobi_numpy
from oclsci.jacobi.runner import run
from oclsci.jacobi.solver import JacobiSolver

# The grid whose configurations are checked too: large enough for every large-grid default and
# for ``auto``'s choice on large grids (streaming from 2^25 cells on GPUs).
LARGE_GRID = (16384, 16384)


def selftest_checks(compute: Any, size: dict) -> Iterator[tuple[str, Callable]]:
    """``(name, check)`` pairs for ``compute`` at ``size`` (oclsci.selftest.SIZES); each check
    returns (passed, largest difference, detail)."""
    rng = np.random.default_rng(15)
    shape, steps = size["jacobi"], size["steps"]
    for dtype in compute.facts.float_dtypes:
        rhs = (rng.standard_normal(shape) * 100).astype(dtype)
        expected = jacobi_numpy(rhs, steps, dtype=dtype)
        configs: dict[str, tuple[str, Any]] = {}  # by description: each configuration once
        for grid, suffix in ((shape, ""), (LARGE_GRID, " (large grids)")):
            auto = choose_config(compute, "auto", dtype, grid)
            configs.setdefault(auto.describe(), (f"auto={auto.name}{suffix}", auto))
            for name in KERNELS:
                config = device_default(compute, name, dtype, grid)
                configs.setdefault(config.describe(), (f"{name}{suffix}", config))
        for label, config in configs.values():
            def check(config=config, rhs=rhs, expected=expected, dtype=dtype):
                solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
                run(solver, steps)
                got = solver.read()
                diff = float(np.max(np.abs(got.astype(np.float64) - expected)))
                return diff == 0.0 and bool(np.all(np.isfinite(got))), diff, config.describe()
            yield f"jacobi {label} {dtype.name} {shape[0]}x{shape[1]} {steps} steps", check
