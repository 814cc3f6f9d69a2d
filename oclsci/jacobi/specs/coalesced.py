"""``coalesced``: one step per launch, work-item dimension 0 along columns, ``vector`` columns
and ``rows_per_item`` rows per work-item: the streaming kernel for large grids."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from oclsci.jacobi.specs import GRID_ARGUMENTS, JacobiSpec, streaming_cost
from oclsci.kernelspec import BOTH, Param, round_up

PARAMS = (
    Param("rows_per_item", default=1, high=64, test_values=range(1, 10)),
    # PoCL 3.0 miscompiles some wider double vectors.
    Param("vector", default=1, choices=(1, 2, 4)),
)
# Work-group shapes the tuner tries on GPUs.
GPU_SHAPES = [(32, 4), (32, 8), (64, 4), (128, 2), (256, 1), (64, 8), (128, 4), (32, 16),
              (64, 2), (128, 1)]


def launch(p: Mapping, local_size: Any, m: int, n: int):
    """``vector`` columns (an aligned group of them when wider than 1) by ``rows_per_item``
    rows per work-item."""
    vector = p["vector"]
    columns = n if vector == 1 else math.ceil((n + 1) / vector)
    rows = math.ceil(m / p["rows_per_item"])
    if local_size is None:
        return (columns, rows), None
    return (round_up(columns, local_size[0]), round_up(rows, local_size[1])), local_size


def defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """CPUs: four rows per item. GPUs: from `oclsci tune` for 16384^2 on an H100 and an H200
    (docs/performance.md), within 1-2% of the best of either (float32), 16-byte vectors
    (float64); then narrower groups for devices or kernels allowing fewer work-items."""
    if facts["is_cpu"]:
        return [({"rows_per_item": 4}, None)]
    params, shapes = (({"rows_per_item": 4, "vector": 2}, [(128, 4), (64, 4), (32, 4)])
                      if np.dtype(dtype).itemsize == 4 else
                      ({"rows_per_item": 2, "vector": 2}, [(64, 8), (32, 8), (16, 8)]))
    return [(dict(params), shape) for shape in shapes] + [(dict(params), None)]


def candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
    """Vectors, rows per item and (on GPUs) work-group shapes."""
    shapes = [None] if facts["is_cpu"] else GPU_SHAPES
    return [({"rows_per_item": rows, "vector": vector}, local)
            for vector, rows, local in itertools.product((4, 2, 1), (1, 2, 4, 8), shapes)
            if not (local and local[0] * local[1] > facts["max_wg"])]


def cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
         facts: Mapping) -> float:
    """Streaming; on GPUs narrow vectors and single rows cost a little more."""
    penalty = 1.0 + 0.15 / p["vector"] + 0.1 / p["rows_per_item"]
    return streaming_cost(shape[0] * shape[1], itemsize, facts, gpu_penalty=penalty)


SPEC = JacobiSpec(
    name="coalesced", template="jacobi/coalesced",
    summary="one step per launch, several rows per work-item",
    params=PARAMS,
    arguments=GRID_ARGUMENTS, launch=launch, defaults=defaults, cost=cost,
    candidates=candidates, tuned_on=BOTH,
    tile=lambda p: (p["rows_per_item"], p["vector"] * 8),
    work_per_item=lambda p, shape, items: p["rows_per_item"] * p["vector"],
    examples=(({"rows_per_item": 1, "vector": 1}, None),
              ({"rows_per_item": 3, "vector": 4}, (16, 2)),
              ({"rows_per_item": 2, "vector": 2}, None),
              ({"rows_per_item": 5}, (8, 2))),
    corner_cases=(({"rows_per_item": 1, "vector": 1}, None),
                  ({"rows_per_item": 4, "vector": 1}, (8, 2)),
                  ({"rows_per_item": 3, "vector": 2}, (32, 1)),
                  ({"rows_per_item": 1, "vector": 4}, (1, 1)),
                  ({"rows_per_item": 2, "vector": 4}, None),
                  ({"rows_per_item": 5, "vector": 2}, (4, 4))),
)
