"""The user stencils' corner cases (see :mod:`oclsci.corners`): the step, tiled, stream, column
and streaming kernels, 2-D and 3-D, radius 1, 2 and 4, star and box, a right-hand side and a
coefficient field read at offsets, the previous level (``u.prev``), division, both precisions,
one-row and 3 x 3 x 3 grids, periodic boundaries (the wrap kernel too); the blocked kernels
with several (partial) tiles and segments and a remainder launch; the kernels that can write
some layers only (an MPI strip's launches: ``windowed``) over one launch. Each equal to
:meth:`~oclsci.stencil.Stencil.reference` bit for bit (the windowed ones on the layers they
write)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from oclsci.corners import case_id, case_rng

_BOX27 = " + ".join(f"u[{i}, {j}, {k}]" for i in (-1, 0, 1) for j in (-1, 0, 1)
                    for k in (-1, 0, 1))
# name -> expression, parameters, fields, boundary
STENCILS = {
    "jacobi": ("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", {}, ("b",), 0.0),
    "r2-coeff": ("u + k * (-u[-2, 0] + 16 * u[-1, 0] - u[0, 2] + u[0, -2] - 60 * u) / 12"
                 " + c[1, 1]", {"k": 0.05}, ("c",), 0.5),
    "wave-box27": (f"2 * u - u.prev + 0.01 * ({_BOX27})", {}, (), 0.0),
    "r4-3d": ("u + 0.1 * (u[4, 0, 0] + u[0, -4, 0] + u[0, 0, 3])", {}, (), 1.0),
    "heat": ("u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)", {"k": 0.2}, (), 0.5),
    "wave7-coeff": ("2 * u - u.prev + c[0, 1, -1] * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0]"
                    " + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] - 6 * u)", {}, ("c",), 0.25),
    "heat7": ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
              " + u[0, 0, 1] - 6 * u)", {"k": 0.1}, (), 0.5),
    # Periodic: the kernels on a widened grid, the wrap kernel refreshing its ghost cells.
    "r2-coeff-periodic": ("u + k * (-u[-2, 0] + 16 * u[-1, 0] - u[0, 2] + u[0, -2] - 60 * u)"
                          " / 12 + c[1, 1]", {"k": 0.05}, ("c",), "periodic"),
    "wave-box27-periodic": (f"2 * u - u.prev + 0.01 * ({_BOX27})", {}, (), "periodic"),
}
# The step kernel: stencil name, grid.
STEP_GRIDS = (("jacobi", (5, 7)), ("r2-coeff", (1, 9)), ("wave-box27", (3, 3, 3)),
              ("r4-3d", (2, 5, 9)), ("r2-coeff-periodic", (3, 7)),
              ("wave-box27-periodic", (3, 4, 2)))
# The blocked kernels over several (partial) tiles and a remainder launch (5 steps): stencil
# name, grid, kernel, its parameters.
BLOCKED = (
    ("jacobi", (9, 13), "tiled", {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2}),
    ("r2-coeff", (7, 11), "tiled", {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 2}),
    ("wave-box27", (5, 6, 7), "tiled",
     {"local_w": 4, "local_h": 4, "local_d": 2, "cells_z": 2, "max_steps": 1}),
    ("wave-box27-periodic", (5, 6, 7), "tiled",
     {"local_w": 4, "local_h": 4, "local_d": 2, "cells_z": 2, "max_steps": 1}),
    ("jacobi", (9, 13), "stream", {"local_w": 8, "max_steps": 2, "seg": 4}),
    ("r2-coeff", (7, 11), "stream", {"local_w": 16, "max_steps": 2, "seg": 3}),
    ("wave-box27", (5, 6, 7), "stream",
     {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2, "seg": 2}),
    ("r4-3d", (4, 5, 9), "stream",
     {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 1, "seg": 3}),
    ("jacobi", (9, 13), "streaming",
     {"cols": 2, "local_w": 8, "max_steps": 3, "seg_h": 4, "rhs_in_regs": 1}),
    ("heat", (7, 11), "streaming", {"cols": 4, "local_w": 4, "max_steps": 2, "seg_h": 3,
                                    "skew": 2, "rows": 2, "prefetch": 2}),
    ("wave7-coeff", (7, 6, 9), "column",
     {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2, "seg": 3, "prefetch": True}),
    ("r4-3d", (4, 5, 9), "column",
     {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 1, "seg": 3}),
    ("heat7", (5, 4, 11), "column",
     {"local_w": 4, "local_h": 4, "cells_x": 4, "cells_y": 3, "max_steps": 3, "seg": 2,
      "prefetch": True, "pack_x": True}),
)


# The kernels built to write some layers only, over one launch (an overlapped MPI strip's,
# oclsci.stencil.overlap): stencil name, grid, kernel, its parameters, the layers written
# (first, stop), several segments' worth among more layers.
WINDOWED = (
    ("heat7", (15, 5, 7), "column",
     {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2, "seg": 2, "prefetch": True},
     (5, 10)),
    ("wave7-coeff", (13, 6, 5), "column",
     {"local_w": 8, "local_h": 2, "cells_x": 2, "cells_y": 3, "max_steps": 1, "seg": 3,
      "pack_x": True}, (4, 9)),
    ("r4-3d", (19, 5, 9), "stream",
     {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 1, "seg": 2}, (8, 11)),
    ("r2-coeff", (17, 11), "tiled",
     {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 2}, (6, 9)),
    ("wave-box27", (11, 6, 7), "tiled",
     {"local_w": 4, "local_h": 4, "local_d": 2, "cells_z": 2, "max_steps": 1}, (4, 7)),
    ("heat7", (15, 5, 7), "step", {"gpu_groups": 1}, (5, 10)),
    ("r2-coeff", (17, 11), "step", {"cpu_groups": 1}, (6, 9)),
)


def _case(name: str, shape: tuple, dtype: str, kernel: str, kernel_params: dict | None,
          steps: int, cost_per_cell: int) -> dict:
    expression, params, fields, boundary = STENCILS[name]
    parts = ("stencil", name) if kernel == "step" else ("stencil", kernel, name)
    return {"id": case_id(*parts, dtype, "x".join(map(str, shape))),
            "kind": "stencil", "expression": expression, "params": params, "fields": fields,
            "shape": shape, "boundary": boundary, "dtype": dtype, "steps": steps,
            "kernel": kernel, "kernel_params": kernel_params,
            "cost": cost_per_cell * len(expression) * math.prod(shape)}


def corner_cases() -> list[dict]:
    """The step kernel over 3 steps on :data:`STEP_GRIDS`, then the blocked kernels over 5
    (:data:`BLOCKED`), then one launch of each :data:`WINDOWED` case, each in float32 and
    float64."""
    windowed = []
    for name, shape, kernel, kernel_params, (first, stop) in WINDOWED:
        for dtype in ("float32", "float64"):
            case = _case(name, shape, dtype, kernel, kernel_params,
                         kernel_params.get("max_steps", 1), 40)
            windowed.append(dict(case, id=case["id"] + "-window", needed=(first, stop)))
    return ([_case(name, shape, dtype, "step", None, 3, 8)
             for name, shape in STEP_GRIDS for dtype in ("float32", "float64")]
            + [_case(name, shape, dtype, kernel, kernel_params, 5, 40)
               for name, shape, kernel, kernel_params in BLOCKED
               for dtype in ("float32", "float64")] + windowed)


def run_corner_case(compute: Any, case: dict) -> None:
    """Run ``case`` on ``compute``; every cell must equal the NumPy reference's."""
    from oclsci.stencil import Stencil

    rng = case_rng(case["id"])
    stencil = Stencil(case["expression"], params=case["params"], fields=case["fields"],
                      boundary=case["boundary"])
    shape, dtype = tuple(case["shape"]), np.dtype(case["dtype"])
    u0 = rng.uniform(-1, 1, shape).astype(dtype)
    fields = {name: rng.uniform(0, 1, shape).astype(dtype) for name in case["fields"]}
    want = stencil.reference(u0, case["steps"], fields=fields)
    if case.get("needed"):  # one launch writing some layers only: compare those
        from oclsci.stencil.solver import NeededLayers, StencilSolver

        first, stop = case["needed"]
        problem = stencil.problem(u0, case["steps"], fields=fields, dtype=dtype)
        solver = StencilSolver(compute, problem, case["kernel"], case["kernel_params"],
                               needed=NeededLayers(first, stop, case["steps"]))
        if not solver.windowed:
            raise AssertionError("the kernel built to write some layers was refused")
        solver.advance(case["steps"])
        got, want = solver.read()[first:stop], want[first:stop]
    else:
        got = stencil.run(u0, case["steps"], fields=fields, device=compute,
                          kernel=case["kernel"], kernel_params=case["kernel_params"])
    if not np.array_equal(got, want):
        raise AssertionError(f"{int(np.sum(got != want))} cells differ from NumPy's")

