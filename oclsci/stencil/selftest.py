"""``oclsci selftest``'s stencil checks: the seed's Jacobi, a 3-D 7-point heat update, a 2-D
wave with ``u.prev`` and the heat update with periodic boundaries, each bit for bit against
the NumPy reference, in float32 and (where the device has it) float64.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oclsci.stencil.api import Stencil

HEAT_3D = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
           " + u[0, 0, 1] - 6 * u)")
CASES = {  # name: expression, parameters, fields, dimensions, boundary
    "jacobi": ("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", {}, ("b",), 2, 0.0),
    "heat-3d": (HEAT_3D, {"k": 0.1}, (), 3, 0.0),
    "wave": ("2 * u - u.prev + c2 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)",
             {"c2": 0.2}, (), 2, 0.0),
    "heat-3d-periodic": (HEAT_3D, {"k": 0.1}, (), 3, "periodic"),
}


def selftest_checks(compute: Any, size: dict) -> Iterator[tuple[str, Callable]]:
    """``(name, check)`` pairs for ``compute`` at ``size`` (oclsci.selftest.SIZES: the Jacobi
    grid, a 3-D grid a quarter of it across, and its step count); each check returns (passed,
    largest difference, detail)."""
    rng = np.random.default_rng(37)
    m, n = size["jacobi"]
    steps = size["steps"]
    for dtype in (np.float32, np.float64):
        if dtype == np.float64 and not compute.supports_fp64:
            continue
        for name, (text, params, fields, dims, boundary) in CASES.items():
            shape = (m, n) if dims == 2 else (max(m // 4, 3), max(n // 4, 3), 13)

            def check(text=text, params=params, fields=fields, shape=shape, dtype=dtype,
                      boundary=boundary):
                stencil = Stencil(text, params=params, fields=fields, boundary=boundary)
                u0 = rng.uniform(-1, 1, shape).astype(dtype)
                arrays = {field: rng.uniform(-1, 1, shape).astype(dtype) for field in fields}
                got = stencil.run(u0, steps, fields=arrays, device=compute)
                want = stencil.reference(u0, steps, fields=arrays)
                diff = float(np.max(np.abs(got.astype(np.float64) - want)))
                return bool(np.array_equal(got, want)), diff, ""

            grid = "x".join(map(str, shape))
            yield f"stencil {name} {np.dtype(dtype).name} {grid} steps={steps}", check
