"""Checkpoint files of ``oclsci stencil``: the field (and u.prev) after some steps, with what a
resumed run needs to go on exactly where it stopped, on any number of ranks.

The file (:mod:`oclsci.checkpoints`: ``.npz``, written atomically) holds the expression as
written, ``u``, ``prev`` (when the update reads u.prev), every read-only field
(``field_<name>``), every parameter (``param_<name>``) and the boundary value as the run
rounded them, ``periodic`` where the grid wraps around (files without it: not), and
``step``, the steps done. :func:`resumed_problem` checks a resumed command
against it and refuses, in one line, one that would compute something else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from oclsci.arrays import same_bits
from oclsci.checkpoints import load_arrays, save_arrays, saved_dtype
from oclsci.errors import InputError
from oclsci.stencil.problem import Problem

FORMAT_VERSION = 1
COUNTER = "step"


@dataclass
class StencilCheckpoint:
    """A stencil run's state after ``step`` steps."""

    expression: str
    u: np.ndarray
    prev: np.ndarray | None
    fields: dict[str, np.ndarray]
    params: dict[str, Any]
    boundary: Any
    step: int
    periodic: bool = False


def save_checkpoint(path: str | os.PathLike, problem: Problem, u: np.ndarray,
                    prev: np.ndarray | None, step: int) -> None:
    """Write the state of ``problem``'s run at ``step`` (``u`` and ``prev`` the levels then)
    to ``path`` atomically."""
    arrays = {"expression": np.array(problem.expression.text), "u": u,
              "boundary": np.asarray(problem.boundary)}
    if prev is not None:
        arrays["prev"] = prev
    if problem.periodic:
        arrays["periodic"] = np.array(True)
    arrays.update({f"field_{name}": array for name, array in problem.fields.items()})
    arrays.update({f"param_{name}": np.asarray(value) for name, value in problem.params.items()})
    save_arrays(path, arrays, counter=COUNTER, count=step, version=FORMAT_VERSION)


def checkpoint_dtype(path: str | os.PathLike) -> str | None:
    """The dtype of the run saved in ``path`` (None when the file cannot tell)."""
    return saved_dtype(path, "u")


def load_checkpoint(path: str | os.PathLike) -> StencilCheckpoint:
    """Read and check a checkpoint; any problem is an InputError naming the file."""
    path = Path(path)
    fields = load_arrays(path, ("expression", "u", "boundary"), counter=COUNTER,
                         version=FORMAT_VERSION)
    u, text = fields["u"], fields["expression"]
    if text.shape != () or text.dtype.kind != "U":
        raise InputError(f"checkpoint {path}: not a stencil checkpoint (no expression text)")
    if u.dtype not in (np.float32, np.float64) or u.ndim not in (2, 3) or u.size == 0:
        raise InputError(f"checkpoint {path}: u is not a 2-D or 3-D float32 or float64 grid")
    arrays = {name: array for name, array in fields.items()
              if name == "prev" or name.startswith("field_")}
    for name, array in arrays.items():
        if array.shape != u.shape or array.dtype != u.dtype:
            raise InputError(f"checkpoint {path}: {name} does not match u ({array.dtype} "
                             f"{array.shape}, u {u.dtype} {u.shape})")
    if not all(np.all(np.isfinite(array)) for array in (u, *arrays.values())):
        raise InputError(f"checkpoint {path}: holds NaN or infinite values")
    scalars = {name: value for name, value in fields.items()
               if name == "boundary" or name.startswith("param_")}
    for name, value in scalars.items():
        if value.shape != () or value.dtype != u.dtype:
            raise InputError(f"checkpoint {path}: {name} is not a {u.dtype} number")
    return StencilCheckpoint(
        expression=str(text), u=u, prev=fields.get("prev"),
        fields={name[len("field_"):]: array for name, array in arrays.items()
                if name.startswith("field_")},
        params={name[len("param_"):]: value[()] for name, value in scalars.items()
                if name.startswith("param_")},
        boundary=fields["boundary"][()], step=int(fields[COUNTER]),
        periodic=_flag(path, fields.get("periodic"), fields["boundary"][()]))


def _flag(path: Path, value: np.ndarray | None, boundary: Any) -> bool:
    if value is None:
        return False
    if value.shape != () or value.dtype != np.bool_:
        raise InputError(f"checkpoint {path}: periodic is not true or false")
    if value and boundary != 0:
        raise InputError(f"checkpoint {path}: periodic, yet with the boundary value "
                         f"{boundary}")
    return bool(value)


def resumed_problem(path: str, state: StencilCheckpoint, expression: str, build: Any,
                    given_fields: dict[str, np.ndarray], dtype: str | None,
                    names: tuple[tuple[str, ...], tuple[str, ...]]) -> Problem:
    """The problem that goes on from ``state``: ``build(u0, fields, prev, dtype)`` makes it
    (the command's stencil ``expression``, parameters and steps); refused in one line when
    the command names another stencil, parameters, boundary value, fields or dtype, or fewer
    steps than were done. ``given_fields``: the fields the command names again (they must be the
    checkpoint's); ``names``: the (parameters, fields) the command's stencil reads, compared
    first (a parameter left out of the command would read as a field)."""
    def refuse(what: str) -> NoReturn:
        raise InputError(f"checkpoint {path} was made for {what}; resume with the command that "
                         "wrote it")

    if state.expression != expression:
        refuse(f"the stencil {state.expression!r}")

    def other_parameters() -> NoReturn:
        refuse("other parameters: " + (", ".join(f"{name}={value}" for name, value
                                                 in state.params.items()) or "none"))
    params, fields = names
    if set(state.params) != set(params):
        other_parameters()
    if set(state.fields) != set(fields):
        refuse(f"the fields {', '.join(sorted(state.fields)) or '(none)'}")
    saved = state.u.dtype.name
    if dtype is not None and dtype != saved:
        raise InputError(f"--dtype {dtype} contradicts checkpoint {path}, which holds a "
                         f"{saved} run; leave --dtype out to go on in {saved}")
    problem = build(state.u, {**state.fields, **given_fields}, state.prev, saved)
    if (state.prev is None) == problem.expression.uses_prev:
        refuse("a stencil " + ("without" if state.prev is None else "with") + " u.prev")
    dtype = problem.dtype
    if any(not same_bits(np.asarray(state.params[name], dtype), np.asarray(value, dtype))
           for name, value in problem.params.items()):
        other_parameters()
    if state.periodic != problem.periodic:
        refuse("periodic boundaries" if state.periodic else "a boundary value")
    if not same_bits(np.asarray(state.boundary, dtype), np.asarray(problem.boundary, dtype)):
        refuse(f"the boundary value {state.boundary}")
    for name in given_fields:
        if not same_bits(problem.fields[name], state.fields[name]):
            refuse(f"another field {name}")
    if state.step > problem.steps:
        raise InputError(f"checkpoint {path} is at step {state.step}, past --steps "
                         f"{problem.steps} (the total, including the steps done): ask for at "
                         "least that many")
    return problem
