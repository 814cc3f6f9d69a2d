"""``stream``: streaming (2.5-D) temporal blocking, 2-D and 3-D
(``kernels/stencil/stream.cl.mako``).

A work-group owns a tile of the plane across the slowest axis (and a halo of radius x
``max_steps`` cells around it, recomputed by its neighbours) and marches along the slowest
axis over a segment of ``seg`` planes, reading each plane once from global memory and doing
``max_steps`` steps on the way, each level keeping the planes it needs in local memory: one
barrier per plane. Jacobi's ``streaming`` kernel generalised to any radius, u.prev and 3-D.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from oclsci.kernelspec import GPU, Argument, Launch, Param
from oclsci.stencil.specs import (
    WINDOW_ARGUMENTS,
    Geometry,
    StencilKernelSpec,
    blocked_steps,
    span,
    tile,
)

PARAMS = (
    Param("local_w", high=1024), Param("local_h", default=1, high=1024),
    Param("cells_x", default=1, high=64), Param("cells_y", default=1, high=64),
    Param("max_steps", high=32),
    Param("seg", high=1 << 20, template=False),
)
KEYS = ("local_w", "local_h", "cells_x", "cells_y")
LOCAL_BUDGET = 32 * 1024  # bytes of local memory a default takes at most on a GPU


def slots(p: Mapping, geo: Geometry) -> int:
    """Planes each level keeps: 2 radius + 2, one more when u.prev reads level t - 2."""
    return 2 * geo.radius + 2 + (1 if geo.uses_prev and p["max_steps"] > 1 else 0)


def check(p: Mapping, geo: Geometry) -> str | None:
    """A tile inside the halo; in 2-D a plane of one row."""
    if geo.dims == 2 and (p["local_h"], p["cells_y"]) != (1, 1):
        return "local_h and cells_y are for 3-D grids"
    if min(tile(p, geo, plane=True)) < 1:
        return (f"span {'x'.join(map(str, span(p, geo, plane=True)))} leaves no tile inside a "
                f"halo of {geo.radius} x {p['max_steps']} steps")
    return None


def local_mem(p: Mapping, geo: Geometry) -> int:
    """``slots`` planes of the span for each level below the top."""
    return p["max_steps"] * slots(p, geo) * math.prod(span(p, geo, plane=True)) * geo.itemsize


def launch(p: Mapping, geo: Geometry) -> Launch:
    """One work-group per tile and segment of the planes the launch writes (``z_first`` ..
    ``z_stop - 1`` when given, else all)."""
    local = (p["local_w"], p["local_h"]) if geo.dims == 3 else (p["local_w"],)
    plane = geo.shape[1:][::-1]
    groups = [math.ceil(s / t) * g
              for s, t, g in zip(plane, tile(p, geo, plane=True)[::-1], local, strict=True)]
    planes = p.get("z_stop", geo.shape[0]) - p.get("z_first", 0)
    return (tuple(groups) + (max(1, math.ceil(planes / p["seg"])),), local + (1,))


# Work-group and cells (local_w, local_h, cells_x, cells_y), best first, and the segment.
SHAPES = {
    (2, "gpu"): [(256, 1, 1, 1), (128, 1, 1, 1), (64, 1, 1, 1), (32, 1, 1, 1)],
    (2, "cpu"): [(256, 1, 1, 1), (64, 1, 1, 1)],
    (3, "gpu"): [(32, 8, 1, 4), (32, 8, 1, 2), (32, 4, 1, 2), (16, 4, 1, 2)],
    (3, "cpu"): [(64, 16, 1, 1), (32, 8, 1, 1)],
}
SEGMENT = {(2, "gpu"): 256, (2, "cpu"): 256, (3, "gpu"): 128, (3, "cpu"): 256}
# Steps per launch at most: on CPUs few (PoCL: 4 steps in 2-D ran 5x faster than 8, and one
# in 3-D 2x faster than two on benchmarks/stencil_cpu.py's grids).
MOST_STEPS = {(2, "gpu"): 8, (2, "cpu"): 4, (3, "gpu"): 4, (3, "cpu"): 1}


def fit_steps(p: dict, geo: Geometry, budget: int, most: int) -> dict:
    """``p`` with the most steps (up to ``most``) whose halo takes at most a quarter of the
    span's narrowest side and whose planes fit ``budget`` bytes."""
    p["max_steps"] = blocked_steps(min(span(p, geo, plane=True)), geo.radius, most)
    while p["max_steps"] > 1 and local_mem(p, geo) > budget:
        p["max_steps"] -= 1
    return p


def defaults(facts: Mapping, geo: Geometry) -> list[dict]:
    """Spans of :data:`SHAPES` for the device kind, segments of :data:`SEGMENT` planes
    (at most the grid's), the most steps that fit (:func:`fit_steps`, up to
    :data:`MOST_STEPS`)."""
    kind = "cpu" if facts["is_cpu"] else "gpu"
    budget = facts["local_mem"] if facts["is_cpu"] else min(facts["local_mem"], LOCAL_BUDGET)
    seg = min(SEGMENT[(geo.dims, kind)], geo.shape[0])
    return [fit_steps(dict(zip(KEYS, values, strict=True), seg=seg), geo, budget,
                      MOST_STEPS[(geo.dims, kind)])
            for values in SHAPES[(geo.dims, kind)]]


def candidates(facts: Mapping, geo: Geometry) -> list[dict]:
    """Spans of 64 to 1024 columns (3-D: 8 to 64 rows), 1 to 16 steps, segments of 32 to
    1024 planes; tiles at least half their span; work-groups of 32 to 1024 items."""
    if geo.dims == 2:
        shapes = itertools.product((32, 64, 128, 256, 512), (1,), (1, 2, 4), (1,))
        steps = (1, 2, 4, 6, 8, 12, 16)
    else:
        shapes = itertools.product((16, 32, 64), (4, 8, 16), (1, 2), (1, 2, 4))
        steps = (1, 2, 3, 4)
    found = []
    for shape, k, seg in itertools.product(list(shapes), steps, (32, 64, 128, 256, 1024)):
        p = dict(zip(KEYS, shape, strict=True), max_steps=k, seg=min(seg, geo.shape[0]))
        if not 32 <= p["local_w"] * p["local_h"] <= facts["max_wg"] or check(p, geo):
            continue
        cells = math.prod(span(p, geo, plane=True))
        if math.prod(tile(p, geo, plane=True)) < cells / 2 or seg > 2 * geo.shape[0]:
            continue
        if local_mem(p, geo) <= facts["local_mem"] and p not in found:
            found.append(p)
    return found


def cost(p: Mapping, geo: Geometry, facts: Mapping) -> float:
    """Per step: the span's cells over the segment and its (2 radius + 1) x max_steps extra
    planes computed (a GPU: about 1e11 cell updates/s, a CPU core 1e9), each plane read and
    the tile written once per launch (3 TB/s, 10 GB/s a core)."""
    plane = math.prod(math.ceil(s / t)
                      for s, t in zip(geo.shape[1:], tile(p, geo, plane=True), strict=True))
    extra = (2 * geo.radius + 1) * p["max_steps"] / min(p["seg"], geo.shape[0])
    cells = plane * math.prod(span(p, geo, plane=True)) * geo.shape[0] * (1 + extra)
    compute = 1e9 * facts["cus"] if facts["is_cpu"] else 1e11
    bandwidth = 1e10 * facts["cus"] if facts["is_cpu"] else 3e12
    traffic = (cells + geo.cells) * geo.itemsize / bandwidth / p["max_steps"]
    return cells / compute + traffic + 5e-6 / p["max_steps"]


SPEC = StencilKernelSpec(
    name="stream", template="stencil/stream",
    summary="2.5-D temporal blocking streamed along the slowest axis",
    params=PARAMS, launch=launch, defaults=defaults, steps_param="max_steps",
    local_mem=local_mem, check=check, candidates=candidates, cost=cost,
    arguments=(Argument("seg"),) + WINDOW_ARGUMENTS, suits=GPU,
)
