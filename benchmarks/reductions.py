"""Time oclsci's reductions and print their values to the last bit, to compare two checkouts.

    PYTHONPATH=. python benchmarks/reductions.py [--size 4096] [--repeats 5] [--device SPEC]

Times, on the default device (``PYOPENCL_CTX``) or ``--device``: the Jacobi residual sum of
squares (``JacobiSolver.residual_sum_of_squares``, float32 and float64) and the Poisson dot
product (``Multigrid.dot``) of a ``size x size`` grid of random values, best of ``--repeats``
after one warm-up; and the tuner's count of differing cells and the device colouring's
extremes (their values only). Every value is printed exactly (``float.hex``), so that running
the script from two checkouts (``PYTHONPATH=/path/to/other``) shows whether the reductions
give the same bits and take the same time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from oclsci.jacobi.kernels import KernelConfig
from oclsci.jacobi.solver import JacobiSolver
from oclsci.runtime.device import as_compute_context


def best_seconds(function, repeats: int) -> tuple[float, object]:
    """Best wall time of ``function()`` over ``repeats`` runs after one warm-up, and its value."""
    value = function()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def exact(value) -> str:
    return float(value).hex() if isinstance(value, (float, np.floating)) else repr(value)


def residual(compute, size: int, dtype, repeats: int) -> None:
    rng = np.random.default_rng(1)
    rhs = rng.standard_normal((size, size)).astype(dtype)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=KernelConfig("seed"))
    solver.advance(3)
    seconds, value = best_seconds(solver.residual_sum_of_squares, repeats)
    half = solver.residual_sum_of_squares(1, size // 2 + 1)
    print(f"residual {np.dtype(dtype).name:8} {size}^2: {1e3 * seconds:8.2f} ms  "
          f"sum {exact(value)}  rows 1..{size // 2 + 1} {exact(half)}")
    if hasattr(solver, "x_buffers"):
        from oclsci.jacobi.tuner import _DeviceCompare

        compare = _DeviceCompare(solver)
        print(f"compare  {np.dtype(dtype).name:8} {size}^2: differing cells "
              f"{compare.differences(solver.x_buffers[0], solver.x_buffers[1])}")


def dot(compute, size: int, dtype, repeats: int) -> None:
    from oclsci.poisson import PoissonSolver

    solver = PoissonSolver(compute, (size, size), method="cg", dtype=dtype)
    mg = solver.mg
    rng = np.random.default_rng(2)
    a, b = mg.vector(), mg.vector()
    mg.upload(a, rng.standard_normal((size, size)))
    mg.upload(b, rng.standard_normal((size, size)))
    seconds, value = best_seconds(lambda: mg.dot(a, b), repeats)
    print(f"dot      {np.dtype(dtype).name:8} {size}^2: {1e3 * seconds:8.2f} ms  "
          f"sum {exact(value)}")


def extremes(compute, size: int) -> None:
    from oclsci.mandelbrot.device_shading import shade_on_device

    smooth = np.random.default_rng(3).random((size, size)) * 40
    rgb = shade_on_device(compute, smooth)
    print(f"shade    {size}^2: RGB checksum {int(rgb.astype(np.int64).sum())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    compute = as_compute_context(args.device)
    print(f"device: {compute.device.name.strip()} ({compute.facts.compute_units} units)")
    dtypes = (np.float32, np.float64) if compute.supports_fp64 else (np.float32,)
    for dtype in dtypes:
        residual(compute, args.size, dtype, args.repeats)
    for dtype in dtypes:
        dot(compute, args.size, dtype, args.repeats)
    extremes(compute, min(args.size, 1024))


if __name__ == "__main__":
    main()
