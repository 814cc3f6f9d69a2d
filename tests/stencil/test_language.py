"""The stencil language: what it infers from an expression, and what it refuses, each in
one line naming what and why."""

from __future__ import annotations

import pytest

from oclsci.errors import InputError
from oclsci.stencil.language import MAX_DEPTH, StencilSyntaxError, parse


@pytest.mark.parametrize(("text", "dims", "radius", "shape", "points"), [
    ("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", 2, 1, "star", 4),
    ("u + (u[-1, -1] + u[1, 1]) * 0.1", 2, 1, "box", 3),
    ("u + u[-2, 0] - u[0, 2]", 2, 2, "star", 3),
    ("u[0, 0, 1] - u[0, 0, -1] + u", 3, 1, "star", 3),
    ("u[4, -4, 1] + u[0, 0, 0]", 3, 4, "box", 2),
    ("2 * u - u.prev", None, 0, "star", 1),
])
def test_inference(text, dims, radius, shape, points):
    expression = parse(text)
    assert (expression.dims, expression.radius, expression.shape) == (dims, radius, shape)
    assert len(expression.offsets()) == points


def test_names_split_into_fields_and_params():
    expression = parse("u + k * (b[1, 0] - c) + k * b", params=["k"])
    assert expression.fields == ("b", "c")
    assert expression.params == ("k",)
    assert not expression.uses_prev
    assert parse("2 * u - u.prev", params=["c2"]).uses_prev


@pytest.mark.parametrize(("text", "fragment"), [
    ("u ** 2", "operator Pow is not supported"),
    ("u % 2", "operator Mod is not supported"),
    ("sin(u)", "function calls are not supported"),
    ("u > 0", "comparisons are not supported"),
    ("u if b else u", "conditional expressions are not supported"),
    ("~u", "unary Invert is not supported"),
    ("u[5, 0]", "offsets reach at most 4 cells, got 5"),
    ("u[0, -5, 0]", "offsets reach at most 4 cells, got -5"),
    ("u[1]", "offsets need 2 (2-D) or 3 (3-D) integers, got 1"),
    ("u[1, 0, 0, 0]", "got 4"),
    ("u[1, 0] + u[0, 0, 1]", "one stencil is either 2-D or 3-D"),
    ("u[0.5, 0]", "an offset must be an integer constant"),
    ("u[i, 0]", "an offset must be an integer constant"),
    ("u.prev[1, 0]", "u.prev is read at the cell itself only"),
    ("u.next", "the only one is u.prev"),
    ("k[1, 0]", "'k' is a scalar parameter: it takes no offset"),
    ("x + u", "unknown name 'x'"),
    ("True * u", "bool constants are not supported"),
    ("1j * u", "complex constants are not supported"),
    ("'a' + u", "str constants are not supported"),
    ("1e999 * u", "beyond float64's range"),
    ("u +", "is not an expression: invalid syntax at the end"),
    ("u $ 2", "is not an expression: invalid syntax at column 3"),
    ("u; u", "is not an expression"),
    ("(u[1, 0] + 1)[0, 1]", "only u and fields take offsets"),
])
def test_refusals_are_one_line(text, fragment):
    with pytest.raises(StencilSyntaxError) as caught:
        parse(text, params=["k"], fields=["b"])
    message = str(caught.value)
    assert "\n" not in message
    assert fragment in message, message
    assert isinstance(caught.value, InputError)


@pytest.mark.parametrize(("params", "fields", "fragment"), [
    (["u"], None, "cannot name a field or parameter"),
    ([], ["not a name"], "cannot name a field or parameter"),
    (["b"], ["b"], "is both a field and a parameter"),
])
def test_bad_names_are_refused(params, fields, fragment):
    with pytest.raises(StencilSyntaxError, match=fragment):
        parse("u", params=params, fields=fields)


@pytest.mark.parametrize("terms", [MAX_DEPTH + 2, 3000, 200_000])
def test_expressions_nested_too_deep_are_refused_in_one_short_line(terms):
    text = " + ".join(["u"] * terms)
    with pytest.raises(StencilSyntaxError) as caught:
        parse(text)
    message = str(caught.value)
    assert f"nests operations more than {MAX_DEPTH} deep" in message, message
    assert "\n" not in message and len(message) < 300, message


def test_the_deepest_allowed_expression_parses():
    assert parse(" + ".join(["u[1, 0]"] * (MAX_DEPTH + 1))).radius == 1
    assert parse("-" * MAX_DEPTH + "u").radius == 0


def test_non_string_is_refused():
    with pytest.raises(StencilSyntaxError, match="a stencil is a string"):
        parse(3)
