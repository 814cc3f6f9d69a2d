"""The argument checks of oclsci.jacobi.checks, without a device: NaN, infinities and values
beyond the dtype found wherever they sit, in every float type; integers always pass."""

from __future__ import annotations

import numpy as np
import pytest

from oclsci.errors import InvalidArgumentError, NonFiniteResultError
from oclsci.jacobi.checks import check_finite, check_fits, validate_grid


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
