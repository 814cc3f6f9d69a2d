"""``blocked``: temporal blocking in local memory, ``halo_width`` steps per launch."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from oclsci.jacobi.specs import (
    GPU_LAUNCH,
    GPU_LAUNCH_HOST,
    GRID_ARGUMENTS,
    STEPS,
    JacobiSpec,
    streaming_cost,
)
from oclsci.kernelspec import Param

SMALL = (1, 2, 4, 8, 16, 32)
PARAMS = (
    Param("tile_w", high=8192, test_values=range(1, 41)),
    Param("tile_h", high=8192, test_values=range(1, 41)),
    Param("halo_width", high=1024, test_values=range(1, 11)),
    Param("local_w", high=1024, test_values=SMALL),
    Param("local_h", high=1024, test_values=SMALL),
    Param("rhs_in_local", kind=bool, default=False, test_values=(False, True)),
)


def _span(p: Mapping) -> int:
    return (p["tile_w"] + 2 * p["halo_width"]) * (p["tile_h"] + 2 * p["halo_width"])


def local_mem(p: Mapping, itemsize: int) -> int:
    """Two copies of the tile and its halo, three with the right-hand side."""
    return (3 if p["rhs_in_local"] else 2) * _span(p) * itemsize


def launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-group of local_w x local_h per tile."""
    groups_w, groups_h = math.ceil(n / p["tile_w"]), math.ceil(m / p["tile_h"])
    return (groups_w * p["local_w"], groups_h * p["local_h"]), (p["local_w"], p["local_h"])


def defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """A tile per device type; then fewer work-items over it, then less local memory."""
    itemsize, local_mem_bytes = np.dtype(dtype).itemsize, facts["local_mem"]
    if facts["is_cpu"]:
        params = {"tile_w": 64, "tile_h": 32, "halo_width": 8, "local_w": 64, "local_h": 4}
    else:
        params = {"tile_w": 32, "tile_h": 32, "halo_width": 16, "local_w": 32, "local_h": 16}
    span = _span(params)
    params["rhs_in_local"] = 3 * span * itemsize <= local_mem_bytes
    if 2 * span * itemsize > local_mem_bytes:
        params.update(tile_w=16, tile_h=16, halo_width=8, local_w=16, local_h=16)
    found = [(dict(params), None)]
    while params["local_w"] * params["local_h"] > 16:
        key = "local_h" if params["local_h"] >= params["local_w"] // 2 else "local_w"
        params[key] //= 2
        found.append((dict(params), None))
    found.append(({"tile_w": 16, "tile_h": 16, "halo_width": 4, "local_w": 8, "local_h": 8,
                   "rhs_in_local": False}, None))
    return found


def candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
    """Square tiles, halos and work-group shapes that fit local memory."""
    found = []
    itemsize = np.dtype(dtype).itemsize
    for tile, halo, local in itertools.product((16, 32, 64), (4, 8, 16),
                                               ((32, 8), (16, 16), (32, 16), (64, 4))):
        span = (tile + 2 * halo) ** 2
        params = {"tile_w": tile, "tile_h": tile, "halo_width": halo, "local_w": local[0],
                  "local_h": local[1], "rhs_in_local": 3 * span * itemsize <= facts["local_mem"]}
        if 2 * span * itemsize <= facts["local_mem"] and local[0] * local[1] <= facts["max_wg"]:
            found.append((params, None))
    return found


def cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
         facts: Mapping) -> float:
    """GPUs: the span's cells each step, two groups per compute unit at a time."""
    m, n = shape
    if facts["is_cpu"]:
        return streaming_cost(m * n, itemsize, facts)
    k = p["halo_width"]
    groups = math.ceil(n / p["tile_w"]) * math.ceil(m / p["tile_h"])
    rate = 6e9 if itemsize == 4 else 3e9
    step = math.ceil(groups / (2 * facts["cus"])) * 2 * _span(p) / rate
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + k * step) / k


SPEC = JacobiSpec(
    name="blocked", template="jacobi/blocked",
    summary="tiles in local memory, several steps per launch",
    params=PARAMS, arguments=GRID_ARGUMENTS + (STEPS,), launch=launch,
    defaults=defaults, cost=cost, steps_param="halo_width",
    work_group=lambda p: (p["local_w"], p["local_h"]), local_mem=local_mem,
    candidates=candidates, tile=lambda p: (p["tile_h"], p["tile_w"]),
    work_per_item=lambda p, shape, items: -(-_span(p) // (p["local_w"] * p["local_h"])),
    examples=(({"tile_w": 8, "tile_h": 4, "halo_width": 2, "local_w": 4, "local_h": 2,
                "rhs_in_local": True}, None),),
    corner_cases=(
        ({"tile_w": 16, "tile_h": 16, "halo_width": 1, "local_w": 16, "local_h": 4,
          "rhs_in_local": True}, None),
        ({"tile_w": 16, "tile_h": 16, "halo_width": 3, "local_w": 16, "local_h": 16,
          "rhs_in_local": False}, None),
        ({"tile_w": 8, "tile_h": 4, "halo_width": 2, "local_w": 4, "local_h": 2,
          "rhs_in_local": True}, None),
        ({"tile_w": 5, "tile_h": 3, "halo_width": 4, "local_w": 8, "local_h": 8,
          "rhs_in_local": False}, None),
        ({"tile_w": 16, "tile_h": 16, "halo_width": 8, "local_w": 16, "local_h": 16,
          "rhs_in_local": True}, None)),
)
