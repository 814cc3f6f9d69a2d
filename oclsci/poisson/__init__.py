"""Poisson's equation on OpenCL devices: geometric multigrid, multigrid-preconditioned CG, and
Jacobi for comparison (:func:`solve`), with the NumPy reference beside them."""

from __future__ import annotations

from oclsci.poisson.reference import solve_numpy
from oclsci.poisson.solve import METHODS, PoissonResult, PoissonSolver, solve

__all__ = ["METHODS", "PoissonResult", "PoissonSolver", "solve", "solve_numpy"]
