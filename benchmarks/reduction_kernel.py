"""oclsci's residual reduction beside PyOpenCL's ``ReductionKernel``, on one device, one run.

    PYTHONPATH=. python benchmarks/reduction_kernel.py [--size 4096] [--repeats 5] [--device SPEC]

The sum of squares of the Jacobi residual ``L x - B`` over a ``size x size`` grid (padded rows,
as the solver holds it), in float32 and float64 data with a float64 sum, timed four ways, best
of ``--repeats`` after a warm-up, each call ending with the value on the host:

* ``oclsci``: ``JacobiSolver.residual_sum_of_squares`` (``kernels/jacobi/residual.cl.mako``:
  by rows on CPUs, cell by cell on GPUs; the groups' sums finished on the host);
* ``oclsci map``: :func:`oclsci.runtime.reduction.map_reduction` of the same expression of the
  cell index that ReductionKernel is given;
* ``ReductionKernel cells``: ``pyopencl.reduction.ReductionKernel`` over the cells (its
  index divided into row and column), second stage on the device;
* ``ReductionKernel rows``: ReductionKernel over the rows, each value the sum of one row.

The values are printed too: the orders of summation differ, so the last bits may.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl.array as cla
from pyopencl.reduction import ReductionKernel

from oclsci.jacobi.kernels import KernelConfig
from oclsci.jacobi.solver import JacobiSolver
from oclsci.runtime.device import as_compute_context
from oclsci.runtime.reduction import map_reduction

PREAMBLE = """
static double residual_at(__global const REAL *x, __global const REAL *rhs, size_t i, size_t j,
                          size_t row_stride)
{
    const size_t at = i * row_stride + j;
    const double r = (double)x[at - row_stride] + (double)x[at + row_stride] + (double)x[at - 1]
                   + (double)x[at + 1] - (double)4 * (double)x[at] - (double)rhs[at];
    return r * r;
}

static double row_sum(__global const REAL *x, __global const REAL *rhs, size_t i, size_t n,
                      size_t row_stride)
{
    double sum = 0;
    for (size_t j = 1; j <= n; ++j)
        sum += residual_at(x, rhs, i, j, row_stride);
    return sum;
}
"""
CELL = "residual_at(x, rhs, {k} / (size_t)cols + 1, {k} % (size_t)cols + 1, (size_t)row_stride)"


def best(function, repeats: int) -> tuple[float, float]:
    value = function()
    seconds = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, float(value)


def compare(compute, size: int, dtype, repeats: int) -> None:
    rng = np.random.default_rng(1)
    solver = JacobiSolver(compute, rng.standard_normal((size, size)).astype(dtype),
                          dtype=dtype, config=KernelConfig("seed"))
    solver.advance(3)
    real = "float" if dtype == np.float32 else "double"
    preamble = PREAMBLE.replace("REAL", real)
    arguments = (f"__global const {real} *x, __global const {real} *rhs, int cols, "
                 "int row_stride")
    queue, padded = compute.queue, (size + 2) * solver.row_stride
    x = cla.Array(queue, (padded,), dtype, data=solver.x_buffer)
    rhs = cla.Array(queue, (padded,), dtype, data=solver.rhs_buffer)
    cells = ReductionKernel(compute.context, np.float64, neutral="0", reduce_expr="a+b",
                            map_expr=CELL.format(k="i"), arguments=arguments,
                            preamble=preamble)
    rows = ReductionKernel(compute.context, np.float64, neutral="0", reduce_expr="a+b",
                           map_expr="row_sum(x, rhs, i + 1, cols, row_stride)",
                           arguments=arguments, preamble=preamble)
    mapped = map_reduction(compute, params=[("x", dtype, True), ("rhs", dtype, True),
                                            ("cols", np.int32, False),
                                            ("row_stride", np.int32, False)],
                           map_expr=CELL.format(k="k"), result_dtype=np.float64,
                           preamble=preamble)
    ways = {
        "oclsci": solver.residual_sum_of_squares,
        "oclsci map": lambda: mapped(solver.x_buffer, solver.rhs_buffer, size,
                                     solver.row_stride, size * size),
        "ReductionKernel cells": lambda: cells(x, rhs, np.int32(size),
                                               np.int32(solver.row_stride),
                                               range=slice(size * size)).get(),
        "ReductionKernel rows": lambda: rows(x, rhs, np.int32(size),
                                             np.int32(solver.row_stride),
                                             range=slice(size)).get(),
    }
    for name, function in ways.items():
        seconds, value = best(function, repeats)
        print(f"{np.dtype(dtype).name:8} {size}^2  {name:22} {1e3 * seconds:9.2f} ms  "
              f"{value!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    compute = as_compute_context(args.device)
    print(f"device: {compute.device.name.strip()} ({compute.facts.compute_units} units)")
    for dtype in (np.float32, np.float64) if compute.supports_fp64 else (np.float32,):
        compare(compute, args.size, dtype, args.repeats)


if __name__ == "__main__":
    main()
