"""``streaming``: streaming (2.5-D) temporal blocking, for GPUs.

A work-group walks down a strip of columns, ``rows`` rows per advance and ``max_steps`` steps
per pass, keeping ``rows_apart + 1 + rows`` rows per step in registers (and, with
``rhs_in_regs``, the right-hand side of each step's rows); only the strip's sides are a
recomputed halo (kernels/jacobi/streaming.cl.mako). ``auto`` takes it on GPUs for large grids.
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
from oclsci.kernelspec import GPU, Param, round_up

PARAMS = (
    Param("cols", default=2, choices=(1, 2, 4)),
    Param("local_w", high=1024, test_values=(1, 2, 4, 8, 16, 32)),
    Param("max_steps", high=64, test_values=range(1, 13)),
    Param("seg_h", high=1 << 16, test_values=(1, 2, 3, 5, 8, 16, 64)),
    Param("skew", default=1, choices=(1, 2)),
    Param("rows", default=1, choices=(1, 2, 3, 4)),
    Param("rhs_in_regs", kind=bool, default=False, test_values=(False, True)),
    Param("edge_levels", default=1, choices=(1, 2, 4)),
    Param("prefetch", default=1, high=8, test_values=(1, 2, 3, 4)),
)
KEYS = ("cols", "local_w", "max_steps", "seg_h", "skew", "rows", "rhs_in_regs", "edge_levels",
        "prefetch")

# Defaults (cols, local_w, max_steps, seg_h, skew, rows, rhs_in_regs, edge_levels, prefetch) by
# grid size (more than 2^20 cells: large) and item size: the large ones the fastest of sweeps
# at 16384^2 on an H100 (docs/bench/h100-streaming-sweeps.md), the small ones from a short
# sweep at 266x400 whose output was not kept (temporal is 6x faster there,
# docs/bench/h100-issue19-streaming.md); then smaller ones for devices with less local memory
# or smaller work-groups.
STREAMING_DEFAULTS = {
    ("small", 4): [(1, 32, 8, 16, 2, 1, False, 1, 1)],
    ("small", 8): [(1, 32, 8, 16, 2, 1, False, 1, 1)],
    ("large", 4): [(2, 128, 16, 256, 1, 1, True, 4, 3)],
    ("large", 8): [(2, 128, 11, 288, 1, 1, True, 1, 4)],
}
STREAMING_FALLBACKS = [(2, 64, 8, 256, 1, 1, True, 1, 2), (1, 32, 4, 256, 1, 1, True, 1, 1)]
# Grids from which ``auto`` takes this kernel on GPUs rather than ``temporal``: on an H100 the
# defaults cross between 2^25 and 2^25.5 cells in float32 (temporal 2.5% ahead at 5793^2,
# 6.5% behind at 6889^2) and between 2^24.5 and 2^25 in float64 (6% ahead at 4871^2, 20%
# behind at 5793^2): from 2^25 float32 loses at most a few percent where float64 gains a
# fifth or more (docs/performance.md).
AUTO_MIN_CELLS = 1 << 25


def rows_apart(p: Mapping) -> int:
    """Rows between consecutive levels: ``rows`` with ``skew`` 1 (a level needs the row the
    level below computed at the same advance), one more with ``skew`` 2 (it does not)."""
    return p["rows"] + p["skew"] - 1


def halos(p: Mapping) -> tuple[int, int]:
    """(left halo, tile width): the halo is the multiple of ``cols`` >= ``max_steps``; the
    tile a multiple of ``cols`` that leaves at least ``max_steps`` columns on the right."""
    cols, steps = p["cols"], p["max_steps"]
    left = cols * -(-steps // cols)
    return left, (p["local_w"] * cols - left - steps) // cols * cols


def geometry(p: Mapping) -> dict:
    """What the template derives from the parameters: the levels' row spacing
    (:func:`rows_apart`), the halo and tile (:func:`halos`), the row slots per level
    (``rows_apart + 1 + rows`` live, rounded up to a multiple of ``rows``), the advances
    before the slots' rotation repeats, and the groups of ``edge_levels`` levels."""
    left, tile_w = halos(p)
    rows = p["rows"]
    slots = rows * -(-(rows_apart(p) + 1 + rows) // rows)
    return {"rows_apart": rows_apart(p), "halo": left, "tile_w": tile_w, "slots": slots,
            "period": slots // rows, "edge_groups": -(-p["max_steps"] // p["edge_levels"])}


# The Jacobi update in the template's operands (kernels/jacobi/streaming.cl.mako renders any
# 2-D five-point update; oclsci/stencil/specs/streaming.py renders a stencil's): B streamed
# from the kernel argument ``rhs`` into registers ``b``, no scalar arguments.
JACOBI_UPDATE = {"update": "(real_t)0.25 * ({up} + {down} + {left} + {right} - {b})",
                 "fields": (("rhs", "b"),), "scalars": ()}


def jacobi_template_params(p: Mapping) -> dict:
    """The template's derived parameters for Jacobi: the :func:`geometry` and the Jacobi
    update (:data:`JACOBI_UPDATE`)."""
    return dict(geometry(p), **JACOBI_UPDATE)


def check(p: Mapping) -> str | None:
    """A strip that leaves no tile inside the halo cannot work; B passed from level to level
    in registers needs consecutive levels one advance apart (skew 1)."""
    if halos(p)[1] < p["cols"]:
        return (f"strip of {p['local_w']}x{p['cols']} columns leaves no tile inside a halo "
                f"of {p['max_steps']}")
    if p["rhs_in_regs"] and p["skew"] != 1:
        return "rhs_in_regs needs skew=1"
    return None


def local_mem(p: Mapping, itemsize: int) -> int:
    """Both edges of every level's rows, for two parities (levels in groups of
    ``edge_levels``, the last group padded)."""
    levels = round_up(p["max_steps"], p["edge_levels"])
    return 2 * 2 * levels * p["rows"] * p["local_w"] * itemsize


def launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-group of ``local_w`` per strip tile and segment of ``seg_h`` rows; tiles
    start at column 0 (aligned), so they cover columns 0 .. n."""
    tile_w = halos(p)[1]
    return ((math.ceil((n + 1) / tile_w) * p["local_w"], math.ceil(m / p["seg_h"])),
            (p["local_w"], 1))


# The end of a launch costs about this many work-groups' durations: its last groups finish
# while no group of the next launch may start. Fitted on an H200 (132 compute units,
# benchmarks/slab_rates.py, docs/mpi.md): with it, the segment height below was within 1% of
# the fastest for 16384, 8175, 4130 and 4079 rows of 16384 columns.
LAUNCH_END_WAVES = 1.6


# Bands of rows that one GPU runs on queues of their own (oclsci/jacobi/concurrent.py): one
# band's launch ends while the others' launches fill the device. On one H200, float32
# (docs/bench/h200-concurrent-bands-2026-11-28.md): 16384^2 ran 8.6% faster in 4 bands, 7% in
# 5 or 6, 5% in 8, 3% in 3 and 1.4% slower in 2; 4 bands gained 3.3% on 32768^2, 10% on
# 8158 x 16384, 7% on 4062 x 16384 (bands of 1015 rows), 6% on 6000^2, 6% on 16384^2
# float64.
QUEUE_BANDS = 4
MIN_BAND_ROWS = 1000
# An MPI rank's interior in bands (oclsci/mpi/overlap.py): its edge bands wait for the exchange
# once a period, and the bands gain less. On H200s, 16384 columns, float32: an 8175-row
# interior (two GPUs) ran 2.5% faster in 4 bands, a 4079-row one (four GPUs) 6-18% slower in
# 4 bands and 5% slower in 2 (docs/bench/h200x4-interior-bands-2026-11-28.md).
MIN_EXCHANGED_BAND_ROWS = 2000


def queue_bands(p: Mapping, shape: tuple[int, int], on_gpu: bool,
                exchanged: bool = False) -> int:
    """:data:`QUEUE_BANDS` on GPUs for grids where ``auto`` takes this kernel and each band
    gets at least :data:`MIN_BAND_ROWS` rows (:data:`MIN_EXCHANGED_BAND_ROWS` in a rank's
    ``exchanged`` interior), else one (not measured on CPUs, where auto does not take this
    kernel, nor on smaller grids)."""
    least = MIN_EXCHANGED_BAND_ROWS if exchanged else MIN_BAND_ROWS
    large = shape[0] * shape[1] >= AUTO_MIN_CELLS and shape[0] >= QUEUE_BANDS * least
    return QUEUE_BANDS if on_gpu and large else 1


def resident_groups(p: Mapping, itemsize: int, facts: Mapping) -> int:
    """Work-groups resident at once on one compute unit: registers and local memory allow
    (a rough estimate)."""
    local_w = p["local_w"]
    return max(1, min(32, 2048 // local_w, 65536 // (local_w * registers(p, itemsize)),
                      (3 * facts["local_mem"]) // max(1, local_mem(p, itemsize))))


def segment_height(p: Mapping, shape: tuple[int, int], itemsize: int, facts: Mapping) -> int:
    """The height of ``m / k`` rows (64 to 1024) whose launch should take least: whole
    waves of work-groups over the device's compute units, each group's rows plus the
    segment's ``(1 + rows_apart) x max_steps`` extra rows, and the launch's end. Short grids
    (one rank's slab) gain most: a quarter of 16384^2 ran 11% faster on an H200 at 128 rows
    than at 256."""
    m, n = shape
    extra = (1 + rows_apart(p)) * p["max_steps"]
    strips = math.ceil((n + 1) / halos(p)[1])
    capacity = facts["cus"] * resident_groups(p, itemsize, facts)
    heights = {math.ceil(m / k) for k in range(1, m // 64 + 1)}
    heights = [h for h in heights if max(64, 2 * p["max_steps"]) <= h <= 1024]
    if not heights:
        return p["seg_h"]

    def estimate(h: int) -> tuple[float, int]:
        waves = math.ceil(strips * math.ceil(m / h) / capacity)
        return (waves + LAUNCH_END_WAVES) * (h + extra), h
    return min(heights, key=estimate)


def defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """The first that fits the device wins; on a GPU (facts given), segments cut to fit the
    grid's height (:func:`segment_height`)."""
    large = shape is not None and shape[0] * shape[1] > 2**20
    itemsize = np.dtype(dtype).itemsize
    choices = STREAMING_DEFAULTS[("large" if large else "small", itemsize)] + STREAMING_FALLBACKS
    fit = large and {"cus", "local_mem"} <= set(facts) and not facts.get("is_cpu", True)
    found = []
    for values in choices:
        params = dict(zip(KEYS, values, strict=True))
        if fit:
            params["seg_h"] = segment_height(params, tuple(shape), itemsize, facts)
        found.append((params, None))
    return found


def registers(p: Mapping, itemsize: int) -> int:
    """Rough 32-bit registers per work-item: ``rows_apart + 1 + rows`` rows of ``cols`` per
    level (and ``rows`` of B with ``rhs_in_regs``), the rows loaded ahead, and the rest. The
    template rounds its slots up to a multiple of ``rows``; only these are live. NVIDIA's
    compiler gave 168 for the float32 default (estimate 164) and 253 for float64's (232)."""
    slots = rows_apart(p) + 1 + p["rows"] + (p["rows"] if p["rhs_in_regs"] else 0)
    ahead = 2 * p["prefetch"] * p["rows"]  # rows of X and B loaded ahead
    return (slots * p["max_steps"] + ahead) * p["cols"] * itemsize // 4 + 24


def candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
    """Strips of 128 to 1024 columns, 4 to 16 steps, segments of 64 to 1024 rows, one or two
    rows per advance, B kept in registers where skew allows (it never lost in the sweeps),
    the next rows loaded 1 to 4 advances ahead, edges of one or four levels per local-memory
    access; tiles at least half their strip, registers (the rough estimate) at most 240, not
    much larger than the grid."""
    m, n = shape
    itemsize = np.dtype(dtype).itemsize
    found = []
    for cols, local_w, steps, seg_h, skew, rows, prefetch, edge_levels in itertools.product(
            (1, 2, 4), (32, 64, 128, 256), (4, 6, 8, 10, 12, 14, 16),
            (64, 128, 256, 384, 512, 1024), (1, 2), (1, 2), (1, 2, 3, 4), (1, 4)):
        params = {"cols": cols, "local_w": local_w, "max_steps": steps, "seg_h": seg_h,
                  "skew": skew, "rows": rows, "rhs_in_regs": skew == 1,
                  "edge_levels": edge_levels, "prefetch": prefetch}
        if edge_levels > 1 and steps % edge_levels:
            continue
        tile_w = halos(params)[1]
        if not 128 <= local_w * cols <= 1024 or local_w > facts["max_wg"]:
            continue
        if tile_w < 0.5 * local_w * cols or registers(params, itemsize) > 240:
            continue
        if tile_w > 2 * n + 32 or seg_h > 2 * m + 64 or seg_h < 2 * steps:
            continue
        if local_mem(params, itemsize) <= facts["local_mem"]:
            found.append((params, None))
    return found


def cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
         facts: Mapping) -> float:
    """GPUs: resident groups per compute unit (registers, local memory), the strip's cells
    over the segment and its (1 + rows_apart) x max_steps extra rows, per advance the edges'
    local-memory accesses and a barrier, stalls on loads, the strip read and the tile written
    once per launch."""
    m, n = shape
    if facts["is_cpu"]:
        return streaming_cost(m * n, itemsize, facts)
    k, local_w, seg_h = p["max_steps"], p["local_w"], p["seg_h"]
    tile_w = halos(p)[1]
    if tile_w < 1:
        return math.inf
    groups = math.ceil((n + 1) / tile_w) * math.ceil(m / seg_h)
    per_cu = resident_groups(p, itemsize, facts)
    waves = math.ceil(groups / (facts["cus"] * per_cu))
    rows = min(seg_h, m) + (1 + rows_apart(p)) * k
    rate = (16e9 if itemsize == 4 else 8e9) * min(1.0, per_cu * local_w / 512)
    concurrent = min(per_cu, math.ceil(groups / facts["cus"]))
    # Loads of B per level, and next rows loaded one advance ahead only, stall the advances.
    stalls = (1.0 if p["rhs_in_regs"] else 1.3) * (1 + 0.3 / p["prefetch"])
    # Per row and level: the cells, and the edges' local stores and loads (shared by
    # edge_levels levels); per advance (rows rows): the barrier.
    per_row = k * local_w * (p["cols"] + 1 / p["edge_levels"]) + 64 / p["rows"]
    launch_seconds = waves * concurrent * rows * per_row / rate * stalls
    traffic = groups * rows * local_w * p["cols"] * 3 * itemsize / GPU_BANDWIDTH
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + launch_seconds + traffic) / k


STREAMING = JacobiSpec(
    name="streaming", template="jacobi/streaming",
    summary="temporal blocking streamed down the grid, for large grids on GPUs",
    params=PARAMS, arguments=GRID_ARGUMENTS + (STEPS,), launch=launch,
    defaults=defaults, cost=cost, steps_param="max_steps",
    work_group=lambda p: (p["local_w"], 1), local_mem=local_mem, check=check,
    derived=jacobi_template_params,
    candidates=candidates, suits=GPU, auto_on=GPU, auto_min_cells=AUTO_MIN_CELLS, tuned_on=GPU,
    tile=lambda p: (p["seg_h"], halos(p)[1]),
    queue_bands=queue_bands,
    work_per_item=lambda p, shape, items: p["cols"] * (min(p["seg_h"], shape[0])
                                                       + (1 + rows_apart(p)) * p["max_steps"]),
    examples=(
        ({"cols": 2, "local_w": 8, "max_steps": 3, "seg_h": 5, "skew": 2}, None),
        ({"cols": 1, "local_w": 16, "max_steps": 5, "seg_h": 16}, None),
        ({"cols": 4, "local_w": 4, "max_steps": 2, "seg_h": 3, "skew": 2}, None),
        ({"cols": 2, "local_w": 8, "max_steps": 4, "seg_h": 7, "rows": 2}, None),
        ({"cols": 1, "local_w": 16, "max_steps": 3, "seg_h": 10, "skew": 2, "rows": 3}, None),
        ({"cols": 2, "local_w": 8, "max_steps": 5, "seg_h": 9, "rhs_in_regs": True}, None),
        ({"cols": 4, "local_w": 4, "max_steps": 3, "seg_h": 6, "rows": 2, "rhs_in_regs": True},
         None),
        ({"cols": 2, "local_w": 16, "max_steps": 7, "seg_h": 12, "rhs_in_regs": True,
          "edge_levels": 2}, None),
        ({"cols": 1, "local_w": 32, "max_steps": 6, "seg_h": 9, "skew": 2, "rows": 2,
          "edge_levels": 4}, None),
        ({"cols": 2, "local_w": 16, "max_steps": 6, "seg_h": 11, "rhs_in_regs": True,
          "edge_levels": 4, "prefetch": 2}, None),
        ({"cols": 4, "local_w": 8, "max_steps": 3, "seg_h": 4, "rows": 2, "prefetch": 3},
         None),
        ({"cols": 1, "local_w": 16, "max_steps": 4, "seg_h": 13, "rhs_in_regs": True,
          "edge_levels": 4, "prefetch": 6}, None)),
    corner_cases=(
        ({"cols": 2, "local_w": 4, "max_steps": 1, "seg_h": 1, "skew": 2}, None),
        ({"cols": 1, "local_w": 16, "max_steps": 4, "seg_h": 8}, None),
        ({"cols": 4, "local_w": 8, "max_steps": 6, "seg_h": 2, "skew": 2}, None),
        ({"cols": 4, "local_w": 4, "max_steps": 3, "seg_h": 64}, None),
        ({"cols": 2, "local_w": 32, "max_steps": 12, "seg_h": 16}, None),
        ({"cols": 2, "local_w": 4, "max_steps": 1, "seg_h": 1, "rows": 2}, None),
        ({"cols": 4, "local_w": 8, "max_steps": 5, "seg_h": 9, "skew": 2, "rows": 2}, None),
        ({"cols": 1, "local_w": 16, "max_steps": 1, "seg_h": 2, "rhs_in_regs": True}, None),
        ({"cols": 4, "local_w": 8, "max_steps": 4, "seg_h": 13, "rows": 3, "rhs_in_regs": True},
         None),
        ({"cols": 2, "local_w": 8, "max_steps": 1, "seg_h": 3, "edge_levels": 2}, None),
        ({"cols": 1, "local_w": 16, "max_steps": 5, "seg_h": 7, "rhs_in_regs": True,
          "edge_levels": 4}, None),
        ({"cols": 4, "local_w": 8, "max_steps": 6, "seg_h": 4, "skew": 2, "rows": 2,
          "edge_levels": 2}, None),
        ({"cols": 2, "local_w": 8, "max_steps": 2, "seg_h": 1, "prefetch": 2}, None),
        ({"cols": 2, "local_w": 8, "max_steps": 3, "seg_h": 7, "rows": 2, "rhs_in_regs": True,
          "prefetch": 8}, None),
        ({"cols": 4, "local_w": 8, "max_steps": 6, "seg_h": 9, "rows": 2, "rhs_in_regs": True,
          "edge_levels": 2, "prefetch": 2}, None)),
)
