"""One stencil run's inputs, checked and rounded once (:func:`prepare`), so that the NumPy
reference and the device see the same numbers: the arrays in the field's dtype, and every
parameter, literal and the boundary value rounded to it (``dtype.type(value)``: one rounding
from the Python float).

Bad inputs raise :class:`~oclsci.errors.InvalidArgumentError` (a ValueError) or
:class:`~oclsci.errors.ArgumentTypeError` (a TypeError) in one line, before any work.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from oclsci.arrays import check_dtype, check_fits, check_steps, extremes_finite, native_float_dtype
from oclsci.errors import ArgumentTypeError, InvalidArgumentError
from oclsci.stencil.language import Expression


def round_scalar(value: Any, dtype: np.dtype, what: str) -> Any:
    """``value`` rounded to ``dtype`` (a NumPy scalar), refusing non-numbers and values
    beyond the dtype's range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{what} must be a real number, got {type(value).__name__} "
                                f"{value!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        shown = repr(value) if len(repr(value)) <= 24 else f"{repr(value)[:12]}... "\
            f"({len(str(abs(value)))} digits)"
        raise InvalidArgumentError(f"{what} is {shown}, beyond {dtype.name}'s range") from None
    if math.isnan(number):
        raise InvalidArgumentError(f"{what} is NaN, not a number")
    with np.errstate(over="ignore"):
        rounded = dtype.type(number)
    if not (math.isfinite(number) and np.isfinite(rounded)):
        raise InvalidArgumentError(f"{what} is {value!r}, beyond {dtype.name}'s range")
    return rounded


PERIODIC = "periodic"  # the boundary where the grid wraps around on every axis


def check_boundary(value: Any) -> Any:
    """``value`` when it is a boundary a run takes: :data:`PERIODIC` or a real number
    (refused in one line otherwise)."""
    if isinstance(value, str):
        if value.strip().lower() != PERIODIC:
            raise InvalidArgumentError(f"the boundary must be a number or {PERIODIC!r}, got "
                                       f"{value!r}")
        return PERIODIC
    if value is None or isinstance(value, (bool, np.bool_)) or \
            not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"the boundary must be a number or {PERIODIC!r}, got "
                                f"{type(value).__name__} {value!r}")
    round_scalar(value, np.dtype(np.float64), "the boundary value")
    return value


def check_grid(values: Any, what: str, dims: int | None) -> np.ndarray:
    """``values`` as a non-empty 2-D or 3-D array of finite numbers (``dims`` of them when
    given)."""
    array = np.asarray(values)
    if array.ndim not in (2, 3) or (dims is not None and array.ndim != dims):
        wanted = f"{dims}-D" if dims else "2-D or 3-D"
        raise InvalidArgumentError(f"{what} must be a {wanted} array, got {array.ndim} "
                                   "dimensions")
    if array.size == 0:
        raise InvalidArgumentError(f"{what} is empty (shape {array.shape})")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ArgumentTypeError(f"{what} must hold numbers, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.floating) and not extremes_finite(array):
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise InvalidArgumentError(f"{what} holds {bad} NaN or infinite value(s)")
    return array


def default_dtype(u0: Any) -> np.dtype:
    """The dtype a run takes when none is given: u0's if float32 or float64 (in either byte
    order), else float32."""
    dtype = getattr(u0, "dtype", None)
    native = native_float_dtype(dtype) if dtype is not None else None
    return native if native is not None else np.dtype(np.float32)


@dataclass(frozen=True)
class Problem:
    """A run's inputs in the field's dtype (arrays of the grid's shape, rounded scalars)."""

    expression: Expression
    dtype: np.dtype
    u0: np.ndarray
    prev0: np.ndarray | None  # the previous level at the start (u.prev only)
    fields: dict[str, np.ndarray]  # in the expression's order
    params: dict[str, Any]  # rounded, in the expression's order
    boundary: Any  # the value beyond the grid, rounded (0 when periodic)
    steps: int
    periodic: bool = False  # the grid wraps around on every axis (no value beyond it)

    @property
    def shape(self) -> tuple[int, ...]:
        """The grid's shape."""
        return self.u0.shape


def _as_dtype(array: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    check_fits(array, dtype, what)
    return np.ascontiguousarray(array, dtype=dtype)


def prepare(expression: Expression, u0: Any, steps: Any, *, fields: Mapping | None = None,
            params: Mapping | None = None, prev: Any = None, dtype: Any = None,
            boundary: Any = 0.0) -> Problem:
    """Check and round a run's inputs (see the module's docstring). ``prev`` is the previous
    level at the start (default: u0 itself, a field at rest); ``params`` gives every
    parameter the expression uses; ``boundary`` is the value of u beyond the grid, or
    :data:`PERIODIC`."""
    periodic = check_boundary(boundary) == PERIODIC
    steps = check_steps(steps)
    dtype = check_dtype(default_dtype(u0) if dtype is None else dtype)
    u0 = check_grid(u0, "u0", expression.dims)
    fields = dict(fields or {})
    given, needed = set(fields), set(expression.fields)
    if needed - given:
        raise InvalidArgumentError(f"field {sorted(needed - given)[0]!r} is read by the "
                                   "stencil but not given")
    if given - needed:
        raise InvalidArgumentError(f"field {sorted(given - needed)[0]!r} is given but the "
                                   "stencil never reads it")
    arrays = {}
    for name in expression.fields:
        array = check_grid(fields[name], f"field {name!r}", u0.ndim)
        if array.shape != u0.shape:
            raise InvalidArgumentError(f"field {name!r} has shape {array.shape}, u0 "
                                       f"{u0.shape}: they must be equal")
        arrays[name] = _as_dtype(array, dtype, f"field {name!r}")
    params = dict(params or {})
    missing = [name for name in expression.params if name not in params]
    if missing:
        raise InvalidArgumentError(f"parameter {missing[0]!r} has no value")
    unused = sorted(set(params) - set(expression.params))
    if unused:
        raise InvalidArgumentError(f"parameter {unused[0]!r} is given but the stencil never "
                                   "reads it")
    rounded = {name: round_scalar(params[name], dtype, f"parameter {name!r}")
               for name in expression.params}
    prev0 = None
    if expression.uses_prev:
        prev0 = u0 if prev is None else check_grid(prev, "prev", u0.ndim)
        if prev0.shape != u0.shape:
            raise InvalidArgumentError(f"prev has shape {prev0.shape}, u0 {u0.shape}: they "
                                       "must be equal")
        prev0 = _as_dtype(prev0, dtype, "prev")
    elif prev is not None:
        raise InvalidArgumentError("prev is given but the stencil never reads u.prev")
    return Problem(expression=expression, dtype=dtype, u0=_as_dtype(u0, dtype, "u0"),
                   prev0=prev0, fields=arrays, params=rounded,
                   boundary=round_scalar(0 if periodic else boundary, dtype,
                                         "the boundary value"), steps=steps, periodic=periodic)
