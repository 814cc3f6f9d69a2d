"""``tiled``: temporal blocking in local memory, 2-D and 3-D (``kernels/stencil/tiled.cl.mako``).

A work-group loads a span (its tile and a halo of radius x ``max_steps`` cells on each side)
once, does ``max_steps`` steps in local memory (the halo recomputed by its neighbours, a
barrier per step) and writes its tile: the generalisation of Jacobi's ``temporal`` kernel to
any radius, u.prev and 3-D.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from oclsci.kernelspec import GPU, Launch, Param
from oclsci.stencil.specs import (
    WINDOW_ARGUMENTS,
    Geometry,
    StencilKernelSpec,
    blocked_steps,
    span,
    tile,
)

PARAMS = (
    Param("local_w", high=1024), Param("local_h", high=1024),
    Param("local_d", default=1, high=1024),
    Param("cells_x", default=1, high=64), Param("cells_y", default=1, high=64),
    Param("cells_z", default=1, high=64),
    Param("max_steps", high=64),
)
KEYS = ("local_w", "local_h", "local_d", "cells_x", "cells_y", "cells_z")


def check(p: Mapping, geo: Geometry) -> str | None:
    """A tile inside the halo on every axis; in 2-D no third axis."""
    if geo.dims == 2 and (p["local_d"], p["cells_z"]) != (1, 1):
        return "local_d and cells_z are for 3-D grids"
    if min(tile(p, geo)) < 1:
        return (f"span {'x'.join(map(str, span(p, geo)))} leaves no tile inside a halo of "
                f"{geo.radius} x {p['max_steps']} steps")
    return None


def local_mem(p: Mapping, geo: Geometry) -> int:
    """Two levels of the span (three with u.prev)."""
    return (3 if geo.uses_prev else 2) * math.prod(span(p, geo)) * geo.itemsize


def launch(p: Mapping, geo: Geometry) -> Launch:
    """One work-group per tile of the layers the launch writes (``z_first`` ..
    ``z_stop - 1`` along the slowest axis when given, else all)."""
    local = (p["local_w"], p["local_h"]) + ((p["local_d"],) if geo.dims == 3 else ())
    tiles = tile(p, geo)[::-1]
    layers = max(1, p.get("z_stop", geo.shape[0]) - p.get("z_first", 0))
    sizes = ((layers,) + geo.shape[1:])[::-1]
    return (tuple(math.ceil(s / t) * g for s, t, g in zip(sizes, tiles, local, strict=True)),
            local)


# Work-group and cells (local_w, local_h, local_d, cells_x, cells_y, cells_z), best first;
# steps per launch follow from the span and the radius (blocked_steps). On CPUs (PoCL) one
# cell per work-item: PoCL loops over the work-items between barriers, and many cells per
# item made it 50x slower on benchmarks/stencil_cpu.py.
SHAPES = {
    (2, "gpu"): [(64, 8, 1, 1, 8, 1), (64, 8, 1, 1, 4, 1), (32, 8, 1, 1, 4, 1),
                 (16, 8, 1, 1, 2, 1), (8, 4, 1, 1, 2, 1)],
    (2, "cpu"): [(128, 16, 1, 1, 1, 1), (64, 16, 1, 1, 1, 1)],
    (3, "gpu"): [(32, 4, 2, 1, 4, 8), (32, 4, 2, 1, 2, 4), (16, 4, 2, 1, 2, 4),
                 (8, 4, 2, 1, 2, 2), (16, 2, 2, 1, 5, 5)],
    (3, "cpu"): [(32, 8, 8, 1, 1, 1), (16, 8, 8, 1, 2, 2)],
}


def defaults(facts: Mapping, geo: Geometry) -> list[dict]:
    """Spans of :data:`SHAPES` for the device kind, with the most steps whose halo takes at
    most a quarter of the span's narrowest axis (at most 8)."""
    found = []
    for values in SHAPES[(geo.dims, "cpu" if facts["is_cpu"] else "gpu")]:
        p = dict(zip(KEYS, values, strict=True), max_steps=1)
        p["max_steps"] = blocked_steps(min(span(p, geo)), geo.radius, 8)
        found.append(p)
    return found


def candidates(facts: Mapping, geo: Geometry) -> list[dict]:
    """Work-groups of 32 to 1024 items (2-D: 16-64 wide, 1-16 high; 3-D: 16-32 x 2-8 x 1-4),
    up to 16 cells per item, 1 to 8 steps, tiles at least a third of their span."""
    if geo.dims == 2:
        space = itertools.product((16, 32, 64), (1, 2, 4, 8, 16), (1,), (1, 2), (1, 2, 4, 8),
                                  (1,), (1, 2, 3, 4, 6, 8))
    else:
        space = itertools.product((16, 32), (2, 4, 8), (1, 2, 4), (1,), (1, 2, 4), (1, 2, 4),
                                  (1, 2, 3, 4))
    found = []
    for *shape, steps in space:
        p = dict(zip(KEYS, shape, strict=True), max_steps=steps)
        items = p["local_w"] * p["local_h"] * p["local_d"]
        cells = p["cells_x"] * p["cells_y"] * p["cells_z"]
        if not 32 <= items <= facts["max_wg"] or cells > 16 or check(p, geo):
            continue
        if math.prod(tile(p, geo)) < math.prod(span(p, geo)) / 3:
            continue
        if local_mem(p, geo) <= facts["local_mem"]:
            found.append(p)
    return found


def cost(p: Mapping, geo: Geometry, facts: Mapping) -> float:
    """Per step: the span's cells computed (a GPU: about 1e11 cell updates/s, a CPU core
    1e9), the span read and the tile written once per launch (3 TB/s, 10 GB/s a core)."""
    tiles = math.prod(math.ceil(s / t) for s, t in zip(geo.shape, tile(p, geo), strict=True))
    cells = tiles * math.prod(span(p, geo))
    compute = 1e9 * facts["cus"] if facts["is_cpu"] else 1e11
    bandwidth = 1e10 * facts["cus"] if facts["is_cpu"] else 3e12
    traffic = (cells + geo.cells) * geo.itemsize / bandwidth / p["max_steps"]
    return cells / compute + traffic + 5e-6 / p["max_steps"]


SPEC = StencilKernelSpec(
    name="tiled", template="stencil/tiled",
    summary="temporal blocking of a tile in local memory, several steps a launch",
    params=PARAMS, launch=launch, defaults=defaults, steps_param="max_steps",
    local_mem=local_mem, check=check, candidates=candidates, cost=cost,
    arguments=WINDOW_ARGUMENTS, suits=GPU,
)
