"""The argument checks of oclsci.arrays, without a device: NaN, infinities and values
beyond the dtype found wherever they sit, in every float type; integers always pass."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pytest

from oclsci.arrays import check_finite, check_fits, validate_grid
from oclsci.errors import InvalidArgumentError, NonFiniteResultError


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(0, 0), (3, 6), (-1, -1)])
def test_non_finite_values_are_found_anywhere(dtype, bad, where):
    grid = np.ones((4, 7), dtype=dtype)
    grid[where] = bad
    with pytest.raises(InvalidArgumentError, match="holds 1 NaN or infinite"):
        validate_grid(grid, "the grid")
    with pytest.raises(NonFiniteResultError, match="holds 1 NaN or infinite"):
        check_finite(grid)


def test_finite_and_integer_grids_pass():
    extremes = np.iinfo(np.int64)
    for grid in (np.zeros((3, 3)), np.array([[extremes.min, extremes.max], [0, 1]]),
                 np.full((2, 2), np.finfo(np.float32).max, dtype=np.float32)):
        assert validate_grid(grid, "the grid") is not None
        check_fits(grid, np.float32, "the grid")
    check_finite(np.zeros((0, 3)))


@pytest.mark.parametrize("value", [1e300, -1e300, 3.5e38])
def test_values_beyond_float32_are_refused_at_either_end(value):
    grid = np.zeros((3, 5))
    grid[1, 2] = value
    with pytest.raises(InvalidArgumentError, match="beyond float32"):
        check_fits(grid, np.float32, "the grid")
    check_fits(grid, np.float64, "the grid")


@pytest.mark.parametrize("source", [np.float16, np.float32, np.float64, np.longdouble])
@pytest.mark.parametrize("target", [np.float32, np.float64])
def test_fitting_values_pass_without_a_warning(source, target):
    """A narrower float type widened (float32 data solved in float64, say) passes silently:
    comparing float32's largest value with float64's once overflowed in NumPy 2's casts."""
    grid = np.full((3, 5), 2.5, dtype=source)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_fits(grid, target, "the grid")


def test_rhs_checked_skips_only_the_pass_over_the_values(any_compute):
    from oclsci.jacobi import JacobiSolver

    bad = np.ones((4, 5), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(InvalidArgumentError, match="NaN"):
        JacobiSolver(any_compute, bad)
    JacobiSolver(any_compute, bad, rhs_checked=True)  # the caller vouches for the values
    with pytest.raises(InvalidArgumentError, match="2-D"):
        JacobiSolver(any_compute, np.ones(5), rhs_checked=True)
    with pytest.raises(InvalidArgumentError, match="NaN"):
        validate_grid(bad, "B")
    assert validate_grid(bad, "B", check_finite=False) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(0, 0), (0, 6), (2, 3), (4, 0), (4, 6)])
@pytest.mark.parametrize("scale", [0.0, 1.0, "huge"])
def test_a_non_finite_iterate_makes_the_residual_non_finite(any_compute, dtype, bad, where,
                                                            scale):
    """The driver skips its pass over the result when the final residual is finite: that
    needs a NaN or infinity in any cell, edge or corner, to make the residual not finite,
    whatever the scale ||B|| (zero, or beyond the accumulator in float64)."""
    from oclsci.jacobi import JacobiSolver
    from oclsci.jacobi.runner import relative_residual

    if dtype == np.float64 and not any_compute.supports_fp64:
        pytest.skip("the device has no float64")
    value = np.finfo(dtype).max / 2 if scale == "huge" else scale
    rhs = np.full((5, 7), value, dtype)
    solver = JacobiSolver(any_compute, rhs, dtype=dtype)
    assert np.isfinite(relative_residual(solver)) or scale == "huge"
    row = solver.read_rows(where[0] + 1, 1)
    row[0, where[1] + 1] = bad
    solver.write_rows(where[0] + 1, row)
    assert not np.isfinite(relative_residual(solver))


@pytest.mark.parametrize("x0", [False, True])
@pytest.mark.parametrize("staging_bytes", [64, 300, 1 << 20])
def test_the_padded_layout_survives_staged_blocks(any_compute, monkeypatch, staging_bytes, x0):
    """B (and x0) go up padded through page-locked blocks of a few rows, a remainder or the
    whole grid: the ring and the row padding hold zeros, the interior the values, complete
    for another queue (the overlapped MPI exchange reads them on its copy queue at once); a
    read gives the interior back."""
    from oclsci.jacobi import JacobiSolver
    from oclsci.runtime import memory

    monkeypatch.setattr(memory, "STAGING_BYTES", staging_bytes)
    rng = np.random.default_rng(staging_bytes)
    rhs = rng.standard_normal((9, 13))
    start = np.asfortranarray(rng.integers(-5, 5, (9, 13))) if x0 else None
    solver = JacobiSolver(any_compute, rhs, x0=start)
    padded = np.zeros((11, solver.row_stride), np.float32)
    padded[1:-1, 1:14] = rhs
    want_x = padded.copy()
    if x0:
        want_x[1:-1, 1:14] = start
    for buffer, want in ((solver.rhs_buffer, padded), (solver.x_buffers[0], want_x),
                         (solver.x_buffers[1], want_x)):
        got = np.full_like(padded, np.nan)
        cl.enqueue_copy(any_compute.copy_queue, got, buffer)
        assert np.array_equal(got, want)
    assert np.array_equal(solver.read(), want_x[1:-1, 1:14])


def test_pyopencl_arrays_are_read_to_the_host(any_compute):
    """oclsci.jacobi.jacobi takes a pyopencl array as the right-hand side and x0 (read to the
    host), with the same result as from NumPy; not "got dtype object"."""
    import pyopencl.array as cla

    from oclsci.jacobi import jacobi
    from oclsci.jacobi.reference import jacobi_numpy

    rhs = np.random.default_rng(5).integers(-9, 9, (6, 7)).astype(np.float32)
    on_device = cla.to_device(any_compute.queue, rhs)
    assert validate_grid(on_device, "B").dtype == np.float32
    got = jacobi(on_device, 5, x0=cla.zeros(any_compute.queue, rhs.shape, np.float32),
                 device=any_compute, kernel="seed")
    assert np.array_equal(got, jacobi_numpy(rhs, 5, x0=np.zeros_like(rhs)))
