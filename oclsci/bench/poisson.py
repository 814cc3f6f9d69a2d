"""Poisson benchmark case: the built-in picture's Laplacian on a square grid, solved to a
tolerance by each method of :mod:`oclsci.poisson`.

Reference: SciPy's sparse direct solve (``scipy.sparse.linalg.spsolve``) where SciPy is
installed, else oclsci's NumPy multigrid. Variants: multigrid (V-cycle), F-cycle, conjugate
gradients preconditioned by one V-cycle, and the talk's Jacobi steps to the same tolerance
(slow on purpose: that is the comparison); PyAMG's classical AMG on the host where PyAMG is
installed (set-up and solve). One "iteration" is a whole solve; its throughput counts the
grid's cells solved per second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.bench.core import Case, Timing, compare_arrays, host_timed
from oclsci.jacobi.picture import builtin_picture
from oclsci.jacobi.reference import laplacian
from oclsci.poisson import PoissonSolver, solve_numpy

# Grid sides: the full case on GPUs, on CPUs (where Jacobi to the tolerance takes about as long
# as 512^2 on a GPU), and the quick case.
GPU_SIZE, CPU_SIZE, QUICK_SIZE = 512, 256, 128
# Tolerance of each solve and of the check against the reference, per dtype: a residual of
# tol leaves an error up to a few hundred times larger in the smoothest components, which
# Jacobi is slowest to remove.
TOLERANCES = {"float64": (1e-8, 1e-5), "float32": (1e-5, 1e-2)}


def picture_rhs(size: int) -> np.ndarray:
    """The Laplacian of the built-in picture, stretched (nearest neighbour) to size x size."""
    picture = builtin_picture().astype(np.float64)
    rows = np.arange(size) * picture.shape[0] // size
    cols = np.arange(size) * picture.shape[1] // size
    return laplacian(picture[np.ix_(rows, cols)])


class DirectSolve:
    """SciPy's sparse LU (SuperLU) of the 5-point Laplacian, or the NumPy multigrid without
    SciPy; set-up of the matrix untimed."""

    kind = "host"
    name = "scipy-direct"

    def __init__(self, rhs: np.ndarray):
        self.rhs = rhs
        try:
            import scipy.sparse as sparse
            import scipy.sparse.linalg as sparse_linalg
        except ImportError:
            self.name, self.matrix = "numpy-multigrid", None
            self.description = "oclsci.poisson.solve_numpy (float64, to 1e-12; no SciPy)"
            return
        m, n = rhs.shape

        def second_difference(k: int) -> Any:
            return sparse.diags([np.ones(k - 1), -2 * np.ones(k), np.ones(k - 1)], [-1, 0, 1])

        self.matrix = (sparse.kron(second_difference(m), sparse.identity(n))
                       + sparse.kron(sparse.identity(m), second_difference(n))).tocsc()
        self.spsolve = sparse_linalg.spsolve
        self.description = "scipy.sparse.linalg.spsolve (SuperLU, float64, one core)"

    def run(self, iterations: int) -> Timing:
        if self.matrix is None:
            return host_timed(lambda: solve_numpy(self.rhs, tol=1e-12)[0])
        return host_timed(lambda: self.spsolve(self.matrix, self.rhs.ravel())
                          .reshape(self.rhs.shape))


class PyamgSolve:
    """PyAMG's classical (Ruge-Stuben) AMG as a solver, set-up included (host, float64)."""

    kind = "host"
    name = "pyamg"

    def __init__(self, rhs: np.ndarray, matrix: Any, tol: float):
        import pyamg

        self.pyamg, self.rhs, self.matrix, self.tol = pyamg, rhs, matrix.tocsr(), tol
        self.description = (f"PyAMG {pyamg.__version__} ruge_stuben_solver, V-cycles to "
                            f"{tol:g} (set-up and solve timed)")

    def run(self, iterations: int) -> Timing:
        def solve() -> np.ndarray:
            hierarchy = self.pyamg.ruge_stuben_solver(self.matrix)
            x = hierarchy.solve(self.rhs.ravel(), tol=self.tol, maxiter=200)
            return x.reshape(self.rhs.shape)
        return host_timed(solve)


class OclsciPoisson:
    """One method of :class:`oclsci.poisson.PoissonSolver`, made once (untimed) and timed per
    solve from zero (device time from OpenCL events)."""

    kind = "opencl"

    def __init__(self, compute: Any, rhs: np.ndarray, dtype: str, method: str, tol: float,
                 cycle: str = "V"):
        self.compute, self.rhs, self.tol = compute, rhs, tol
        self.name = method if cycle == "V" else f"{method}-{cycle}"
        self.solver = PoissonSolver(compute, rhs.shape, method=method, dtype=dtype, cycle=cycle)
        self.description = f"oclsci.poisson {method} to {tol:g}"

    def run(self, iterations: int) -> Timing:
        result = self.solver.solve(self.rhs, self.tol, max_cycles=10**6)
        how = "converged" if result.converged else "NOT converged"
        self.description = (f"oclsci.poisson {result.method}: {result.description}; "
                            f"{result.cycles} cycles to {result.residual:.2e} ({how}, tol "
                            f"{self.tol:g})")
        return Timing(result.wall_seconds, result.device_seconds, result.x,
                      result.timing_source)


def cases(compute: Any, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The picture's Laplacian in float64 and float32 (smaller on CPUs and with ``quick``)."""
    size = QUICK_SIZE if quick else CPU_SIZE if compute.is_cpu else GPU_SIZE
    rhs = picture_rhs(size)
    reference = DirectSolve(rhs)
    found, skipped = [], []
    for dtype in ("float64", "float32"):
        if dtype == "float64" and not compute.supports_fp64:
            skipped.append("poisson float64: the device has no fp64")
            continue
        tol, rtol = TOLERANCES[dtype]
        variants: list = [OclsciPoisson(compute, rhs, dtype, "multigrid", tol),
                          OclsciPoisson(compute, rhs, dtype, "multigrid", tol, cycle="F"),
                          OclsciPoisson(compute, rhs, dtype, "cg", tol),
                          OclsciPoisson(compute, rhs, dtype, "jacobi", tol)]
        notes = [f"check: max error within {rtol:g} of the largest value of the reference "
                 f"solution; every oclsci variant solves to a relative residual of {tol:g}"]
        if dtype == "float64" and getattr(reference, "matrix", None) is not None:
            try:
                variants.append(PyamgSolve(rhs, reference.matrix, tol))
            except ImportError:
                notes.append("PyAMG not installed: its variant is left out")
        found.append(Case(
            id=f"poisson-{size}x{size}-{dtype}", workload="poisson",
            title=f"Poisson {size}x{size}, {dtype}, to a relative residual of {tol:g} (the "
                  "built-in picture's Laplacian)",
            problem={"shape": [size, size], "dtype": dtype, "tol": tol},
            iterations=1, iteration_unit="solve", reference=reference, variants=variants,
            work=float(size * size), throughput_unit="cells solved/s", warmup_iterations=1,
            checker=compare_arrays(rtol=rtol), notes=notes, extrapolate=False))
    return found, skipped
