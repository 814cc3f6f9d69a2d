"""Ready-made elementwise operations (the seeds' examples), each with its NumPy reference.

* :func:`increment` -- ``x += value`` in place (the seeds' "increment x by 3").
* :func:`multiply_them` -- ``dest = a * b`` (the seed's PyCUDA ``multiply_them``).
* :func:`add` -- ``z = x + y``.
* :func:`axpy` -- ``y = a * x + y`` in place.

Every function takes NumPy arrays (copied in and out) or ``pyopencl.array.Array`` objects
(no copies) and a ``device`` (SPEC, ComputeContext or None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from oclsci.elementwise.kernels import ElementwiseKernel

INCREMENT = ElementwiseKernel("T x, T value", "T x", "x = x + value", "increment")
MULTIPLY_THEM = ElementwiseKernel("T a, T b", "T dest", "dest = a * b", "multiply_them")
ADD = ElementwiseKernel("T x, T y", "T z", "z = x + y", "add")
AXPY = ElementwiseKernel("T a, T x, T y", "T y", "y = a * x + y", "axpy")


def increment(x: Any, value: Any = 3, *, device: Any = None) -> Any:
    """``x += value`` in place; returns ``x``."""
    return INCREMENT(x, value, device=device)


def multiply_them(a: Any, b: Any, dest: Any = None, *, device: Any = None) -> Any:
    """``dest = a * b`` elementwise; ``dest`` is allocated when not given. Returns ``dest``."""
    args = (a, b) if dest is None else (a, b, dest)
    return MULTIPLY_THEM(*args, device=device)


def add(x: Any, y: Any, out: Any = None, *, device: Any = None) -> Any:
    """``out = x + y`` elementwise; ``out`` is allocated when not given. Returns ``out``."""
    args = (x, y) if out is None else (x, y, out)
    return ADD(*args, device=device)


def axpy(a: Any, x: Any, y: Any, *, device: Any = None) -> Any:
    """``y = a * x + y`` in place (``a`` a scalar); returns ``y``."""
    return AXPY(a, x, y, device=device)


@dataclass(frozen=True)
class Op:
    """An operation the ``oclsci elementwise`` command can run and check."""

    name: str
    kernel: ElementwiseKernel
    arrays: tuple[str, ...]          # names of the array arguments to make, in call order
    reference: Callable[..., np.ndarray]  # NumPy result from the arrays and the scalar
    bytes_per_element: int           # elements read + written, per index
    written: str                     # the array that holds the result
    scalar_position: int | None      # where the scalar goes among the arguments


def _ref_increment(x, value):
    return x + value


def _ref_multiply(a, b):
    return a * b


def _ref_add(x, y):
    return x + y


def _ref_axpy(a, x, y):
    return a * x + y


OPS = {
    "increment": Op("increment", INCREMENT, ("x",), _ref_increment, 2, "x", 1),
    "multiply": Op("multiply", MULTIPLY_THEM, ("a", "b"), _ref_multiply, 3, "dest", None),
    "add": Op("add", ADD, ("x", "y"), _ref_add, 3, "z", None),
    "axpy": Op("axpy", AXPY, ("x", "y"), _ref_axpy, 3, "y", 0),
}
