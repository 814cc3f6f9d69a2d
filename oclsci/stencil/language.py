"""The stencil language: a restricted Python expression, parsed with :mod:`ast` into a small
tree that the NumPy reference (:mod:`oclsci.stencil.reference`) and the OpenCL code generator
(:mod:`oclsci.stencil.codegen`) both walk in the same order.

What an expression may hold:

- ``u``: the updated field at the cell itself; ``u[di, dj]`` (2-D) or ``u[di, dj, dk]``
  (3-D): the field at an offset of at most :data:`MAX_RADIUS` cells along each axis;
- ``u.prev``: the previous time level at the cell itself (second-order-in-time updates);
- read-only fields (``b``, ``b[di, dj]``): the names in ``fields``, or, when ``fields`` is not
  given, every name that is not a parameter;
- scalar parameters (``k``): the names in ``params``;
- numbers (``4``, ``0.25``, ``1e-3``), ``+ - * /``, unary minus and plus, parentheses.

Anything else is refused with a :class:`StencilSyntaxError` naming what and why, in one line.
"""

from __future__ import annotations

import ast
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from oclsci.errors import InputError

MAX_RADIUS = 4
UPDATED = "u"  # the updated field's name
PREVIOUS = "u.prev"  # the previous time level, as a source of loads
OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
ALLOWED = "only u, u[offsets], u.prev, fields, parameters, numbers, + - * / and parentheses"
# Operations nested in one another at most (a sum of N terms nests N - 1): room for a 3-D box
# of radius 4 (729 points) with a coefficient per point, and for every walk over the tree
# (parser, NumPy reference, code generator: one Python call per level) within Python's
# recursion limit.
MAX_DEPTH = 800


class StencilSyntaxError(InputError):
    """A stencil expression that the language refuses (what was refused and why)."""


@dataclass(frozen=True)
class Load:
    """A value read from ``source`` (``u``, ``u.prev`` or a field) at ``offset`` (None: the
    cell itself, whatever the dimension)."""

    source: str
    offset: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Param:
    """A scalar parameter, rounded to the field's dtype."""

    name: str


@dataclass(frozen=True)
class Literal:
    """A number as written, rounded to the field's dtype."""

    value: float
    text: str


@dataclass(frozen=True)
class Negate:
    """Unary minus."""

    operand: Node


@dataclass(frozen=True)
class Binary:
    """``left op right``, op one of + - * /, evaluated left before right."""

    op: str
    left: Node
    right: Node


Node = Load | Param | Literal | Negate | Binary


@dataclass(frozen=True)
class Expression:
    """A parsed stencil: its tree and what it reads."""

    text: str
    root: Node
    dims: int | None  # 2 or 3; None when no offset says (taken from the input array)
    radius: int  # the largest offset along any axis (0: the cell itself only)
    shape: str  # "star" (offsets along one axis at a time) or "box"
    fields: tuple[str, ...]  # read-only fields read, in order of first use
    params: tuple[str, ...]  # parameters used, in order of first use
    uses_prev: bool

    def offsets(self, source: str = UPDATED) -> list[tuple[int, ...]]:
        """The distinct offsets at which ``source`` is read (center included, as zeros)."""
        dims = self.dims or 2
        found: list[tuple[int, ...]] = []
        for load in loads(self.root):
            if load.source == source:
                offset = load.offset or (0,) * dims
                if offset not in found:
                    found.append(offset)
        return found

    def describe(self) -> str:
        """One line: dimension, points, radius and shape."""
        dims = f"{self.dims}-D" if self.dims else "any dimension"
        return (f"{dims}, {len(self.offsets())}-point {self.shape}, radius {self.radius}"
                + (", previous time level" if self.uses_prev else ""))


def loads(node: Node) -> Iterable[Load]:
    """Every load of the tree, left to right."""
    if isinstance(node, Load):
        yield node
    elif isinstance(node, Negate):
        yield from loads(node.operand)
    elif isinstance(node, Binary):
        yield from loads(node.left)
        yield from loads(node.right)


def _operation_depth(tree: ast.AST) -> int:
    """How deep the tree's operations (binary and unary) nest, walked without recursion."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            depth += 1
            deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest


def _refuse(text: str, node: ast.AST, what: str) -> StencilSyntaxError:
    where = ast.get_source_segment(text, node) or type(node).__name__
    return StencilSyntaxError(f"stencil {text!r}: {where!r} refused: {what}")


class _Parser:
    def __init__(self, text: str, params: Iterable[str], fields: Iterable[str] | None):
        self.text = text
        self.params = set(params)
        self.fields = None if fields is None else set(fields)
        self.dims: int | None = None
        self.used_params: list[str] = []
        self.used_fields: list[str] = []

    def parse(self) -> Node:
        try:
            tree = ast.parse(self.text.strip(), mode="eval")
        except (RecursionError, MemoryError):
            raise self.too_deep() from None
        except SyntaxError as error:
            text = self.text.strip()
            where = (f"at column {error.offset}" if error.offset and error.offset <= len(text)
                     else "at the end")  # Python counts columns from 1; 0 or past: the end
            raise StencilSyntaxError(f"stencil {self.text!r} is not an expression: "
                                     f"{error.msg} {where}") from None
        self.text = self.text.strip()
        if _operation_depth(tree.body) > MAX_DEPTH:
            raise self.too_deep()
        return self.node(tree.body)

    def too_deep(self) -> StencilSyntaxError:
        text = self.text.strip()
        shown = text if len(text) <= 60 else f"{text[:40]} ... ({len(text)} characters)"
        return StencilSyntaxError(f"stencil {shown!r} nests operations more than {MAX_DEPTH} "
                                  "deep (a sum of more than that many terms); split it with "
                                  "parentheses, e.g. (a + b + c) + (d + e + f)")

    def node(self, node: ast.AST) -> Node:
        if isinstance(node, ast.BinOp):
            op = OPERATORS.get(type(node.op))
            if op is None:
                raise _refuse(self.text, node, f"operator {type(node.op).__name__} is not "
                              f"supported: {ALLOWED} (write u * u for u ** 2)")
            return Binary(op, self.node(node.left), self.node(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return Negate(self.node(node.operand))
            if isinstance(node.op, ast.UAdd):
                return self.node(node.operand)
            raise _refuse(self.text, node, f"unary {type(node.op).__name__} is not "
                          f"supported: {ALLOWED}")
        if isinstance(node, ast.Constant):
            return self.literal(node)
        if isinstance(node, ast.Name):
            return self.name(node, None)
        if isinstance(node, ast.Attribute):
            return self.previous(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        kind = {ast.Call: "function calls", ast.Compare: "comparisons", ast.BoolOp: "and/or",
                ast.IfExp: "conditional expressions"}.get(type(node), type(node).__name__)
        raise _refuse(self.text, node, f"{kind} are not supported: {ALLOWED}")

    def literal(self, node: ast.Constant) -> Literal:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _refuse(self.text, node, f"{type(value).__name__} constants are not "
                          "supported: only real numbers")
        try:
            as_float = float(value)
        except OverflowError:
            as_float = math.inf
        if not math.isfinite(as_float):
            raise _refuse(self.text, node, "the number is beyond float64's range")
        return Literal(as_float, ast.get_source_segment(self.text, node) or repr(value))

    def name(self, node: ast.Name, offset: tuple[int, ...] | None) -> Node:
        name = node.id
        if name == UPDATED:
            return Load(UPDATED, offset)
        if name in self.params:
            if offset is not None:
                raise _refuse(self.text, node, f"{name!r} is a scalar parameter: it takes no "
                              "offset")
            if name not in self.used_params:
                self.used_params.append(name)
            return Param(name)
        if self.fields is not None and name not in self.fields:
            raise _refuse(self.text, node, f"unknown name {name!r}: declare it as a field "
                          "(an array; --field) or a parameter (a number; --param)")
        if name not in self.used_fields:
            self.used_fields.append(name)
        return Load(name, offset)

    def previous(self, node: ast.Attribute) -> Load:
        if isinstance(node.value, ast.Name) and node.value.id == UPDATED and \
                node.attr == "prev":
            return Load(PREVIOUS)
        raise _refuse(self.text, node, "attributes are not supported: the only one is "
                      "u.prev, the previous time level")

    def subscript(self, node: ast.Subscript) -> Load:
        if isinstance(node.value, ast.Attribute):
            raise _refuse(self.text, node, "u.prev is read at the cell itself only, without "
                          "offsets")
        if not isinstance(node.value, ast.Name):
            raise _refuse(self.text, node, "only u and fields take offsets")
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        if len(items) not in (2, 3):
            raise _refuse(self.text, node, f"offsets need 2 (2-D) or 3 (3-D) integers, got "
                          f"{len(items)}")
        offset = tuple(self.offset_entry(item) for item in items)
        if self.dims is None:
            self.dims = len(offset)
        elif self.dims != len(offset):
            raise _refuse(self.text, node, f"{len(offset)} offsets where earlier ones had "
                          f"{self.dims}: one stencil is either 2-D or 3-D")
        return self.name(node.value, offset)

    def offset_entry(self, item: ast.AST) -> int:
        sign, inner = 1, item
        if isinstance(item, ast.UnaryOp) and isinstance(item.op, (ast.USub, ast.UAdd)):
            sign, inner = (-1 if isinstance(item.op, ast.USub) else 1), item.operand
        if not (isinstance(inner, ast.Constant) and type(inner.value) is int):
            raise _refuse(self.text, item, "an offset must be an integer constant such as "
                          "-1, 0 or 2")
        value = sign * inner.value
        if abs(value) > MAX_RADIUS:
            raise _refuse(self.text, item, f"offsets reach at most {MAX_RADIUS} cells, got "
                          f"{value}")
        return value


def parse(text: str, params: Iterable[str] = (), fields: Iterable[str] | None = None
          ) -> Expression:
    """Parse ``text`` (see the module's docstring) with the given parameter names and, if not
    None, field names; raise :class:`StencilSyntaxError` for anything the language refuses."""
    if not isinstance(text, str):
        raise StencilSyntaxError(f"a stencil is a string such as 'u + 0.1 * u[1, 0]', got "
                                 f"{type(text).__name__}")
    params = tuple(params)
    fields = None if fields is None else tuple(fields)
    for name in (*params, *(fields or ())):
        if not (isinstance(name, str) and name.isidentifier()) or name == UPDATED:
            raise StencilSyntaxError(f"stencil {text!r}: {name!r} cannot name a field or "
                                     "parameter (an identifier other than u)")
    both = set(params) & set(fields or ())
    if both:
        raise StencilSyntaxError(f"stencil {text!r}: {sorted(both)[0]!r} is both a field "
                                 "and a parameter")
    # Each walk over the tree (parser, reference, code generator) recurses once per level:
    # room for MAX_DEPTH levels above whatever depth the caller runs at.
    if sys.getrecursionlimit() < MAX_DEPTH + 2000:
        sys.setrecursionlimit(MAX_DEPTH + 2000)
    parser = _Parser(text, params, fields)
    root = parser.parse()
    offsets = [load.offset for load in loads(root) if load.offset is not None]
    radius = max((abs(d) for offset in offsets for d in offset), default=0)
    box = any(sum(1 for d in offset if d) > 1 for offset in offsets)
    return Expression(text=parser.text, root=root, dims=parser.dims, radius=radius,
                      shape="box" if box else "star", fields=tuple(parser.used_fields),
                      params=tuple(parser.used_params),
                      uses_prev=any(load.source == PREVIOUS for load in loads(root)))
