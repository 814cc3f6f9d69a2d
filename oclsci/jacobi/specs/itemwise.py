"""The Jacobi kernels whose work-items never wait on one another (no barrier, no local memory).

- ``seed``: the talk's kernel, one step per launch, work-item dimension 0 along rows;
- ``coalesced``: one step per launch, work-item dimension 0 along columns, ``vector`` columns
  and ``rows_per_item`` rows per work-item: the streaming kernel for large grids;
- ``bands``: Jacobi for CPUs, several steps per launch. Each work-item advances tiles of
  ``band_h`` rows x ``band_w`` columns (0: the whole width) ``max_steps`` steps in a private
  slot of a scratch buffer, recomputing a shrinking halo.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from oclsci.jacobi.specs import (
    CPU_CACHE_PER_CU,
    CPU_LAUNCH,
    GRID_ARGUMENTS,
    STEPS,
    JacobiSpec,
    cpu_stream_rate,
    streaming_cost,
)
from oclsci.kernelspec import BOTH, CPU, Argument, Param, round_up

# -- seed ------------------------------------------------------------------------------------------

def seed_launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-item per padded cell, dimension 0 along rows."""
    if local_size is None:
        return (m + 2, n + 2), None
    return (round_up(m + 2, local_size[0]), round_up(n + 2, local_size[1])), local_size


def seed_defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """No parameters to choose."""
    return [({}, None)]


def seed_cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
              facts: Mapping) -> float:
    """Strided reads: twice the streaming time on CPUs, four times on GPUs."""
    return streaming_cost(shape[0] * shape[1], itemsize, facts, cpu_passes=2, gpu_penalty=4.0)


SEED = JacobiSpec(
    name="seed", template="jacobi/seed",
    summary="the talk's kernel, one step per launch",
    params=(), arguments=GRID_ARGUMENTS,
    launch=seed_launch, defaults=seed_defaults, cost=seed_cost,
    examples=(({}, None),),
    corner_cases=(({}, None), ({}, (4, 8)), ({}, (16, 1))),
)


# -- coalesced -------------------------------------------------------------------------------------

COALESCED_PARAMS = (
    Param("rows_per_item", default=1, high=64, test_values=range(1, 10)),
    # PoCL 3.0 miscompiles some wider double vectors.
    Param("vector", default=1, choices=(1, 2, 4)),
)
# Work-group shapes the tuner tries on GPUs.
COALESCED_GPU_SHAPES = [(32, 4), (32, 8), (64, 4), (128, 2), (256, 1), (64, 8), (128, 4),
                        (32, 16), (64, 2), (128, 1)]


def coalesced_launch(p: Mapping, local_size: Any, m: int, n: int):
    """``vector`` columns (an aligned group of them when wider than 1) by ``rows_per_item``
    rows per work-item."""
    vector = p["vector"]
    columns = n if vector == 1 else math.ceil((n + 1) / vector)
    rows = math.ceil(m / p["rows_per_item"])
    if local_size is None:
        return (columns, rows), None
    return (round_up(columns, local_size[0]), round_up(rows, local_size[1])), local_size


def coalesced_defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """CPUs: four rows per item. GPUs: from `oclsci tune` for 16384^2 on an H100 and an H200
    (docs/performance.md), within 1-2% of the best of either (float32), 16-byte vectors
    (float64); then narrower groups for devices or kernels allowing fewer work-items."""
    if facts["is_cpu"]:
        return [({"rows_per_item": 4}, None)]
    params, shapes = (({"rows_per_item": 4, "vector": 2}, [(128, 4), (64, 4), (32, 4)])
                      if np.dtype(dtype).itemsize == 4 else
                      ({"rows_per_item": 2, "vector": 2}, [(64, 8), (32, 8), (16, 8)]))
    return [(dict(params), shape) for shape in shapes] + [(dict(params), None)]


def coalesced_candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
    """Vectors, rows per item and (on GPUs) work-group shapes."""
    shapes = [None] if facts["is_cpu"] else COALESCED_GPU_SHAPES
    return [({"rows_per_item": rows, "vector": vector}, local)
            for vector, rows, local in itertools.product((4, 2, 1), (1, 2, 4, 8), shapes)
            if not (local and local[0] * local[1] > facts["max_wg"])]


def coalesced_cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
                   facts: Mapping) -> float:
    """Streaming; on GPUs narrow vectors and single rows cost a little more."""
    penalty = 1.0 + 0.15 / p["vector"] + 0.1 / p["rows_per_item"]
    return streaming_cost(shape[0] * shape[1], itemsize, facts, gpu_penalty=penalty)


COALESCED = JacobiSpec(
    name="coalesced", template="jacobi/coalesced",
    summary="one step per launch, several rows per work-item",
    params=COALESCED_PARAMS,
    arguments=GRID_ARGUMENTS, launch=coalesced_launch, defaults=coalesced_defaults,
    cost=coalesced_cost, candidates=coalesced_candidates, tuned_on=BOTH,
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


# -- bands -----------------------------------------------------------------------------------------

BANDS_PARAMS = (
    Param("band_h", high=2**24, test_values=range(1, 25)),
    Param("band_w", default=0, low=0, high=2**24, test_values=(0, 1, 3, 16, 33)),
    Param("max_steps", high=1024, test_values=range(1, 11)),
    Param("workers", default=1, high=65536, template=False, test_values=range(1, 7)),
)
BANDS_ARGUMENTS = GRID_ARGUMENTS + (STEPS, Argument("scratch", "buffer"),
                                    Argument("scratch_row"), Argument("scratch_half", "long"))
# Cache a work-item's two scratch halves should fit in, by default: the second-level cache of
# a Zen 3 core. The tuner's fastest shapes there, on PoCL and on Intel's runtime, at 266x400
# (bands of 133 rows) and 1024x1024 (43 rows), hold halves of 491-570 KB (docs/benchmarks.md).
BANDS_CACHE_BYTES = 512 * 1024


def bands_layout(p: Mapping, m: int, n: int) -> dict:
    """Tiles, workers and scratch sizes (elements) on an m x n grid."""
    band_h, k = p["band_h"], p["max_steps"]
    band_w = p["band_w"] or n
    tiles = math.ceil(m / band_h) * math.ceil(n / band_w)
    workers = max(1, min(p["workers"], tiles))
    scratch_row = round_up(band_w + 2 * k, 16)
    scratch_half = scratch_row * (band_h + 2 * k)
    return {"tiles": tiles, "workers": workers, "scratch_row": scratch_row,
            "scratch_half": scratch_half, "scratch_elements": 2 * scratch_half * workers}


def bands_launch(p: Mapping, local_size: Any, m: int, n: int):
    """One work-item per worker."""
    return (bands_layout(p, m, n)["workers"],), (1,)


def bands_defaults(facts: Mapping, dtype: Any, shape: Any) -> list:
    """Equal bands, a multiple of the number of cores of them, each small enough that a
    work-item's two scratch halves stay in its core's cache."""
    m, n = shape or (256, 256)
    steps = 8
    band_w = n if n <= 1024 else 512
    elements = BANDS_CACHE_BYTES // np.dtype(dtype).itemsize
    band_h_max = max(8, elements // (round_up(band_w + 2 * steps, 16)) // 2 - 2 * steps)
    tiles_h = round_up(max(math.ceil(m / band_h_max), 1), facts["cus"])
    band_h = max(1, math.ceil(m / tiles_h))
    return [({"band_h": band_h, "band_w": 0 if band_w == n else band_w, "max_steps": steps,
              "workers": facts["cus"]}, None)]


def bands_candidates(shape: tuple[int, int], dtype: Any, facts: Mapping) -> list:
    """Steps per launch, band widths and bands per core."""
    m, n = shape
    cus = facts["cus"]
    found: list = []
    widths = [0] if n <= 1024 else [256, 512, 1024, 0]
    for steps, band_w, bands_per_worker in itertools.product(
            (1, 2, 4, 8, 16, 32), widths, (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)):
        tiles_h = cus * bands_per_worker
        band_h = math.ceil(m / tiles_h)
        if band_h < 1 or (band_h == 1 and bands_per_worker > 1 and tiles_h > m):
            continue
        choice = ({"band_h": band_h, "band_w": band_w, "max_steps": steps, "workers": cus},
                  None)
        if choice not in found:
            found.append(choice)
    return found


def bands_cost(p: Mapping, local_size: Any, shape: tuple[int, int], itemsize: int,
               facts: Mapping) -> float:
    """CPUs: the tiles and their halos, from cache when the scratch fits in it, in waves
    of one tile per core. GPUs: not modelled (one work-item per core starves them)."""
    if not facts["is_cpu"]:
        return 1.0
    m, n = shape
    cus = facts["cus"]
    parts = bands_layout(p, m, n)
    k = p["max_steps"]
    band_w = p["band_w"] or n
    halo = ((p["band_h"] + k) * (band_w + k)) / (p["band_h"] * band_w)
    working_set = 2 * parts["scratch_half"] * itemsize
    rate = (CPU_CACHE_PER_CU * cus if working_set <= 512 * 1024
            else cpu_stream_rate(itemsize, facts) * 2)
    waves = math.ceil(parts["tiles"] / min(cus, parts["workers"])) / (
        parts["tiles"] / min(cus, parts["workers"]))
    return CPU_LAUNCH / k + m * n * halo * waves / rate


BANDS = JacobiSpec(
    name="bands", template="jacobi/bands",
    summary="bands of rows, several steps per launch, for CPUs",
    params=BANDS_PARAMS, arguments=BANDS_ARGUMENTS, launch=bands_launch, defaults=bands_defaults,
    cost=bands_cost, steps_param="max_steps", work_group=lambda p: (1,), scratch=bands_layout,
    candidates=bands_candidates, suits=CPU, auto_on=CPU, tuned_on=CPU,
    tile=lambda p: (p["band_h"], p["band_w"] or 16),
    work_per_item=lambda p, shape, items: -(-(shape[0] * shape[1] * 3) // items),
    examples=(({"band_h": 5, "band_w": 7, "max_steps": 3, "workers": 3}, None),
              ({"band_h": 64, "band_w": 0, "max_steps": 8, "workers": 2}, None),
              ({"band_h": 1, "band_w": 0, "max_steps": 1, "workers": 1}, None),
              ({"band_h": 3, "band_w": 500, "max_steps": 4, "workers": 2}, None)),
    corner_cases=(({"band_h": 1, "band_w": 0, "max_steps": 1, "workers": 1}, None),
                  ({"band_h": 3, "band_w": 5, "max_steps": 2, "workers": 2}, None),
                  ({"band_h": 7, "band_w": 16, "max_steps": 4, "workers": 3}, None),
                  ({"band_h": 2, "band_w": 0, "max_steps": 3, "workers": 64}, None),
                  ({"band_h": 16, "band_w": 1, "max_steps": 8, "workers": 2}, None)),
)
