"""oclsci.mpi.concurrent's bands with a stencil's solvers: ghost layers of ``radius`` per step
(``reach``), no fixed rows, u.prev refreshed with u; bit-identical to one solver of the whole
grid (benchmarks/stencil_bands.py times the same; the stencil command runs one queue)."""

from __future__ import annotations

import numpy as np
import pytest

from oclsci.mpi.concurrent import ConcurrentBands
from oclsci.stencil import Stencil
from oclsci.stencil.overlap import StencilBands
from oclsci.stencil.solver import StencilSolver

CASES = [
    ("2 * u - u.prev + 0.1 * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] "
     "+ u[0, 0, -1] + u[0, 0, 1] - 6 * u)", (19, 7, 6), [], True, "column"),
    ("u + 0.05 * (u[-2, 0] + u[2, 0] + u[0, -2] + u[0, 2] - 4 * u)", (41, 13), [], False,
     "stream"),
    ("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", (37, 11), ["b"], False,
     "streaming"),
]


@pytest.mark.parametrize("expression, shape, fields, prev, kernel", CASES,
                         ids=["wave-3d-column", "radius2-stream", "jacobi-streaming"])
def test_stencil_bands_equal_one_solver(any_compute, expression, shape, fields, prev, kernel):
    rng = np.random.default_rng(12)
    stencil = Stencil(expression, fields=fields)
    problem = stencil.problem(
        rng.random(shape, dtype=np.float32), 1,
        fields={name: rng.random(shape, dtype=np.float32) for name in fields},
        prev=rng.random(shape, dtype=np.float32) if prev else None)
    whole = StencilSolver(any_compute, problem, kernel=kernel)
    radius = problem.expression.radius
    for bands in (2, 5):
        grid = ConcurrentBands(any_compute, shape[0], int(np.prod(shape[1:])),
                               StencilBands(problem, whole.config), bands=bands,
                               steps_per_launch=whole.steps_per_launch, reach=radius, fixed=0,
                               ring=radius)
        assert grid.decomposition.halo == 2 * radius * whole.steps_per_launch
        one = StencilSolver(any_compute, problem, candidates=[whole.config])
        for steps in (7, 1, 11):
            one.advance(steps)
            grid.advance(steps)
            grid.finish()
            got = np.concatenate([s.read()[slab.first - slab.lo:slab.stop - slab.lo] for slab, s
                                  in zip(grid.decomposition.slabs, grid.solvers, strict=True)])
            np.testing.assert_array_equal(got.view(np.uint8), one.read().view(np.uint8),
                                          err_msg=f"{bands} bands, {whole.config.describe()}")
