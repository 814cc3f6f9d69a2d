"""The update as C (oclsci/stencil/codegen.py): C groups the generated expression as the
tree does, with parentheses only where C would group it otherwise; the stencil's text is one
safe line of a C comment."""

from __future__ import annotations

import ast
import random

import numpy as np
import pytest

from oclsci.stencil.codegen import comment_text, expression_code
from oclsci.stencil.language import Binary, Load, Negate, Node, Param, parse

F32 = np.dtype(np.float32)
PYTHON_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def load_name(load: Load) -> str:
    """A load as an identifier (C and Python alike)."""
    return "u_" + "_".join(str(d + 9) for d in (load.offset or ()))


def tree_form(node: Node) -> tuple | str:
    if isinstance(node, Load):
        return load_name(node)
    if isinstance(node, Param):
        return f"p_{node.name}"
    if isinstance(node, Negate):
        return ("neg", tree_form(node.operand))
    assert isinstance(node, Binary), node
    return (node.op, tree_form(node.left), tree_form(node.right))


def python_form(node: ast.AST) -> tuple | str:
    """How the code groups: + - * / and unary minus bind and group in Python as in C."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.UnaryOp):
        assert isinstance(node.op, ast.USub)
        return ("neg", python_form(node.operand))
    assert isinstance(node, ast.BinOp), ast.dump(node)
    return (PYTHON_OPERATORS[type(node.op)], python_form(node.left), python_form(node.right))


def random_expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(["u", "u[1, 0]", "u[0, -1]", "k", "c"])
    if rng.random() < 0.15:
        return "-" + random_expression(rng, depth - 1)
    left, right = random_expression(rng, depth - 1), random_expression(rng, depth - 1)
    return f"({left} {rng.choice('+-*/')} {right})"


CASES = ["u - (u[1, 0] - u[0, -1])", "u - u[1, 0] - u[0, -1]", "u / (k * c)", "u / k * c",
         "(u + k) * c", "-(u * k)", "-u * k", "u - -u[1, 0]", "- -u", "k * -(u - c)",
         "u * (k / c)", "(u - k) - (c - u)"]


@pytest.mark.parametrize("text", CASES + [random_expression(random.Random(seed), 6)
                                          for seed in range(60)])
def test_c_groups_the_code_as_the_tree(text):
    tree = parse(text, params=["k", "c"]).root
    code = expression_code(tree, F32, load_name)
    assert "--" not in code, code  # C's decrement
    assert python_form(ast.parse(code, mode="eval").body) == tree_form(tree), code


def test_parentheses_only_where_needed():
    cases = {"u + u[1, 0] + u[0, 1] - u[0, -1]": "u_9_9 + u_10_9 + u_9_10 - u_9_8",
             "k * (u - c) / u": "p_k * (u_9_9 - p_c) / u_9_9",
             "u - (u - k)": "u_9_9 - (u_9_9 - p_k)", "-(u + k)": "-(u_9_9 + p_k)",
             "(k * u) + (c * u)": "p_k * u_9_9 + p_c * u_9_9"}
    for text, want in cases.items():
        tree = parse(text, params=["k", "c"], fields=[]).root
        assert expression_code(tree, F32, lambda load: load_name(Load("u", (0, 0)))
                               if load.offset is None else load_name(load)) == want
    # A 3-D box of radius 4 as one sum: no parentheses (OpenCL C compilers nest 256 at most).
    box = " + ".join(f"u[{i}, {j}, {k}]" for i in range(-4, 5) for j in range(-4, 5)
                     for k in range(-4, 5))
    assert "(" not in expression_code(parse(box).root, F32, load_name)


@pytest.mark.parametrize(("text", "want"), [
    ("u * 0.5  # a note \\", "u * 0.5 # a note /"),
    ("u * 0.5  # ??/", "u * 0.5 # ? ?/"),
    ("(u\n * 0.5)\r\n", "(u * 0.5)"),
    ("u # */ ???", "u # * / ? ? ?"),
])
def test_the_text_is_one_safe_comment_line(text, want):
    got = comment_text(parse(text))
    assert got == want
    assert "\\" not in got and "??" not in got and "*/" not in got and "\n" not in got
