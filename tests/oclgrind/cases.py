"""The case catalogue: every kernel launch that oclsci can make, on tiny grids.

:func:`all_cases`: the Jacobi kernels (:mod:`oclgrind.jacobi`), the residual reduction, the
tuner's comparison, the generic reduction, Mandelbrot, Lomb-Scargle, the multigrid Poisson
solver, every elementwise operation and the user-stencil kernel;
:func:`canary_cases`: broken kernels that Oclgrind must report.
"""

from __future__ import annotations

import math

from oclgrind.jacobi import SHAPES, jacobi_cases, make_id


def compare_cases() -> list[dict]:
    """The tuner's exactness check (``jacobi/compare``): counts of differing cells per group."""
    from oclsci.runtime import programs

    if "jacobi/compare" not in programs.template_names():
        return []
    return [{"id": make_id("compare", dtype, f"{m}x{n}", f"g{group_size}", f"groups{groups}"),
             "kind": "compare", "dtype": dtype, "shape": (m, n), "group_size": group_size,
             "groups": groups, "cost": m * n}
            for dtype in ("float32", "float64")
            for (m, n), group_size, groups in (((1, 1), 1, 1), ((5, 3), 8, 1), ((17, 40), 64, 1),
                                               ((17, 40), 8, 16))]


def reduction_cases() -> list[dict]:
    """The generic reduction (``reduce``, oclsci.runtime.reduction.map_reduction): sums,
    minima and counts, one item, less than a group, a tail; group sizes; both walks."""
    cases = []
    for dtype in ("float32", "float64"):
        for what in ("sum", "min", "count"):
            for size, group_size in ((1, 1), (5, 8), (300, 64), (300, 1)):
                for chunked in (False, True):
                    cases.append({"id": make_id("reduce", what, dtype, f"n{size}",
                                                f"g{group_size}",
                                                "chunked" if chunked else "strided"),
                                  "kind": "reduce", "what": what, "dtype": dtype,
                                  "size": size, "group_size": group_size,
                                  "chunked": chunked, "cost": size + 1})
    return cases


def residual_cases() -> list[dict]:
    """The residual reduction: group sizes, accumulator types, row ranges, idle work-items,
    both walks over the cells (strided for GPUs, by rows for CPUs)."""
    cases = []
    for dtype, acc_dtype in (("float32", "float32"), ("float32", "float64"),
                             ("float64", "float64")):
        for group_size in (1, 8, 64):
            for shape, first_row, rows, groups in (((1, 1), 1, 1, 1), ((5, 3), 1, 5, 3),
                                                   ((17, 40), 3, 7, 2), ((17, 40), 1, 17, 5)):
                for by_rows in (False, True):
                    cases.append({
                        "id": make_id("residual", dtype, f"acc{acc_dtype}", f"g{group_size}",
                                       f"{shape[0]}x{shape[1]}", f"rows{first_row}+{rows}",
                                       f"groups{groups}", "by_rows" if by_rows else "strided"),
                        "kind": "residual", "dtype": dtype, "acc_dtype": acc_dtype,
                        "group_size": group_size, "shape": shape, "first_row": first_row,
                        "rows": rows, "groups": groups, "by_rows": by_rows,
                        "cost": shape[0] * shape[1],
                    })
    # And through the solver, as `run` uses it (owned-row ranges of an MPI rank included).
    for shape in SHAPES:
        cases.append({"id": make_id("residual", "solver", f"{shape[0]}x{shape[1]}"),
                      "kind": "residual_solver", "shape": shape, "dtype": "float32",
                      "cost": shape[0] * shape[1]})
    return cases


def _importable(module: str, attribute: str) -> bool:
    import importlib

    try:
        return hasattr(importlib.import_module(module), attribute)
    except ImportError:
        return False


def mandelbrot_cases() -> list[dict]:
    """The Mandelbrot kernel: vector widths and unrolling, precisions, outputs, bands, tiny
    windows (one pixel; widths that are not multiples of the pixels per work-item)."""
    if not _importable("oclsci.mandelbrot", "MandelbrotRenderer"):
        return []
    cases = []
    windows = [  # width, height, maxiter, (xmin, xmax, ymin, ymax), rows
        (1, 1, 3, (-2.25, 0.75, -1.25, 1.25), None),
        (7, 3, 20, (-2.25, 0.75, -1.25, 1.25), None),
        (37, 5, 12, (-0.75, -0.74, 0.1, 0.11), (1, 3)),
        (17, 4, 1, (-2.0, 2.0, -2.0, 2.0), None),
    ]
    # (vector_width, unroll): one pixel per work-item (GPUs), then CPU vectors.
    shapes = [(1, None), (2, 1), (4, None), (4, 3), (8, 8), (16, 2)]
    for vector_width, unroll in shapes:
        for dtype in ("float32", "float64"):
            for index, (width, height, maxiter, bounds, rows) in enumerate(windows):
                if dtype == "float64" and index % 2:
                    continue
                want_z, want_smooth = index % 2 == 0, index != 3
                cases.append({
                    "id": make_id("mandelbrot", f"vw{vector_width}",
                                   f"u{unroll}" if unroll else "", dtype, f"{width}x{height}",
                                   f"it{maxiter}", "rows" if rows else "",
                                   "z" if want_z else "", "smooth" if want_smooth else ""),
                    "kind": "mandelbrot", "vector_width": vector_width, "unroll": unroll,
                    "dtype": dtype, "width": width, "height": height, "maxiter": maxiter,
                    "bounds": bounds, "rows": rows, "want_z": want_z,
                    "want_smooth": want_smooth, "cost": width * height * maxiter // 4 + 1,
                })
    return cases


def shading_cases() -> list[dict]:
    """The device colouring (mandelbrot_shade): both precisions, both origins, thin strips and
    one pixel, a constant image, sizes that leave work-items idle."""
    cases = []
    for dtype in ("float32", "float64"):
        for shape, kind in (((13, 21), "noise"), ((1, 9), "noise"), ((7, 1), "noise"),
                            ((1, 1), "noise"), ((5, 6), "constant"), ((40, 33), "noise")):
            for origin in ("lower", "upper"):
                cases.append({"id": make_id("shade", dtype, f"{shape[0]}x{shape[1]}", kind,
                                            origin),
                              "kind": "shade", "dtype": dtype, "shape": shape,
                              "values": kind, "origin": origin,
                              "cost": 4 * shape[0] * shape[1] + 1})
    return cases


def lombscargle_cases() -> list[dict]:
    """The Lomb-Scargle kernel: every variant (oclsci.lombscargle.VARIANTS) in both precisions,
    fast math in float32, one sample at one frequency and frequency counts that are not
    multiples of the vector width. sin() and cos() in place of sincos(), whose private pointer
    Oclgrind's uninitialised-value checker cannot follow (a fatal error in Oclgrind)."""
    if not _importable("oclsci.lombscargle", "Periodogram"):
        return []
    from oclsci.lombscargle import VARIANTS

    cases = []
    for variant in VARIANTS:
        for dtype in ("float32", "float64"):
            for fast_math in (False, True):
                if fast_math and (dtype == "float64" or variant not in ("stride", "vector")):
                    continue
                for n, f in ((1, 1), (6, 13)):
                    cases.append({"id": make_id("lombscargle", variant, dtype,
                                                 "fast" if fast_math else "", f"n{n}", f"f{f}"),
                                  "kind": "lombscargle", "variant": variant, "dtype": dtype,
                                  "fast_math": fast_math, "n": n, "f": f, "cost": n * f + 1})
    return cases


def poisson_cases() -> list[dict]:
    """The multigrid kernels through the solver: V and F cycles, both smoothers, CG (which
    adds the apply, dot and axpby kernels), both precisions, on grids of one cell, one row, one
    level below the coarsest and several levels."""
    if not _importable("oclsci.poisson", "solve"):
        return []
    cases = []
    for dtype in ("float32", "float64"):
        for method, kind, smoother in (("multigrid", "V", "rbgs"), ("multigrid", "F", "rbgs"),
                                       ("multigrid", "V", "jacobi"), ("cg", "V", "rbgs")):
            for shape in ((1, 1), (1, 70), (9, 9), (17, 40)):
                cases.append({"id": make_id("poisson", method, kind, smoother, dtype,
                                            f"{shape[0]}x{shape[1]}"),
                              "kind": "poisson", "method": method, "cycle": kind,
                              "smoother": smoother, "dtype": dtype, "shape": shape,
                              "cost": 40 * shape[0] * shape[1]})
    return cases


# Sizes of elementwise arrays: one element, less than a work-group, full groups and a tail.
ELEMENTWISE_SIZES = (1, 300)


def elementwise_cases() -> list[dict]:
    """Every ready-made elementwise operation (``oclsci.elementwise.ops.OPS``) in every dtype,
    with one and several elements per work-item, and a user kernel with scalars, several
    outputs, in-place and pyopencl arrays."""
    if not _importable("oclsci.elementwise.ops", "OPS"):
        return []
    from oclsci.elementwise.kernels import TYPE_NAMES
    from oclsci.elementwise.ops import OPS

    cases = []
    for name in OPS:
        for dtype in TYPE_NAMES:
            for per_item in (1, 3):
                if per_item > 1 and dtype not in ("int8", "float32", "float64"):
                    continue
                sizes = ELEMENTWISE_SIZES if per_item == 1 else (5, 1000)
                for size in sizes:
                    cases.append({"id": make_id("elementwise", name, dtype, f"p{per_item}",
                                                 f"n{size}"),
                                  "kind": "elementwise", "op": name, "dtype": dtype,
                                  "per_item": per_item, "size": size, "cost": 1})
    for dtype in ("float32", "int16"):
        cases.append({"id": make_id("elementwise", "user-kernel", dtype), "kind":
                      "elementwise_user", "dtype": dtype, "cost": 1})
    return cases


def stencil_cases() -> list[dict]:
    """The user-stencil kernels (step, tiled, stream, streaming): 2-D and 3-D, radius 1, 2
    and 4, star and box, a right-hand side and a coefficient field read at offsets, the
    previous level (u.prev), division, both precisions, one-row and 3 x 3 x 3 grids; the
    blocked kernels with several (partial) tiles and segments and a remainder launch."""
    if not _importable("oclsci.stencil", "Stencil"):
        return []
    box27 = " + ".join(f"u[{i}, {j}, {k}]" for i in (-1, 0, 1) for j in (-1, 0, 1)
                       for k in (-1, 0, 1))
    stencils = [  # name, expression, parameters, fields, shape, boundary
        ("jacobi", "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", {}, ("b",),
         (5, 7), 0.0),
        ("r2-coeff", "u + k * (-u[-2, 0] + 16 * u[-1, 0] - u[0, 2] + u[0, -2] - 60 * u) / 12"
         " + c[1, 1]", {"k": 0.05}, ("c",), (1, 9), 0.5),
        ("wave-box27", f"2 * u - u.prev + 0.01 * ({box27})", {}, (), (3, 3, 3), 0.0),
        ("r4-3d", "u + 0.1 * (u[4, 0, 0] + u[0, -4, 0] + u[0, 0, 3])", {}, (), (2, 5, 9), 1.0),
    ]
    cases = [{"id": make_id("stencil", name, dtype, "x".join(map(str, shape))),
              "kind": "stencil", "expression": expression, "params": params, "fields": fields,
              "shape": shape, "boundary": boundary, "dtype": dtype, "steps": 3,
              "kernel": "step", "kernel_params": None,
              "cost": 8 * len(expression) * math.prod(shape)}
             for name, expression, params, fields, shape, boundary in stencils
             for dtype in ("float32", "float64")]
    # The blocked kernels: several tiles (partial ones too), a remainder launch (5 steps).
    blocked = [  # name, expression, parameters, fields, shape, boundary, kernel, its params
        ("jacobi", stencils[0][1], {}, ("b",), (9, 13), 0.0, "tiled",
         {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2}),
        ("r2-coeff", stencils[1][1], {"k": 0.05}, ("c",), (7, 11), 0.5, "tiled",
         {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 2}),
        ("wave-box27", stencils[2][1], {}, (), (5, 6, 7), 0.0, "tiled",
         {"local_w": 4, "local_h": 4, "local_d": 2, "cells_z": 2, "max_steps": 1}),
        ("jacobi", stencils[0][1], {}, ("b",), (9, 13), 0.0, "stream",
         {"local_w": 8, "max_steps": 2, "seg": 4}),
        ("r2-coeff", stencils[1][1], {"k": 0.05}, ("c",), (7, 11), 0.5, "stream",
         {"local_w": 16, "max_steps": 2, "seg": 3}),
        ("wave-box27", stencils[2][1], {}, (), (5, 6, 7), 0.0, "stream",
         {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2, "seg": 2}),
        ("r4-3d", stencils[3][1], {}, (), (4, 5, 9), 1.0, "stream",
         {"local_w": 16, "local_h": 2, "cells_y": 5, "max_steps": 1, "seg": 3}),
        ("jacobi", stencils[0][1], {}, ("b",), (9, 13), 0.0, "streaming",
         {"cols": 2, "local_w": 8, "max_steps": 3, "seg_h": 4, "rhs_in_regs": 1}),
        ("heat", "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)", {"k": 0.2}, (),
         (7, 11), 0.5, "streaming", {"cols": 4, "local_w": 4, "max_steps": 2, "seg_h": 3,
                                     "skew": 2, "rows": 2, "prefetch": 2}),
    ]
    cases += [{"id": make_id("stencil", kernel, name, dtype, "x".join(map(str, shape))),
               "kind": "stencil", "expression": expression, "params": params,
               "fields": fields, "shape": shape, "boundary": boundary, "dtype": dtype,
               "steps": 5, "kernel": kernel, "kernel_params": kernel_params,
               "cost": 40 * len(expression) * math.prod(shape)}
              for name, expression, params, fields, shape, boundary, kernel, kernel_params
              in blocked for dtype in ("float32", "float64")]
    return cases


# Deliberately broken kernels: each must make Oclgrind report (what the report says), which
# proves that the checks are on and that reports reach the tests.
CANARIES = {
    "out-of-bounds-read": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ size_t i = get_global_id(0); out[i] = in[i + 1]; }",
        "Invalid read"),
    "local-race-missing-barrier": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ __local float t[16]; size_t l = get_local_id(0); t[l] = in[get_global_id(0)];"
        "  out[get_global_id(0)] = t[(l + 1) % 16]; }",
        "data race"),
    "uninitialised-local-read": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ __local float t[16]; size_t l = get_local_id(0); if (l < 8) t[l] = in[l];"
        "  barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = t[l]; }",
        "Uninitialized value"),
}


def canary_cases() -> list[dict]:
    """Broken kernels that Oclgrind must report (see :data:`CANARIES`), and a Jacobi seed
    kernel that skips a cell, run by the solver like the real cases."""
    cases = [{"id": f"canary-{name}", "kind": "canary", "source": source, "expect": expect,
              "cost": 16} for name, (source, expect) in CANARIES.items()]
    cases.append({"id": "canary-jacobi-unwritten-cell", "kind": "jacobi", "kernel": "seed",
                  "params": {}, "local_size": None, "shape": (5, 3), "steps": 2,
                  "dtype": "float32", "break_cell": True, "expect": "Uninitialized value",
                  "cost": 16})
    return cases


def all_cases() -> list[dict]:
    """Every case: each kernel oclsci ships (see the generators above)."""
    return (jacobi_cases() + residual_cases() + compare_cases() + reduction_cases()
            + mandelbrot_cases() + shading_cases() + elementwise_cases() + lombscargle_cases()
            + poisson_cases() + stencil_cases())
