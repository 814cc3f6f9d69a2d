"""Checks of the arrays and dtypes every workload takes, shared by the Python API and the
commands.

Each refuses a bad argument before any work with a one-line typed error:
:class:`~oclsci.errors.InvalidArgumentError` (a ValueError) for a value that cannot be used,
:class:`~oclsci.errors.ArgumentTypeError` (a TypeError) for an argument of the wrong type;
:func:`check_finite` refuses a result that overflowed (:class:`NonFiniteResultError`).
"""

from __future__ import annotations

import numbers
import sys
from typing import Any

import numpy as np

from oclsci.errors import ArgumentTypeError, InvalidArgumentError, NonFiniteResultError

DTYPES = (np.float32, np.float64)
# Most steps a run may ask for: far beyond any real run, small enough that step counts stay
# exact in float64 (timings, JSON) and in a checkpoint's int64.
MAX_STEPS = 2**53


def native_float_dtype(dtype: Any) -> np.dtype | None:
    """``dtype`` as this machine's float32 or float64 when it is either, in any byte order
    (a big-endian ``.npy`` file's ``>f8`` is float64); None for any other type."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return dtype.newbyteorder("=")
    return None


def same_bits(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` hold the same values bit for bit: same shape and type, and
    floating-point values equal as bits (-0.0 is not 0.0, which changes later results' signs;
    a NaN equals the same NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    bits = np.dtype(f"u{a.dtype.itemsize // (2 if a.dtype.kind == 'c' else 1)}")
    return bool(np.array_equal(np.ascontiguousarray(a).view(bits),
                               np.ascontiguousarray(b).view(bits)))


def validate_grid(values: Any, what: str, check_finite: bool = True) -> np.ndarray:
    """``values`` as a 2-D array of finite numbers, or a typed error naming ``what``.
    ``check_finite=False`` leaves out the pass over the values (for a caller that made it).
    A ``pyopencl.array.Array`` is read to the host."""
    cl_array = sys.modules.get("pyopencl.array")  # not imported: values cannot be one
    if cl_array is not None and isinstance(values, cl_array.Array):
        values = values.get()
    array = np.asarray(values)
    if array.ndim != 2:
        raise InvalidArgumentError(f"{what} must be a 2-D array, got {array.ndim} dimensions")
    if array.size == 0:
        raise InvalidArgumentError(f"{what} is empty (shape {array.shape})")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ArgumentTypeError(f"{what} must hold numbers, got dtype {array.dtype}")
    if check_finite and np.issubdtype(array.dtype, np.floating) and not extremes_finite(array):
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise InvalidArgumentError(f"{what} holds {bad} NaN or infinite value(s)")
    return array


def check_shape(shape: Any, what: str = "shape") -> tuple[int, int]:
    """``shape`` as a pair of positive ints (rows, columns), or a typed error naming
    ``what``: non-integer entries (4.5, True) are refused, never rounded."""
    try:
        entries = tuple(shape)
    except TypeError:
        raise ArgumentTypeError(f"{what} must be a pair of integers (rows, columns), got "
                                f"{type(shape).__name__} {shape!r}") from None
    if len(entries) != 2:
        raise InvalidArgumentError(f"{what} must be a pair of integers (rows, columns), got "
                                   f"{len(entries)} entries {shape!r}")
    for entry in entries:
        if isinstance(entry, (bool, np.bool_)) or not isinstance(entry, numbers.Integral):
            raise ArgumentTypeError(f"{what} must hold integers, got {type(entry).__name__} "
                                    f"{entry!r} in {shape!r}")
        if entry < 1:
            raise InvalidArgumentError(f"{what} must be at least 1 x 1, got {shape!r}")
    return int(entries[0]), int(entries[1])


def check_steps(steps: Any, name: str = "steps") -> int:
    """An integer step count in 0..MAX_STEPS, or a typed error naming ``name``."""
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an integer, got {type(steps).__name__} "
                                f"{steps!r}")
    if not 0 <= steps <= MAX_STEPS:
        raise InvalidArgumentError(f"{name} must be between 0 and 2**53, got {steps}")
    return int(steps)


def extremes_finite(array: np.ndarray) -> bool:
    """True when a non-empty float array holds no NaN or infinity (they show in its extremes:
    two passes that allocate nothing, where ``isfinite`` makes a mask of the whole array)."""
    return bool(np.isfinite(array.min()) and np.isfinite(array.max()))


def check_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as float32 or float64, or a typed error saying what is allowed."""
    try:
        checked = np.dtype(dtype)
    except TypeError:
        raise ArgumentTypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if checked not in DTYPES:
        raise InvalidArgumentError(f"dtype must be float32 or float64, got {checked}")
    return checked


def check_fits(array: np.ndarray, dtype: Any, what: str) -> None:
    """Refuse values too large for ``dtype`` (they would become infinite on the device)."""
    dtype = np.dtype(dtype)
    limit = float(np.finfo(dtype).max)
    if array.size == 0 or np.issubdtype(array.dtype, np.integer) or (
            np.issubdtype(array.dtype, np.floating) and float(np.finfo(array.dtype).max) <= limit):
        return  # every finite value fits (the largest int64 is about 9.2e18)
    largest = max(abs(float(array.min())), abs(float(array.max())))
    if largest > limit:
        hint = "scale the input" if dtype == np.float64 else "use float64 or scale the input"
        raise InvalidArgumentError(f"{what} holds values up to {largest:.4g}, beyond "
                                   f"{dtype.name}'s largest {limit:.4g}: {hint}")


def check_finite(x: np.ndarray, what: str = "the result", divides: bool = False) -> np.ndarray:
    """Return ``x``, or raise :class:`NonFiniteResultError` if it holds NaN or infinities;
    ``divides``: the computation may divide (by zero, then), not only overflow."""
    if x.size and not extremes_finite(x):
        bad = int(np.count_nonzero(~np.isfinite(x)))
        hint = "scale the input down" if x.dtype == np.float64 else \
            "use float64 or scale the input down"
        cause = (f"overflowed {x.dtype.name} ({hint}) or divided by zero" if divides
                 else f"overflowed {x.dtype.name}; {hint}")
        raise NonFiniteResultError(f"{what} holds {bad} NaN or infinite value(s): the "
                                   f"computation {cause}")
    return x
