"""Elementwise corner cases (see :mod:`oclsci.corners`): every ready-made operation
(:data:`oclsci.elementwise.ops.OPS`) in every dtype with one and several elements per
work-item, and a user kernel with scalars, several outputs, in-place and device arrays; each
equal to its NumPy reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.corners import case_id, case_rng

# Sizes of arrays: one element, less than a work-group, full groups and a tail.
SIZES = (1, 300)
# With several elements per work-item: a partial item, several groups and a tail.
SIZES_PER_ITEM = (5, 1000)


def corner_cases() -> list[dict]:
    """Each operation in each dtype over :data:`SIZES`; 3 elements per work-item in int8,
    float32 and float64 over :data:`SIZES_PER_ITEM`; the user kernel in float32 and int16."""
    from oclsci.elementwise.kernels import TYPE_NAMES
    from oclsci.elementwise.ops import OPS

    cases = []
    for name in OPS:
        for dtype in TYPE_NAMES:
            for per_item in (1, 3):
                if per_item > 1 and dtype not in ("int8", "float32", "float64"):
                    continue
                for size in SIZES if per_item == 1 else SIZES_PER_ITEM:
                    cases.append({"id": case_id("elementwise", name, dtype, f"p{per_item}",
                                                f"n{size}"),
                                  "kind": "elementwise", "op": name, "dtype": dtype,
                                  "per_item": per_item, "size": size, "cost": 1})
    for dtype in ("float32", "int16"):
        cases.append({"id": case_id("elementwise", "user-kernel", dtype),
                      "kind": "elementwise_user", "dtype": dtype, "cost": 1})
    return cases


def _run_operation(compute: Any, case: dict) -> None:
    from oclsci.elementwise.measure import operation_call
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
    args, arrays, expected = operation_call(compute.queue, op, host, scalar)
    kernel(*args, device=compute)
    got = arrays[op.written].get()
    if not np.array_equal(got, expected):
        raise AssertionError(f"{np.count_nonzero(got != expected)} of {size} elements differ")


def _run_user_kernel(compute: Any, case: dict) -> None:
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


def run_corner_case(compute: Any, case: dict) -> None:
    """Run ``case`` on ``compute`` and compare with NumPy: equal element by element."""
    {"elementwise": _run_operation, "elementwise_user": _run_user_kernel}[case["kind"]](
        compute, case)
