"""The Jacobi kernels whose work-groups share a tile and meet at barriers, several steps per
launch (temporal blocking).

- ``blocked``: the tile and its halo in local memory, ``halo_width`` steps per launch;
- ``temporal``: for GPUs; each work-item keeps ``rows`` x ``cols`` cells in registers and
  exchanges block edges through local memory; ``max_steps`` steps per launch.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from oclsci.jacobi.specs import (
    GPU_BANDWIDTH,
    GPU_LAUNCH,
    GPU_LAUNCH_HOST,
    GRID_ARGUMENTS,
    ROW_FIRST,
    STEPS,
    JacobiSpec,
    streaming_cost,
)
from oclsci.kernelspec import GPU, Param

# Work-group sides the tests give both kernels.
SMALL = (1, 2, 4, 8, 16, 32)


# -- blocked ---------------------------------------------------------------------------------------

BLOCKED_PARAMS = (
    Param("tile_w", high=8192, test_values=range(1, 41)),
    Param("tile_h", high=8192, test_values=range(1, 41)),
    Param("halo_width", high=1024, test_values=range(1, 11)),
    Param("local_w", high=1024, test_values=SMALL),
    Param("local_h", high=1024, test_values=SMALL),
    Param("rhs_in_local", kind=bool, default=False, test_values=(False, True)),
)


def _blocked_span(p: Mapping) -> int:
    return (p["tile_w"] + 2 * p["halo_width"]) * (p["tile_h"] + 2 * p["halo_width"])


def blocked_local_mem(p: Mapping, itemsize: int) -> int:
    """Two copies of the tile and its halo, three with the right-hand side."""
    return (3 if p["rhs_in_local"] else 2) * _blocked_span(p) * itemsize


def blocked_launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-group of local_w x local_h per tile."""
    groups_w, groups_h = math.ceil(n / p["tile_w"]), math.ceil(m / p["tile_h"])
    return (groups_w * p["local_w"], groups_h * p["local_h"]), (p["local_w"], p["local_h"])


def blocked_defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """A tile per device type; then fewer work-items over it, then less local memory."""
    itemsize, local_mem_bytes = np.dtype(dtype).itemsize, facts["local_mem"]
    if facts["is_cpu"]:
        params = {"tile_w": 64, "tile_h": 32, "halo_width": 8, "local_w": 64, "local_h": 4}
    else:
        params = {"tile_w": 32, "tile_h": 32, "halo_width": 16, "local_w": 32, "local_h": 16}
    span = _blocked_span(params)
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


def blocked_candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
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


def blocked_cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
                 facts: Mapping) -> float:
    """GPUs: the span's cells each step, two groups per compute unit at a time."""
    m, n = shape
    if facts["is_cpu"]:
        return streaming_cost(m * n, itemsize, facts)
    k = p["halo_width"]
    groups = math.ceil(n / p["tile_w"]) * math.ceil(m / p["tile_h"])
    rate = 6e9 if itemsize == 4 else 3e9
    step = math.ceil(groups / (2 * facts["cus"])) * 2 * _blocked_span(p) / rate
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + k * step) / k


BLOCKED = JacobiSpec(
    name="blocked", template="jacobi/blocked",
    summary="tiles in local memory, several steps per launch",
    params=BLOCKED_PARAMS, arguments=GRID_ARGUMENTS + (STEPS,), launch=blocked_launch,
    defaults=blocked_defaults, cost=blocked_cost, steps_param="halo_width",
    work_group=lambda p: (p["local_w"], p["local_h"]), local_mem=blocked_local_mem,
    candidates=blocked_candidates, tile=lambda p: (p["tile_h"], p["tile_w"]),
    work_per_item=lambda p, shape, items: -(-_blocked_span(p) // (p["local_w"] * p["local_h"])),
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


# -- temporal --------------------------------------------------------------------------------------

TEMPORAL_PARAMS = (
    Param("rows", high=64, test_values=range(1, 5)),
    Param("cols", high=64, test_values=range(1, 5)),
    Param("local_w", high=1024, test_values=SMALL),
    Param("local_h", high=1024, test_values=SMALL),
    Param("max_steps", high=1024, test_values=range(1, 13)),
    Param("buffers", default=2, choices=(1, 2)),
)
TEMPORAL_KEYS = ("rows", "cols", "local_w", "local_h", "max_steps", "buffers")

# Defaults (rows, cols, local_w, local_h, max_steps, buffers), by grid size (more than 2^20
# cells: large) and item size, from `oclsci tune` on an H100 and an H200 (docs/performance.md:
# within 1-3% of the best on both); then smaller ones for devices with less local memory or
# smaller work-groups.
TEMPORAL_DEFAULTS = {
    ("small", 4): [(2, 2, 32, 32, 16, 1), (4, 2, 32, 16, 16, 2)],
    ("small", 8): [(4, 2, 32, 16, 16, 1)],
    ("large", 4): [(8, 4, 32, 8, 8, 2), (8, 4, 32, 16, 12, 1)],
    ("large", 8): [(4, 2, 32, 8, 4, 2), (4, 2, 32, 16, 4, 1)],
}
TEMPORAL_FALLBACKS = [(4, 2, 32, 8, 8, 1), (4, 2, 16, 8, 4, 1), (2, 2, 16, 8, 4, 1),
                      (2, 2, 8, 8, 2, 1)]


def temporal_tile(p: Mapping) -> tuple[int, int]:
    """(tile_w, tile_h): the span less a halo of ``max_steps`` on each side."""
    k = p["max_steps"]
    return p["local_w"] * p["cols"] - 2 * k, p["local_h"] * p["rows"] - 2 * k


def temporal_check(p: Mapping) -> str | None:
    """A span that leaves no tile inside the halo cannot work."""
    if min(temporal_tile(p)) < 1:
        return (f"span {p['local_w']}x{p['cols']} by {p['local_h']}x{p['rows']} leaves no "
                f"tile inside a halo of {p['max_steps']}")
    return None


def temporal_local_mem(p: Mapping, itemsize: int) -> int:
    """Four edges of every block, once or twice (``buffers``)."""
    lw, lh = p["local_w"], p["local_h"]
    edges = 2 * lh * p["rows"] * lw + 2 * lh * p["cols"] * lw
    return p["buffers"] * edges * itemsize


def temporal_launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-group of local_w x local_h per tile."""
    tile_w, tile_h = temporal_tile(p)
    lw, lh = p["local_w"], p["local_h"]
    return (math.ceil(n / tile_w) * lw, math.ceil(m / tile_h) * lh), (lw, lh)


def temporal_defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """Tuned on an H100 (oclsci tune): the first that fits the device wins."""
    large = shape is not None and shape[0] * shape[1] > 2**20
    choices = TEMPORAL_DEFAULTS[("large" if large else "small", np.dtype(dtype).itemsize)]
    return [(dict(zip(TEMPORAL_KEYS, values, strict=True)), None)
            for values in choices + TEMPORAL_FALLBACKS]


def temporal_candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
    """Blocks of 4 to 32 cells (16 in float64), groups of 64 items or more, tiles that are
    at least a fifth of their span and not much larger than the grid; two buffers if they
    fit, else one."""
    m, n = shape
    itemsize = np.dtype(dtype).itemsize
    found = []
    for cols, rows, local_w, local_h, steps in itertools.product(
            (1, 2, 4), (2, 4, 8), (32, 64), (2, 4, 8, 16, 32), (2, 4, 6, 8, 12, 16, 24, 32)):
        if not 4 <= rows * cols <= (32 if itemsize == 4 else 16):
            continue
        if not 64 <= local_w * local_h <= facts["max_wg"]:
            continue
        span_w, span_h = local_w * cols, local_h * rows
        tile_w, tile_h = span_w - 2 * steps, span_h - 2 * steps
        if tile_w < 1 or tile_h < 1 or tile_w * tile_h < 0.2 * span_w * span_h:
            continue
        if tile_w > 2 * n + 32 or tile_h > 2 * m + 32:
            continue
        for buffers in (2, 1):
            params = {"rows": rows, "cols": cols, "local_w": local_w, "local_h": local_h,
                      "max_steps": steps, "buffers": buffers}
            if temporal_local_mem(params, itemsize) <= facts["local_mem"]:
                found.append((params, None))
                break
    return found


def temporal_cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
                  facts: Mapping) -> float:
    """GPUs: resident groups per compute unit (work-items, registers, local memory), the
    span's cells and a barrier each step, the span read and written once per launch."""
    m, n = shape
    if facts["is_cpu"]:
        return streaming_cost(m * n, itemsize, facts)
    k = p["max_steps"]
    tile_w, tile_h = temporal_tile(p)
    span = (tile_w + 2 * k) * (tile_h + 2 * k)
    groups = math.ceil(n / tile_w) * math.ceil(m / tile_h)
    wg = p["local_w"] * p["local_h"]
    regs = 3 * p["rows"] * p["cols"] + 24
    per_cu = max(1, min(2048 // wg, 65536 // (wg * regs),
                        (3 * facts["local_mem"]) // max(1, temporal_local_mem(p, itemsize))))
    waves = math.ceil(groups / (facts["cus"] * per_cu))
    # Cells a multiprocessor updates per second, shared by its resident groups; a barrier
    # per step costs about as much as 64 cells.
    rate = (16e9 if itemsize == 4 else 8e9) * (0.5 + 0.5 * min(1.0, wg / 256))
    concurrent = min(per_cu, math.ceil(groups / facts["cus"]))
    step = waves * concurrent * (span + 64 * (3 - p["buffers"])) / rate
    traffic = groups * span * 2 * itemsize / GPU_BANDWIDTH
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + k * step + traffic) / k


TEMPORAL = JacobiSpec(
    name="temporal", template="jacobi/temporal",
    summary="temporal blocking in registers, for GPUs",
    params=TEMPORAL_PARAMS, arguments=GRID_ARGUMENTS + (STEPS, ROW_FIRST),
    launch=temporal_launch, derived=lambda p: {"row_window": False},
    defaults=temporal_defaults, cost=temporal_cost, steps_param="max_steps",
    work_group=lambda p: (p["local_w"], p["local_h"]), local_mem=temporal_local_mem,
    check=temporal_check,
    candidates=temporal_candidates, suits=GPU, auto_on=GPU, tuned_on=GPU,
    tile=lambda p: temporal_tile(p)[::-1],
    work_per_item=lambda p, shape, items: p["rows"] * p["cols"] + 4,
    examples=(
        ({"rows": 2, "cols": 2, "local_w": 8, "local_h": 4, "max_steps": 3, "buffers": 2},
         None),
        ({"rows": 3, "cols": 1, "local_w": 16, "local_h": 4, "max_steps": 5, "buffers": 1},
         None),
        ({"rows": 1, "cols": 4, "local_w": 4, "local_h": 8, "max_steps": 2, "buffers": 2},
         None)),
    corner_cases=(
        ({"rows": 2, "cols": 2, "local_w": 4, "local_h": 4, "max_steps": 1, "buffers": 2},
         None),
        ({"rows": 1, "cols": 1, "local_w": 16, "local_h": 4, "max_steps": 1, "buffers": 1},
         None),
        ({"rows": 3, "cols": 2, "local_w": 8, "local_h": 2, "max_steps": 2, "buffers": 2},
         None),
        ({"rows": 4, "cols": 2, "local_w": 16, "local_h": 4, "max_steps": 4, "buffers": 1},
         None),
        ({"rows": 2, "cols": 4, "local_w": 8, "local_h": 16, "max_steps": 8, "buffers": 2},
         None)),
)
