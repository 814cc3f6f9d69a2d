"""Checks of the Jacobi run's arguments (step counts, tolerance, periods), shared by the
Python API and the commands; the checks of arrays and dtypes that every workload shares are in
:mod:`oclsci.arrays`.

Each refuses a bad argument before any work with a one-line typed error:
:class:`~oclsci.errors.InvalidArgumentError` (a ValueError) for a value that cannot be used,
:class:`~oclsci.errors.ArgumentTypeError` (a TypeError) for an argument of the wrong type.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from oclsci.errors import ArgumentTypeError, InvalidArgumentError

# Most steps a run may ask for: far beyond any real run, small enough that step counts stay
# exact in float64 (timings, JSON) and in the checkpoint's int64.
MAX_ITERATIONS = 2**53


def check_iterations(iterations: Any, name: str = "iterations") -> int:
    """An integer step count in 0..MAX_ITERATIONS, or a typed error."""
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an integer, got {type(iterations).__name__} "
                                f"{iterations!r}")
    if not 0 <= iterations <= MAX_ITERATIONS:
        raise InvalidArgumentError(f"{name} must be between 0 and 2**53, got {iterations}")
    return int(iterations)


def check_run_options(tol: Any, check_every: Any, checkpoint_every: Any) -> None:
    """Refuse a non-positive or NaN ``tol`` and step periods that are not positive integers."""
    if tol is not None:
        if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
            raise ArgumentTypeError(f"tol must be a number, got {type(tol).__name__} {tol!r}")
        if not (math.isfinite(tol) and tol > 0):
            raise InvalidArgumentError(f"tol must be a positive finite number, got {tol}")
    for name, value, least in (("check_every", check_every, 1),
                               ("checkpoint_every", checkpoint_every, 0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ArgumentTypeError(f"{name} must be an integer, got {type(value).__name__} "
                                    f"{value!r}")
        if value < least:
            raise InvalidArgumentError(f"{name} must be >= {least}, got {value}")


