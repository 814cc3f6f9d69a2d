"""``temporal``: temporal blocking in registers, for GPUs.

Each work-item keeps ``rows`` x ``cols`` cells in registers and exchanges block edges
through local memory; ``max_steps`` steps per launch.
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
    STEPS,
    JacobiSpec,
    streaming_cost,
)
from oclsci.kernelspec import GPU, Param

SMALL = (1, 2, 4, 8, 16, 32)
PARAMS = (
    Param("rows", high=64, test_values=range(1, 5)),
    Param("cols", high=64, test_values=range(1, 5)),
    Param("local_w", high=1024, test_values=SMALL),
    Param("local_h", high=1024, test_values=SMALL),
    Param("max_steps", high=1024, test_values=range(1, 13)),
    Param("buffers", default=2, choices=(1, 2)),
)
KEYS = ("rows", "cols", "local_w", "local_h", "max_steps", "buffers")

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


def tile(p: Mapping) -> tuple[int, int]:
    """(tile_w, tile_h): the span less a halo of ``max_steps`` on each side."""
    k = p["max_steps"]
    return p["local_w"] * p["cols"] - 2 * k, p["local_h"] * p["rows"] - 2 * k


def check(p: Mapping) -> str | None:
    """A span that leaves no tile inside the halo cannot work."""
    if min(tile(p)) < 1:
        return (f"span {p['local_w']}x{p['cols']} by {p['local_h']}x{p['rows']} leaves no "
                f"tile inside a halo of {p['max_steps']}")
    return None


def local_mem(p: Mapping, itemsize: int) -> int:
    """Four edges of every block, once or twice (``buffers``)."""
    lw, lh = p["local_w"], p["local_h"]
    edges = 2 * lh * p["rows"] * lw + 2 * lh * p["cols"] * lw
    return p["buffers"] * edges * itemsize


def launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-group of local_w x local_h per tile."""
    tile_w, tile_h = tile(p)
    lw, lh = p["local_w"], p["local_h"]
    return (math.ceil(n / tile_w) * lw, math.ceil(m / tile_h) * lh), (lw, lh)


def defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """Tuned on an H100 (oclsci tune): the first that fits the device wins."""
    large = shape is not None and shape[0] * shape[1] > 2**20
    choices = TEMPORAL_DEFAULTS[("large" if large else "small", np.dtype(dtype).itemsize)]
    return [(dict(zip(KEYS, values, strict=True)), None)
            for values in choices + TEMPORAL_FALLBACKS]


def candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
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
            if local_mem(params, itemsize) <= facts["local_mem"]:
                found.append((params, None))
                break
    return found


def cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
         facts: Mapping) -> float:
    """GPUs: resident groups per compute unit (work-items, registers, local memory), the
    span's cells and a barrier each step, the span read and written once per launch."""
    m, n = shape
    if facts["is_cpu"]:
        return streaming_cost(m * n, itemsize, facts)
    k = p["max_steps"]
    tile_w, tile_h = tile(p)
    span = (tile_w + 2 * k) * (tile_h + 2 * k)
    groups = math.ceil(n / tile_w) * math.ceil(m / tile_h)
    wg = p["local_w"] * p["local_h"]
    regs = 3 * p["rows"] * p["cols"] + 24
    per_cu = max(1, min(2048 // wg, 65536 // (wg * regs),
                        (3 * facts["local_mem"]) // max(1, local_mem(p, itemsize))))
    waves = math.ceil(groups / (facts["cus"] * per_cu))
    # Cells a multiprocessor updates per second, shared by its resident groups; a barrier
    # per step costs about as much as 64 cells.
    rate = (16e9 if itemsize == 4 else 8e9) * (0.5 + 0.5 * min(1.0, wg / 256))
    concurrent = min(per_cu, math.ceil(groups / facts["cus"]))
    step = waves * concurrent * (span + 64 * (3 - p["buffers"])) / rate
    traffic = groups * span * 2 * itemsize / GPU_BANDWIDTH
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + k * step + traffic) / k


SPEC = JacobiSpec(
    name="temporal", template="jacobi/temporal",
    summary="temporal blocking in registers, for GPUs",
    params=PARAMS, arguments=GRID_ARGUMENTS + (STEPS,), launch=launch,
    defaults=defaults, cost=cost, steps_param="max_steps",
    work_group=lambda p: (p["local_w"], p["local_h"]), local_mem=local_mem, check=check,
    candidates=candidates, suits=GPU, auto_on=GPU, tuned_on=GPU,
    tile=lambda p: tile(p)[::-1],
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
