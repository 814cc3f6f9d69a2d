"""``seed``: the talk's kernel, one step per launch, work-item dimension 0 along rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oclsci.jacobi.specs import GRID_ARGUMENTS, JacobiSpec, streaming_cost
from oclsci.kernelspec import round_up


def launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-item per padded cell, dimension 0 along rows."""
    if local_size is None:
        return (m + 2, n + 2), None
    return (round_up(m + 2, local_size[0]), round_up(n + 2, local_size[1])), local_size


def defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """No parameters to choose."""
    return [({}, None)]


def cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
         facts: Mapping) -> float:
    """Strided reads: twice the streaming time on CPUs, four times on GPUs."""
    return streaming_cost(shape[0] * shape[1], itemsize, facts, cpu_passes=2, gpu_penalty=4.0)


SPEC = JacobiSpec(
    name="seed", template="jacobi/seed",
    summary="the talk's kernel, one step per launch",
    params=(), arguments=GRID_ARGUMENTS,
    launch=launch, defaults=defaults, cost=cost,
    examples=(({}, None),),
    corner_cases=(({}, None), ({}, (4, 8)), ({}, (16, 1))),
)
