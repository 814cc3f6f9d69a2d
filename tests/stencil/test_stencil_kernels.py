"""Every stencil of the issue's list, run on each test device, equals the NumPy reference bit
for bit: float32 and float64, odd sizes, step counts that end on each rotation of the levels.
The seed's Jacobi written as a stencil also equals ``oclsci.jacobi.reference`` bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from oclsci.jacobi.reference import jacobi_numpy
from oclsci.stencil import Stencil

DTYPES = [np.float32, np.float64]
STEPS = 7  # odd, and not a multiple of 3: ends on another level than it started

BOX_9 = " + ".join(f"u[{i}, {j}]" for i, j in itertools.product((-1, 0, 1), repeat=2)
                   if (i, j) != (0, 0))
BOX_27 = " + ".join(f"u[{i}, {j}, {k}]" for i, j, k in itertools.product((-1, 0, 1), repeat=3)
                    if (i, j, k) != (0, 0, 0))
STAR_13 = ("(-u[-2, 0] + 16 * u[-1, 0] + 16 * u[1, 0] - u[2, 0] - u[0, -2] + 16 * u[0, -1]"
           " + 16 * u[0, 1] - u[0, 2] - 60 * u) / 12")
LAPLACE_7 = "u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]"

# name -> (stencil, fields made for u0's shape, shapes)
CASES = {
    "jacobi-5-point-rhs": (
        Stencil("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", fields=["b"]),
        ("b",), [(1, 33), (3, 3), (29, 47)]),
    "box-9-point-coefficient": (
        Stencil(f"u + c * ({BOX_9} - 8 * u)", fields=["c"]), ("c",), [(1, 17), (23, 19)]),
    "star-13-point-radius-2": (
        Stencil(f"u + k * {STAR_13}", params={"k": 0.05}), (), [(2, 9), (31, 18)]),
    "heat-3d-7-point": (
        Stencil(f"u + k * ({LAPLACE_7} - 6 * u)", params={"k": 0.1}), (),
        [(3, 3, 3), (1, 4, 9), (11, 6, 13)]),
    "box-3d-27-point": (
        Stencil(f"u + 0.01 * ({BOX_27} - 26 * u)"), (), [(3, 3, 3), (7, 5, 9)]),
    "wave-3d-prev": (
        Stencil(f"2 * u - u.prev + c2 * ({LAPLACE_7} - 6 * u)", params={"c2": 0.1}), (),
        [(3, 3, 3), (5, 8, 7)]),
    "wave-2d-prev-boundary": (
        Stencil("2 * u - u.prev + c2 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)",
                params={"c2": 0.2}, boundary=0.75), (), [(1, 20), (13, 21)]),
}


def _inputs(shape, names, dtype, seed=7):
    rng = np.random.default_rng(seed)
    u0 = rng.uniform(-1, 1, shape).astype(dtype)
    fields = {name: rng.uniform(0, 0.1, shape).astype(dtype) for name in names}
    return u0, fields


def _check(compute, stencil, u0, fields, steps, **options):
    got = stencil.run(u0, steps, fields=fields, device=compute, **options)
    want = stencil.reference(u0, steps, fields=fields, **options)
    assert got.dtype == want.dtype == u0.dtype
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise AssertionError(f"{stencil!r} {u0.dtype} {u0.shape}: {len(bad)} cells differ, "
                             f"first {bad[0].tolist()}")
    return got


def _skip_without_fp64(compute, dtype):
    if dtype == np.float64 and not compute.supports_fp64:
        pytest.skip("no fp64 on this device")


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_stencil_equals_numpy(compute, case, dtype):
    _skip_without_fp64(compute, dtype)
    stencil, names, shapes = CASES[case]
    for shape in shapes:
        u0, fields = _inputs(shape, names, dtype)
        _check(compute, stencil, u0, fields, STEPS)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_jacobi_as_a_stencil_equals_the_jacobi_reference(compute, dtype):
    _skip_without_fp64(compute, dtype)
    stencil = CASES["jacobi-5-point-rhs"][0]
    rhs = (np.random.default_rng(3).standard_normal((37, 53)) * 100).astype(dtype)
    got = _check(compute, stencil, rhs, {"b": rhs}, 13)
    assert np.array_equal(got, jacobi_numpy(rhs, 13, dtype=dtype))


def test_large_odd_3d_grid(compute):
    stencil = CASES["heat-3d-7-point"][0]
    u0, _ = _inputs((257, 129, 65), (), np.float32)
    _check(compute, stencil, u0, {}, 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_literals_params_and_division_round_as_numpy(compute, dtype):
    """Numbers that float32 cannot hold exactly, a parameter overridden at run time,
    divisions (correctly rounded in float32 too), unary minus and a constant-only
    subexpression."""
    _skip_without_fp64(compute, dtype)
    stencil = Stencil("-(u / 3 + 0.1 * u[0, 1]) / (1.7 + k * 0.3) + 1e-3 / b - -u * b[1, -1]",
                      params={"k": 0.7})
    u0, fields = _inputs((9, 14), ("b",), dtype)
    fields["b"] += dtype(0.5)  # no division by zero
    u0 = u0 * dtype(0.5)
    for params in ({}, {"k": 1 / 3}):
        _check(compute, stencil, u0, {"b": fields["b"]}, 3, params=params)


def test_radius_0_and_constant_updates(compute):
    u0, _ = _inputs((4, 5), (), np.float32)
    _check(compute, Stencil("0.5 * u + 1"), u0, {}, 3)
    _check(compute, Stencil("2.5"), u0, {}, 1)
    prev = np.ones_like(u0)
    _check(compute, Stencil("u - u.prev"), u0, {}, 5, prev=prev)
