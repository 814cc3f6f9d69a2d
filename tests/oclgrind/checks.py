"""Running the other cases in the runner: residual, canaries, comparison, reduction,
elementwise, Mandelbrot, Lomb-Scargle; :data:`RUNNERS` maps each case's ``kind`` to its function."""

from __future__ import annotations

from typing import Any

from oclgrind.jacobi_checks import case_rng, run_jacobi


def _numpy_residual_rows(x, rhs, first_row: int, rows: int) -> float:
    import numpy as np

    from oclsci.jacobi.reference import laplacian

    r = laplacian(x) - np.asarray(rhs, dtype=np.float64)
    part = r[first_row - 1:first_row - 1 + rows]
    return float(np.sum(part * part))


def _run_residual(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.jacobi.kernels import KernelConfig
    from oclsci.jacobi.runner import run
    from oclsci.jacobi.solver import JacobiSolver
    from oclsci.runtime import programs

    dtype = np.dtype(case["dtype"])
    rng = case_rng(case["id"])
    rhs = rng.standard_normal(tuple(case["shape"])).astype(dtype)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=KernelConfig("seed"))
    if case["kind"] == "residual_solver":
        run(solver, 2)
        x = solver.read()
        m = solver.m
        for first, last in ((1, m), (1, (m + 1) // 2), ((m + 1) // 2 + 1, m), (m, m), (2, 1)):
            got = solver.residual_sum_of_squares(first, last)
            want = _numpy_residual_rows(x, rhs, first, max(0, last - first + 1))
            if not np.isclose(got, want, rtol=1e-5, atol=1e-6):
                raise AssertionError(f"residual rows {first}..{last}: {got} != NumPy {want}")
            got = solver.rhs_sum_of_squares(first, last)
            want = float(np.sum(rhs[first - 1:last].astype(np.float64) ** 2))
            if not np.isclose(got, want, rtol=1e-5, atol=1e-6):
                raise AssertionError(f"rhs rows {first}..{last}: {got} != NumPy {want}")
        return
    acc_dtype = np.dtype(case["acc_dtype"])
    kernel = programs.get_kernel(compute, "jacobi/residual", dtype=dtype, acc_dtype=acc_dtype,
                                 group_size=int(case["group_size"]), rhs_only=False,
                                 by_rows=bool(case["by_rows"]))
    groups, group_size = int(case["groups"]), int(case["group_size"])
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


def _run_canary(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    program = cl.Program(compute.context, case["source"]).build()
    data = np.arange(1, 17, dtype=np.float32)
    flags = cl.mem_flags
    source = cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=data)
    out = cl.Buffer(compute.context, flags.WRITE_ONLY, data.nbytes)
    program.canary(compute.queue, (16,), (16,), out, source)
    result = np.empty_like(data)
    cl.enqueue_copy(compute.queue, result, out)


def _run_compare(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.runtime import programs

    dtype = np.dtype(case["dtype"])
    m, n = case["shape"]
    row_stride = -(-(n + 2) // 16) * 16
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


def _run_reduce(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.runtime.reduction import map_reduction

    dtype = np.dtype(case["dtype"])
    values = case_rng(case["id"]).standard_normal(int(case["size"])).astype(dtype)
    what = case["what"]
    settings = {"sum": dict(map_expr="a[k]", result_dtype=dtype),
                "min": dict(map_expr="a[k]", result_dtype=dtype, combine="fmin",
                            neutral="INFINITY", finish="min"),
                "count": dict(map_expr="(result_t)(a[k] > 0)", result_dtype=np.uint32)}[what]
    reduction = map_reduction(compute, params=[("a", dtype, True)], dtype=dtype,
                              group_size=int(case["group_size"]), chunked=case["chunked"],
                              **settings)
    flags = cl.mem_flags
    buffer = cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=values)
    got = reduction(buffer, values.size)
    want = {"sum": np.sum(values, dtype=np.float64), "min": values.min(),
            "count": np.count_nonzero(values > 0)}[what]
    if not np.isclose(float(got), float(want), rtol=1e-5, atol=1e-5):
        raise AssertionError(f"{what} {got} != NumPy {want}")


class Unsupported(Exception):
    """oclsci refuses this configuration (the test is skipped with the reason)."""


def _run_elementwise(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl.array as cla

    from oclsci.elementwise.ops import OPS

    op = OPS[case["op"]]
    dtype = np.dtype(case["dtype"])
    rng = case_rng(case["id"])
    size = int(case["size"])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        host = {a: rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
                for a in op.arrays}
    else:
        host = {a: rng.standard_normal(size).astype(dtype) for a in op.arrays}
    scalar = dtype.type(3 if dtype.kind in "iu" else 2.5)
    kernel = op.kernel if case["per_item"] == 1 else op.kernel.variant(
        per_item=int(case["per_item"]))
    arrays = {k: cla.to_device(compute.queue, v) for k, v in host.items()}
    args: list = [arrays[k] for k in op.arrays]
    if op.scalar_position is not None:
        args.insert(op.scalar_position, scalar)
    if op.written not in arrays:
        arrays[op.written] = cla.empty(compute.queue, size, dtype)
        args.append(arrays[op.written])
    reference_args = [host[k] for k in op.arrays]
    if op.scalar_position is not None:
        reference_args.insert(op.scalar_position, scalar)
    with np.errstate(over="ignore"):
        expected = op.reference(*reference_args)
    kernel(*args, device=compute)
    got = arrays[op.written].get()
    if not np.array_equal(got, expected):
        raise AssertionError(f"{np.count_nonzero(got != expected)} of {size} elements differ")


def _run_elementwise_user(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.elementwise.kernels import ElementwiseKernel

    dtype = np.dtype(case["dtype"])
    kernel = ElementwiseKernel(
        "T x, T y, int32 k", "T x, T s, T d",
        "s = twice(x) + y; d = x - y * k; x = x + 1;", "user_kernel",
        preamble="#define twice(v) ((v) + (v))\n")
    rng = case_rng(case["id"])
    x = (rng.standard_normal(700) * 10).astype(dtype)
    y = (rng.standard_normal(700) * 10).astype(dtype)
    x_before = x.copy()
    x_out, s, d = kernel(x, y, np.int32(3), device=compute)  # outputs in declaration order
    if x_out is not x:
        raise AssertionError("the in-place output is not the input array")
    with np.errstate(over="ignore"):
        want_s = (x_before + x_before) + y
        want_d = x_before - y * dtype.type(3)
        want_x = x_before + dtype.type(1)
    for name, got, want in (("s", s, want_s), ("d", d, want_d), ("x", x, want_x)):
        if not np.array_equal(got, want):
            raise AssertionError(f"{name}: {np.count_nonzero(got != want)} elements differ")


def _run_mandelbrot(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.mandelbrot.reference import mandelbrot_numpy
    from oclsci.mandelbrot.renderer import MandelbrotRenderer

    xmin, xmax, ymin, ymax = case["bounds"]
    window = dict(width=case["width"], height=case["height"], maxiter=case["maxiter"],
                  xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax, dtype=case["dtype"],
                  rows=tuple(case["rows"]) if case["rows"] else None)
    from oclsci.errors import InputError

    extra = {"unroll": case["unroll"]} if case.get("unroll") else {}
    try:
        renderer = MandelbrotRenderer(compute, vector_width=case["vector_width"], **extra,
                                      **window)
    except (InputError, TypeError) as error:
        raise Unsupported(str(error)) from None
    result = renderer.run(want_z=case["want_z"], want_smooth=case["want_smooth"])
    counts, _ = mandelbrot_numpy(**window)
    wrong = int(np.count_nonzero(result.counts != counts))
    if wrong > max(1, 0.005 * counts.size):
        raise AssertionError(f"{wrong} of {counts.size} escape counts differ from NumPy")


def _run_shade(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.mandelbrot.device_shading import shade_on_device
    from oclsci.mandelbrot.shading import shade

    rng = case_rng(case["id"])
    shape = tuple(case["shape"])
    smooth = (rng.random(shape) * 40 if case["values"] == "noise"
              else np.full(shape, 3.0)).astype(case["dtype"])
    got = shade_on_device(compute, smooth, case["origin"]).astype(int)
    want = shade(smooth, renderer="numpy", origin=case["origin"]).astype(int)
    worst = int(np.abs(got - want).max())
    if worst > (1 if compute.supports_fp64 else 3):
        raise AssertionError(f"colours differ from NumPy's by up to {worst} levels")


def _run_lombscargle(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.lombscargle import Periodogram, float32_bound, lombscargle_numpy

    rng = case_rng(case["id"])
    x = rng.uniform(0, 10, case["n"])
    y = rng.normal(size=case["n"]) + 0.5
    freqs = np.linspace(0.1, 3.0, case["f"])
    plan = Periodogram(compute, x, y, freqs, dtype=case["dtype"], fast_math=case["fast_math"],
                       variant=case["variant"], paired_sincos=False)
    got = plan.run().get().astype(np.float64)
    want = lombscargle_numpy(x, y, freqs)
    bound = 1e-10 if case["dtype"] == "float64" else float32_bound(x, freqs, case["fast_math"])
    error = float(np.max(np.abs(got - want))) / max(float(np.max(want)), 1e-300)
    if not error <= bound:
        raise AssertionError(f"max error {error:.3g} of the peak (bound {bound:.3g})")


# Solvers of the Poisson cases, made before any case runs (see preallocate_poisson).
POISSON_SOLVERS: dict[str, Any] = {}


def preallocate_poisson(compute: Any, cases: list[dict]) -> None:
    """Make the solver (all its buffers) of every Poisson case up front and keep it: Oclgrind
    21.10 loses track of kernel writes into memory of a released buffer that the host had
    written (see oclgrind.jacobi_checks.preallocate)."""
    from oclsci.poisson import PoissonSolver

    for case in cases:
        if case["kind"] == "poisson":
            POISSON_SOLVERS[case["id"]] = PoissonSolver(
                compute, case["shape"], method=case["method"], dtype=case["dtype"],
                cycle=case["cycle"], smoother=case["smoother"])


def _run_poisson(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.poisson import solve_numpy

    rhs = case_rng(case["id"]).standard_normal(case["shape"])
    tol = 1e-9 if case["dtype"] == "float64" else 1e-4
    got = POISSON_SOLVERS[case["id"]].solve(rhs, tol, max_cycles=30)
    want, _ = solve_numpy(rhs, tol=1e-12)
    if not got.converged:
        raise AssertionError(f"no convergence: residuals {got.residuals}")
    error = float(np.max(np.abs(got.x - want))) / max(float(np.max(np.abs(want))), 1e-300)
    if not error <= 10 * tol:
        raise AssertionError(f"max error {error:.3g} of the largest value (tol {tol:g})")


def _run_stencil(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.stencil import Stencil

    rng = case_rng(case["id"])
    stencil = Stencil(case["expression"], params=case["params"], fields=case["fields"],
                      boundary=case["boundary"])
    shape, dtype = tuple(case["shape"]), np.dtype(case["dtype"])
    u0 = rng.uniform(-1, 1, shape).astype(dtype)
    fields = {name: rng.uniform(0, 1, shape).astype(dtype) for name in case["fields"]}
    got = stencil.run(u0, case["steps"], fields=fields, device=compute,
                      kernel=case.get("kernel", "step"), kernel_params=case.get("kernel_params"))
    want = stencil.reference(u0, case["steps"], fields=fields)
    if not np.array_equal(got, want):
        raise AssertionError(f"{int(np.sum(got != want))} cells differ from NumPy's")


RUNNERS = {
    "stencil": _run_stencil,
    "poisson": _run_poisson,
    "lombscargle": _run_lombscargle,
    "canary": _run_canary,
    "compare": _run_compare,
    "reduce": _run_reduce,
    "elementwise": _run_elementwise,
    "elementwise_user": _run_elementwise_user,
    "mandelbrot": _run_mandelbrot,
    "shade": _run_shade,
    "jacobi": run_jacobi,
    "residual": _run_residual,
    "residual_solver": _run_residual,
}
