"""Running Jacobi's corner cases (:mod:`oclsci.jacobi.corners`): the kernels through the
solver, bit for bit against NumPy, with an output buffer never written before; the residual
reduction and the tuner's comparison against NumPy.

A kernel that forgets to write a cell, or reads its output buffer, would go unnoticed if both
ping-pong buffers started as copies of x0: :func:`leave_output_uninitialised` gives the solver
a second buffer whose interior nobody wrote (the Oclgrind simulator reports the read; a real
device returns whatever the memory held). The buffers are made up front
(:func:`prepare_fresh_buffers`): Oclgrind 21.10 loses track of what kernels write into memory
that the host wrote, even memory of a released buffer that a new buffer reuses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from oclsci.corners import case_rng
from oclsci.elementwise.kernels import ElementwiseKernel
from oclsci.jacobi.kernels import KernelConfig
from oclsci.jacobi.reference import jacobi_numpy, laplacian
from oclsci.jacobi.runner import run
from oclsci.jacobi.solver import JacobiSolver
from oclsci.runtime import programs

# Buffers never written by the host, by case id: {"x": buffer, "scratch": buffer or None}.
FRESH: dict[str, dict] = {}
# Zeros written by a kernel, element by element (never reading a value it keeps).
ZERO = ElementwiseKernel("T x", "T x", "x = 0;", "zero_padding")
# The solvers' own buffers that the fresh ones replaced (kept: never recycled mid-run).
KEEP_ALIVE: list = []


def _row_stride(n: int) -> int:
    return -(-(n + 2) // 16) * 16


def prepare_fresh_buffers(compute: Any, cases: list[dict]) -> None:
    """Make the fresh iterate (and scratch) buffer of every kernel case, and keep them."""
    for case in cases:
        dtype = np.dtype(case["dtype"])
        m, n = case["shape"]
        buffers = {"x": cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                  (m + 2) * _row_stride(n) * dtype.itemsize), "scratch": None}
        layout = KernelConfig(case["kernel"], dict(case["params"])).scratch_layout(m, n)
        if layout is not None:
            buffers["scratch"] = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                           max(1, layout["scratch_elements"]) * dtype.itemsize)
        FRESH[case["id"]] = buffers


def _ring_ranges(m: int, n: int, stride: int) -> list[tuple[int, int]]:
    """The padded layout's zeros as ``(first, end)`` element ranges: the first row, each
    row's padding with the next row's first column, the rest of the last row."""
    return ([(0, stride + 1)] + [(row * stride + n + 1, (row + 1) * stride + 1)
                                 for row in range(1, m + 1)]
            + [((m + 1) * stride + 1, (m + 2) * stride)])


def leave_output_uninitialised(compute: Any, solver: JacobiSolver, case: dict) -> None:
    """Give ``solver`` the case's fresh buffer as its second iterate, its padding ring and row
    padding zeroed by a kernel (the kernels rely on them; Oclgrind would lose track of zeros
    from the host), and the fresh scratch buffer in place of the bands kernel's zeros."""
    buffers = FRESH.get(case["id"])
    if buffers is None:
        return
    m, n, stride, itemsize = solver.m, solver.n, solver.row_stride, solver.dtype.itemsize
    fresh = buffers["x"]
    if fresh.size != (m + 2) * stride * itemsize:
        raise AssertionError("the solver's padded layout changed: update prepare_fresh_buffers")
    whole = cla.Array(compute.queue, ((m + 2) * stride,), solver.dtype, data=fresh)
    for first, end in _ring_ranges(m, n, stride):
        ZERO(whole[first:end], device=compute)
    compute.queue.finish()
    KEEP_ALIVE.append((solver, solver.x_buffers[1], getattr(solver, "_scratch", None)))
    solver.x_buffers[1] = fresh
    solver.reconfigure(solver.config)
    scratch = getattr(solver, "_scratch", None)
    if scratch is not None and buffers["scratch"] is not None:
        if buffers["scratch"].size < scratch.size:
            raise AssertionError("the bands scratch grew: update prepare_fresh_buffers")
        position = solver.config.spec.argument_index("scratch")
        for launch in solver._launches + solver._remainder_launches:
            launch.kernel.set_arg(position, buffers["scratch"])
        KEEP_ALIVE.append(scratch)
        solver._scratch = buffers["scratch"]


def solve_and_compare(compute: Any, case: dict, config: KernelConfig) -> None:
    """Run a kernel case through the solver; every cell must equal NumPy's bit for bit."""
    dtype = np.dtype(case["dtype"])
    rhs = case_rng(case["id"]).standard_normal(tuple(case["shape"])).astype(dtype)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
    leave_output_uninitialised(compute, solver, case)
    run(solver, int(case["steps"]))
    got = solver.read()
    want = jacobi_numpy(rhs, int(case["steps"]), dtype=dtype)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise AssertionError(f"{len(bad)} cell(s) differ from NumPy, first at {bad[0].tolist()}: "
                             f"{got[tuple(bad[0])]!r} != {want[tuple(bad[0])]!r}")


def run_window(compute: Any, case: dict) -> None:
    """One launch of ``temporal`` writing the case's rows only (``rows_read``): those rows
    must equal NumPy's bit for bit."""
    dtype = np.dtype(case["dtype"])
    rng = case_rng(case["id"])
    rhs, x0 = (rng.standard_normal(tuple(case["shape"])).astype(dtype) for _ in range(2))
    first, stop = case["rows"]
    solver = JacobiSolver(compute, rhs, x0=x0, dtype=dtype,
                          config=KernelConfig("temporal", dict(case["params"])),
                          rows_read=(first, stop))
    solver.advance(int(case["steps"]))
    got = solver.read()[first:stop]
    want = jacobi_numpy(rhs, int(case["steps"]), x0=x0, dtype=dtype)[first:stop]
    if not np.array_equal(got, want):
        raise AssertionError(f"{int(np.sum(got != want))} cell(s) of rows {first}..{stop - 1} "
                             "differ from NumPy")


def _numpy_residual_rows(x: np.ndarray, rhs: np.ndarray, first_row: int, rows: int) -> float:
    r = laplacian(x) - np.asarray(rhs, dtype=np.float64)
    part = r[first_row - 1:first_row - 1 + rows]
    return float(np.sum(part * part))


def _check_solver_residuals(solver: JacobiSolver, rhs: np.ndarray) -> None:
    """The solver's residual and right-hand side sums over the row ranges of MPI ranks."""
    x, m = solver.read(), solver.m
    for first, last in ((1, m), (1, (m + 1) // 2), ((m + 1) // 2 + 1, m), (m, m), (2, 1)):
        got = solver.residual_sum_of_squares(first, last)
        want = _numpy_residual_rows(x, rhs, first, max(0, last - first + 1))
        if not np.isclose(got, want, rtol=1e-5, atol=1e-6):
            raise AssertionError(f"residual rows {first}..{last}: {got} != NumPy {want}")
        got = solver.rhs_sum_of_squares(first, last)
        want = float(np.sum(rhs[first - 1:last].astype(np.float64) ** 2))
        if not np.isclose(got, want, rtol=1e-5, atol=1e-6):
            raise AssertionError(f"rhs rows {first}..{last}: {got} != NumPy {want}")


def run_residual(compute: Any, case: dict) -> None:
    """The residual reduction launched directly (kind ``residual``) or through the solver
    (``residual_solver``), against NumPy."""
    dtype = np.dtype(case["dtype"])
    rhs = case_rng(case["id"]).standard_normal(tuple(case["shape"])).astype(dtype)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=KernelConfig("seed"))
    if case["kind"] == "residual_solver":
        run(solver, 2)
        _check_solver_residuals(solver, rhs)
        return
    acc_dtype = np.dtype(case["acc_dtype"])
    groups, group_size = int(case["groups"]), int(case["group_size"])
    kernel = programs.get_kernel(compute, "jacobi/residual", dtype=dtype, acc_dtype=acc_dtype,
                                 group_size=group_size, rhs_only=False,
                                 by_rows=bool(case["by_rows"]))
    partial = np.zeros(groups, dtype=acc_dtype)
    partial_buffer = cl.Buffer(compute.context, cl.mem_flags.WRITE_ONLY, partial.nbytes)
    kernel.set_args(solver.x_buffer, solver.rhs_buffer, np.int32(case["first_row"]),
                    np.int32(case["rows"]), np.int32(solver.n), np.int32(solver.row_stride),
                    partial_buffer)
    cl.enqueue_nd_range_kernel(compute.queue, kernel, (groups * group_size,), (group_size,))
    cl.enqueue_copy(compute.queue, partial, partial_buffer)
    got = float(np.sum(partial, dtype=np.float64))
    want = _numpy_residual_rows(rhs, rhs, int(case["first_row"]), int(case["rows"]))
    if not np.isclose(got, want, rtol=1e-4 if acc_dtype == np.float32 else 1e-10, atol=1e-6):
        raise AssertionError(f"residual {got} != NumPy {want}")


def run_compare(compute: Any, case: dict) -> None:
    """The tuner's comparison (``jacobi/compare``): it must count the cells that differ."""
    dtype = np.dtype(case["dtype"])
    m, n = case["shape"]
    row_stride = _row_stride(n)
    rng = case_rng(case["id"])
    a = np.zeros((m + 2, row_stride), dtype)
    a[1:-1, 1:n + 1] = rng.standard_normal((m, n))
    b = a.copy()
    flip = rng.random((m, n)) < 0.3
    b[1:-1, 1:n + 1][flip] += 1
    flags = cl.mem_flags
    buffers = [cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=h)
               for h in (a, b)]
    groups, group_size = int(case["groups"]), int(case["group_size"])
    counts = np.zeros(groups, np.uint32)
    counts_buffer = cl.Buffer(compute.context, flags.WRITE_ONLY, counts.nbytes)
    kernel = programs.get_kernel(compute, "jacobi/compare", dtype=dtype, group_size=group_size)
    kernel.set_args(*buffers, np.int32(m), np.int32(n), np.int32(row_stride), counts_buffer)
    cl.enqueue_nd_range_kernel(compute.queue, kernel, (groups * group_size,), (group_size,))
    cl.enqueue_copy(compute.queue, counts, counts_buffer)
    if int(counts.sum()) != int(flip.sum()):
        raise AssertionError(f"{int(counts.sum())} differing cells counted, "
                             f"{int(flip.sum())} differ")
