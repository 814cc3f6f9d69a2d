"""Poisson's corner cases (see :mod:`oclsci.corners`): the multigrid kernels through the
solver (V and F cycles, both smoothers, CG, which adds the apply, dot and axpby kernels), both
precisions, on grids of one cell, one row, one level below the coarsest and several levels;
within ten times the tolerance of :func:`~oclsci.poisson.solve_numpy`'s solution."""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.corners import case_id, case_rng

# The solver of each case, made before any case runs (see prepare_corner_cases).
SOLVERS: dict[str, Any] = {}


def corner_cases() -> list[dict]:
    """Each method, cycle and smoother in both precisions on 1x1, 1x70, 9x9 and 17x40."""
    cases = []
    for dtype in ("float32", "float64"):
        for method, cycle, smoother in (("multigrid", "V", "rbgs"), ("multigrid", "F", "rbgs"),
                                        ("multigrid", "V", "jacobi"), ("cg", "V", "rbgs")):
            for shape in ((1, 1), (1, 70), (9, 9), (17, 40)):
                cases.append({"id": case_id("poisson", method, cycle, smoother, dtype,
                                            f"{shape[0]}x{shape[1]}"),
                              "kind": "poisson", "method": method, "cycle": cycle,
                              "smoother": smoother, "dtype": dtype, "shape": shape,
                              "cost": 40 * shape[0] * shape[1]})
    return cases


def prepare_corner_cases(compute: Any, cases: list[dict]) -> None:
    """Make the solver (all its buffers) of every case up front and keep it: the Oclgrind
    simulator (21.10) loses track of kernel writes into memory of a released buffer that the
    host had written."""
    from oclsci.poisson import PoissonSolver

    for case in cases:
        SOLVERS[case["id"]] = PoissonSolver(
            compute, case["shape"], method=case["method"], dtype=case["dtype"],
            cycle=case["cycle"], smoother=case["smoother"])


def run_corner_case(compute: Any, case: dict) -> None:
    """Solve the case's random right-hand side to its tolerance on ``compute``; the solution
    must be within ten times the tolerance of NumPy's."""
    from oclsci.poisson import PoissonSolver, solve_numpy

    solver = SOLVERS.get(case["id"]) or PoissonSolver(
        compute, case["shape"], method=case["method"], dtype=case["dtype"],
        cycle=case["cycle"], smoother=case["smoother"])
    rhs = case_rng(case["id"]).standard_normal(case["shape"])
    tol = 1e-9 if case["dtype"] == "float64" else 1e-4
    got = solver.solve(rhs, tol, max_cycles=30)
    want, _ = solve_numpy(rhs, tol=1e-12)
    if not got.converged:
        raise AssertionError(f"no convergence: residuals {got.residuals}")
    error = float(np.max(np.abs(got.x - want))) / max(float(np.max(np.abs(want))), 1e-300)
    if not error <= 10 * tol:
        raise AssertionError(f"max error {error:.3g} of the largest value (tol {tol:g})")
