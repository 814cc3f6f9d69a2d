"""From a parsed stencil to the OpenCL C the templates of ``kernels/stencil/`` take.

The update becomes one C expression that C groups as the tree does (left operand, operator,
right operand): parentheses where C's precedence and left-to-right grouping would group it
otherwise, none elsewhere (a sum of 729 points nests no parentheses; OpenCL C compilers take
256 levels at most). So the device does exactly the operations of the NumPy reference in the
same order; the templates turn off contraction into FMA
(``#pragma OPENCL FP_CONTRACT OFF``). Numbers are written as hexadecimal floating constants of
the value already rounded to the field's dtype (exact, whatever the compiler's own decimal
rounding); parameters are kernel arguments of the field's type, rounded on the host.

Names in the generated code: ``u_old`` (the field), ``u_prev`` (the previous level),
``f_<name>`` (a read-only field), ``p_<name>`` (a parameter); ``at`` is the cell's index in
the padded layout, ``rs`` and ``ps`` the row and plane strides in elements. Jacobi's
streaming template (``kernels/jacobi/streaming.cl.mako``) takes the update as a pattern over
its named operands instead (:func:`streaming_params`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oclsci.stencil.language import (
    PREVIOUS,
    UPDATED,
    Expression,
    Literal,
    Load,
    Negate,
    Node,
    Param,
)
from oclsci.stencil.reference import literal_value

STRIDES = {2: ("rs", "1"), 3: ("ps", "rs", "1")}


def c_literal(value: float, dtype: np.dtype) -> str:
    """``value`` (already in ``dtype``) as an exact OpenCL C constant of type ``dtype``."""
    text = float(value).hex()
    return text + "f" if dtype == np.float32 else text


def offset_code(offset: tuple[int, ...] | None, dims: int) -> str:
    """``at`` moved by ``offset``: ``at - rs + 2`` for (-1, 2) in 2-D."""
    code = "at"
    for distance, stride in zip(offset or (0,) * dims, STRIDES[dims], strict=True):
        if distance == 0:
            continue
        sign = "+" if distance > 0 else "-"
        size = abs(distance)
        term = str(size) if stride == "1" else (stride if size == 1 else f"{size} * {stride}")
        code += f" {sign} {term}"
    return code


def buffer_name(source: str) -> str:
    """The kernel argument holding ``source`` (``u``, ``u.prev`` or a field)."""
    if source == UPDATED:
        return "u_old"
    if source == PREVIOUS:
        return "u_prev"
    return f"f_{source}"


def load_code(load: Load, dims: int) -> str:
    """A read of ``load``'s source at its offset."""
    return f"{buffer_name(load.source)}[{offset_code(load.offset, dims)}]"


# C's binding strength of the update's operations (unary minus and operands bind tightest).
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
UNARY = 3


def expression_code(node: Node, dtype: np.dtype, load: Callable[[Load], str]) -> str:
    """``node`` as one C expression that C groups as the tree does; ``load`` writes each
    read (templates that keep cells in registers or local memory give their own)."""
    return _code(node, dtype, load)[0]


def _code(node: Node, dtype: np.dtype, load: Callable[[Load], str]) -> tuple[str, int]:
    """(C text, binding strength) of ``node``. An operand is parenthesised where it binds
    less tightly than its operator, and on the right where it binds as tightly (C groups
    a - b - c as (a - b) - c, so a - (b - c) needs them)."""
    if isinstance(node, Load):
        return load(node), UNARY
    if isinstance(node, Param):
        return f"p_{node.name}", UNARY
    if isinstance(node, Literal):
        return c_literal(literal_value(node, dtype), dtype), UNARY
    if isinstance(node, Negate):
        text, strength = _code(node.operand, dtype, load)
        if strength < UNARY:
            text = f"({text})"
        return ("- " if text.startswith("-") else "-") + text, UNARY  # never "--"
    strength = PRECEDENCE[node.op]
    left, left_strength = _code(node.left, dtype, load)
    right, right_strength = _code(node.right, dtype, load)
    if left_strength < strength:
        left = f"({left})"
    if right_strength <= strength:
        right = f"({right})"
    return f"{left} {node.op} {right}", strength


def comment_text(expression: Expression) -> str:
    """The stencil as written, safe on one line of a C comment: its whitespace (new lines
    included) as single spaces, no backslash (it would join the next line to the comment),
    no ``??`` (a trigraph's start), no ``*/``."""
    text = " ".join(expression.text.split()).replace("\\", "/").replace("*/", "* /")
    while "??" in text:
        text = text.replace("??", "? ?")
    return text


def macro_load(load: Load, dims: int) -> str:
    """A read as the blocked templates' macros write it: ``U(di, dj)`` for ``u``, ``UPREV``
    for ``u.prev``, ``F_<name>(di, dj)`` for a field (offsets along every axis, slowest
    first); each template defines the macros for where it keeps the values."""
    if load.source == PREVIOUS:
        return "UPREV"
    offset = ", ".join(str(d) for d in (load.offset or (0,) * dims))
    return f"U({offset})" if load.source == UPDATED else f"F_{load.source}({offset})"


def blocked_params(expression: Expression, dims: int, dtype: np.dtype) -> dict:
    """The parameters the blocked templates (``kernels/stencil/tiled``, ``stream``) share:
    the step kernel's, with the update written through the load macros
    (:func:`macro_load`)."""
    params = template_params(expression, dims, dtype)
    params["update"] = expression_code(expression.root, dtype, lambda n: macro_load(n, dims))
    return params


def template_params(expression: Expression, dims: int, dtype: np.dtype) -> dict:
    """The parameters of ``kernels/stencil/step.cl.mako`` for ``expression`` in ``dtype``."""
    return {
        "dtype": dtype,
        "dims": dims,
        "radius": expression.radius,
        "fields": expression.fields,
        "params": expression.params,
        "uses_prev": expression.uses_prev,
        "update": expression_code(expression.root, dtype, lambda n: load_code(n, dims)),
        "stencil_text": comment_text(expression),
    }


# The streaming template's operands for u's reads of a 2-D radius-1 star stencil.
STREAMING_OPERANDS = {(0, 0): "centre", (-1, 0): "up", (1, 0): "down", (0, -1): "left",
                      (0, 1): "right"}


def streaming_params(expression: Expression, dims: int, dtype: np.dtype) -> dict:
    """The parameters of ``kernels/jacobi/streaming.cl.mako`` for a 2-D radius-1 star
    stencil without u.prev whose fields are read at offset 0 (the kernel spec has checked):
    the update as a ``str.format`` pattern over the template's operands (``{up}``,
    ``{down}``, ``{left}``, ``{right}``, ``{centre}``, ``{f<i>}`` for field i), the fields
    as (kernel argument, register prefix), the parameters and the boundary value as scalar
    arguments (the order the stencil solver passes them)."""
    registers = {name: f"f{index}" for index, name in enumerate(expression.fields)}

    def operand(load: Load) -> str:
        offset = load.offset or (0,) * dims
        if load.source == UPDATED:
            return "{" + STREAMING_OPERANDS[offset] + "}"
        assert load.source in registers and offset == (0,) * dims, load
        return "{" + registers[load.source] + "}"

    return {
        "dtype": dtype,
        "update": expression_code(expression.root, dtype, operand),
        "fields": tuple((buffer_name(name), registers[name]) for name in expression.fields),
        "scalars": tuple(f"p_{name}" for name in expression.params) + ("boundary",),
    }
