"""The NumPy reference every stencil kernel matches bit for bit.

It walks the expression's tree in the order the kernel evaluates it (left operand before
right, as Python and the generated C both do), with whole-grid arrays of the field's dtype and
scalars already rounded to it (:mod:`oclsci.stencil.problem`): each operation is one IEEE
operation in that dtype, as on the device. Cells beyond the grid hold the boundary value
(``u``) or zero (read-only fields), as ``oclsci jacobi`` pads its grid with zeros; with a
periodic boundary they hold the grid's cells from the other side (``np.pad``'s wrap).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.stencil.language import PREVIOUS, UPDATED, Literal, Load, Negate, Node, Param
from oclsci.stencil.problem import Problem, round_scalar

OPERATIONS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def pad(array: np.ndarray, radius: int, value: Any) -> np.ndarray:
    """``array`` inside a ring of ``radius`` cells holding ``value`` (same dtype)."""
    padded = np.full(tuple(s + 2 * radius for s in array.shape), value, dtype=array.dtype)
    padded[tuple(slice(radius, radius + s) for s in array.shape)] = array
    return padded


def literal_value(literal: Literal, dtype: np.dtype) -> Any:
    """A number of the expression, rounded to ``dtype`` as the kernel has it."""
    return round_scalar(literal.value, dtype, f"the number {literal.text}")


class _Evaluator:
    """Evaluates the tree on padded arrays for the grid's interior."""

    def __init__(self, problem: Problem, radius: int, padded: dict[str, np.ndarray]):
        self.problem = problem
        self.radius = radius
        self.padded = padded  # source name -> padded array (u, fields); u.prev unpadded
        self.shape = problem.shape

    def window(self, source: str, offset: tuple[int, ...] | None) -> np.ndarray:
        if source == PREVIOUS:
            return self.padded[PREVIOUS]
        offset = offset or (0,) * len(self.shape)
        r = self.radius
        return self.padded[source][tuple(slice(r + d, r + d + s)
                                         for d, s in zip(offset, self.shape, strict=True))]

    def value(self, node: Node) -> Any:
        if isinstance(node, Load):
            return self.window(node.source, node.offset)
        if isinstance(node, Param):
            return self.problem.params[node.name]
        if isinstance(node, Literal):
            return literal_value(node, self.problem.dtype)
        if isinstance(node, Negate):
            return np.negative(self.value(node.operand))
        left = self.value(node.left)
        return OPERATIONS[node.op](left, self.value(node.right))


def step(problem: Problem, u: np.ndarray, prev: np.ndarray | None,
         fields: dict[str, np.ndarray]) -> np.ndarray:
    """One update of ``u`` (padded by the expression's radius; ``prev`` unpadded, ``fields``
    padded): the new interior, a fresh array of the grid's shape."""
    padded = dict(fields, **{UPDATED: u})
    if prev is not None:
        padded[PREVIOUS] = prev
    evaluator = _Evaluator(problem, problem.expression.radius, padded)
    with np.errstate(all="ignore"):  # overflow shows in the result (check_finite)
        result = evaluator.value(problem.expression.root)
    out = np.empty(problem.shape, dtype=problem.dtype)
    out[...] = result
    assert np.asarray(result).dtype == problem.dtype, np.asarray(result).dtype
    return out


def stencil_numpy(problem: Problem) -> np.ndarray:
    """Run ``problem.steps`` updates in NumPy; return the final field (the grid's shape)."""
    radius = problem.expression.radius

    def surround(array: np.ndarray, value: Any) -> np.ndarray:
        if problem.periodic:
            return np.pad(array, radius, mode="wrap")
        return pad(array, radius, value)
    fields = {name: surround(array, problem.dtype.type(0))
              for name, array in problem.fields.items()}
    u = surround(problem.u0, problem.boundary)
    inner = tuple(slice(radius, radius + s) for s in problem.shape)
    prev = problem.prev0
    for _ in range(problem.steps):
        new = step(problem, u, prev, fields)
        if prev is not None:
            prev = u[inner].copy()
        if problem.periodic:
            u = surround(new, problem.boundary)
        else:
            u[inner] = new
    return u[inner].copy()
