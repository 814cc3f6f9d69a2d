"""``column``: register streaming with temporal blocking for 3-D star stencils
(``kernels/stencil/column.cl.mako``).

Like ``stream``, a work-group owns a tile of the plane (and a halo of radius x ``max_steps``
cells around it, recomputed by its neighbours) and marches along the planes over a segment
of ``seg`` planes, reading each plane once from global memory and doing ``max_steps`` steps
on the way. Unlike it, each work-item keeps its cells' values along the planes in
registers, so that a level needs one plane of local memory (the neighbours across the
plane) rather than 2 radius + 2: more steps fit a work-group's local memory, and a read
along the planes costs no local memory traffic. It takes star stencils only (a read that
moves across the plane and along the planes at once would need other planes across).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping

from oclsci.kernelspec import GPU, Argument, Param
from oclsci.stencil.language import UPDATED
from oclsci.stencil.specs import (
    WINDOW_ARGUMENTS,
    Geometry,
    StencilKernelSpec,
    blocked_steps,
    span,
    tile,
)
from oclsci.stencil.specs.stream import launch

PARAMS = (
    Param("local_w", high=1024), Param("local_h", high=1024),
    Param("cells_x", default=1, high=64), Param("cells_y", default=1, high=64),
    Param("max_steps", high=32),
    Param("pack_x", kind=bool, default=False, test_values=(False, True)),
    Param("prefetch", kind=bool, default=True, test_values=(False, True)),
    Param("seg", high=1 << 20, template=False),
)
KEYS = ("local_w", "local_h", "cells_x", "cells_y")
LOCAL_BUDGET = 48 * 1024  # bytes of local memory a default takes at most
# Work-group, cells (local_w, local_h, cells_x, cells_y) and most steps a launch, best first.
# On an H200, 512^3 float32 (docs/bench/h200-stencil-column-spans-2026-11-28.md), spans of
# 64 x 64 cells with 3 steps ran 1.31x as fast as 32 x 32 with 4 (1024 work-items; with 512:
# 1.15x); the smaller ones fit devices that allow fewer work-items or less local memory, and
# float64 (whose 64 x 64 planes would leave one step in 48 KiB).
SHAPES = [(64, 16, 1, 4, 3), (32, 16, 2, 4, 3), (32, 8, 1, 4, 4), (64, 4, 1, 8, 4),
          (32, 4, 1, 8, 4), (16, 8, 1, 2, 4)]
SHORTEST_SEGMENT = 16  # planes a default's segment has at least (unless the grid has fewer)
# Registers a work-item's rings may take at most (values of the field's type), a candidate's
# limit: past it a GPU spills them to memory.
MOST_RING_VALUES = 96


def handles(geo: Geometry) -> str | None:
    """A 3-D stencil whose reads of u move along one axis at most; None when it is one."""
    if geo.dims != 3:
        return f"takes 3-D stencils only, this one is {geo.dims}-D"
    if not geo.reads:
        return "takes 3-D star stencils only (this stencil's reads are not known)"
    for source, offset in sorted(geo.reads):
        if source == UPDATED and sum(1 for d in offset if d) > 1:
            return f"takes star stencils only, this one reads u{list(offset)}"
    return None


def ring_values(p: Mapping, geo: Geometry) -> int:
    """Values a work-item keeps in registers: 2 radius + 1 per cell and level below the
    top."""
    return (2 * geo.radius + 1) * p["cells_x"] * p["cells_y"] * p["max_steps"]


def check(p: Mapping, geo: Geometry) -> str | None:
    """A tile inside the halo."""
    if min(tile(p, geo, plane=True)) < 1:
        return (f"span {'x'.join(map(str, span(p, geo, plane=True)))} leaves no tile inside a "
                f"halo of {geo.radius} x {p['max_steps']} steps")
    return None


def local_mem(p: Mapping, geo: Geometry) -> int:
    """One plane of the span for each level below the top."""
    return p["max_steps"] * math.prod(span(p, geo, plane=True)) * geo.itemsize


def resident_groups(p: Mapping, geo: Geometry, facts: Mapping) -> int:
    """Work-groups resident at once on one compute unit: work-items (2048), registers (65536
    of 32 bits; a work-item's rings and 40 more, 76 for the first of :data:`SHAPES`, which
    used 63 on an H200) and local memory (three work-groups' most) allow (a rough
    estimate)."""
    items = p["local_w"] * p["local_h"]
    registers = 40 + ring_values(p, geo) * max(1, geo.itemsize // 4)
    return max(1, min(2048 // items, 65536 // (items * registers),
                      3 * facts["local_mem"] // max(1, local_mem(p, geo))))


def launch_advances(p: Mapping, geo: Geometry, slots: int, seg: int) -> int:
    """Advances from a launch's start to its end with segments of ``seg`` planes: the
    work-groups, segment after segment, each taking the first of ``slots`` resident places
    that frees (as GPUs hand them out), a group taking its planes plus the 2 radius x
    max_steps advances of its segment's ends."""
    tiles = math.prod(math.ceil(s / t)
                      for s, t in zip(geo.shape[1:], tile(p, geo, plane=True), strict=True))
    return _launch_advances(geo.shape[0], seg, tiles, slots, 2 * geo.radius * p["max_steps"])


@functools.lru_cache(maxsize=4096)
def _launch_advances(planes: int, seg: int, tiles: int, slots: int, extra: int) -> int:
    full, rest = divmod(planes, seg)
    waves, busy = divmod(full * tiles, slots)
    early, late = waves * (seg + extra), (waves + 1) * (seg + extra)  # when places free
    end = late if busy else early
    if not rest:
        return end
    # The last, shorter segment's groups (all as long) start in turn on the place that frees
    # first: the last one starts at the least time by which `tiles` starts can have happened.
    short = rest + extra

    def starts_by(t: int) -> int:
        return sum(count * ((t - free) // short + 1)
                   for free, count in ((early, slots - busy), (late, busy)) if t >= free)

    low, high = early, early + tiles * short
    while low < high:
        middle = (low + high) // 2
        if starts_by(middle) >= tiles:
            high = middle
        else:
            low = middle + 1
    return max(end, low + short)


def segment_planes(p: Mapping, geo: Geometry, facts: Mapping) -> int:
    """The segment whose launch should end first (:func:`launch_advances`, with
    :func:`resident_groups` places on each compute unit). On an H200 this ordered the
    measured times of six segments on each of 125, 253, 509 and 512 planes of 512^2, and its
    choice ran 4% to 30% faster than segments of 64 planes there and on 1024 planes."""
    m = geo.shape[0]
    slots = facts["cus"] * resident_groups(p, geo, facts)
    shortest = min(SHORTEST_SEGMENT, m)
    segments = {m} | {math.ceil(m / k) for k in range(1, min(64, m // shortest) + 1)}
    segments |= set(range(shortest, min(m, 1024) + 1, 8))
    return min(sorted(segments), key=lambda seg: launch_advances(p, geo, slots, seg))


def defaults(facts: Mapping, geo: Geometry) -> list[dict]:
    """Spans of :data:`SHAPES`, each with the most steps (up to its own) whose halo takes at
    most a quarter of the span's narrowest side, and the segment that
    :func:`segment_planes` finds fastest for the grid: first those whose planes fit
    :data:`LOCAL_BUDGET` at those steps, then the others with fewer steps, to fit."""
    if handles(geo):
        return []
    budget = min(facts["local_mem"], LOCAL_BUDGET)
    fitting, cut = [], []
    for *values, most in SHAPES:
        p = dict(zip(KEYS, values, strict=True))
        p["max_steps"] = blocked_steps(min(span(p, geo, plane=True)), geo.radius, most)
        fits = local_mem(p, geo) <= budget
        while p["max_steps"] > 1 and local_mem(p, geo) > budget:
            p["max_steps"] -= 1
        p["seg"] = segment_planes(p, geo, facts)
        (fitting if fits else cut).append(p)
    return fitting + cut


def candidates(facts: Mapping, geo: Geometry) -> list[dict]:
    """Spans of 16 to 128 columns and 8 to 128 rows, 1 to 8 steps, segments of 32 to 1024
    planes, the next plane loaded ahead or not, a work-item's columns consecutive or not;
    tiles at least a third of their span; work-groups of 64 to 1024 items; rings of
    at most :data:`MOST_RING_VALUES` values a work-item."""
    if handles(geo):
        return []
    shapes = itertools.product((16, 32, 64), (4, 8, 16), (1, 2), (1, 2, 4, 8))
    found = []
    for shape, k, seg, ahead, pack in itertools.product(
            list(shapes), (1, 2, 3, 4, 6, 8), (32, 64, 128, 256, 1024), (False, True),
            (False, True)):
        if pack and shape[2] == 1:
            continue
        p = dict(zip(KEYS, shape, strict=True), max_steps=k, seg=min(seg, geo.shape[0]),
                 prefetch=ahead, pack_x=pack)
        if not 64 <= p["local_w"] * p["local_h"] <= facts["max_wg"] or check(p, geo):
            continue
        if ring_values(p, geo) > MOST_RING_VALUES or seg > 2 * geo.shape[0]:
            continue
        if math.prod(tile(p, geo, plane=True)) < math.prod(span(p, geo, plane=True)) / 3:
            continue
        if local_mem(p, geo) <= facts["local_mem"] and p not in found:
            found.append(p)
    return found


def cost(p: Mapping, geo: Geometry, facts: Mapping) -> float:
    """Per step: the span's cells over the segment and its 2 radius x max_steps extra planes
    computed (about 1e11 cell updates/s), each plane read and the tile written once per
    launch (3 TB/s)."""
    plane = math.prod(math.ceil(s / t)
                      for s, t in zip(geo.shape[1:], tile(p, geo, plane=True), strict=True))
    extra = 2 * geo.radius * p["max_steps"] / min(p["seg"], geo.shape[0])
    cells = plane * math.prod(span(p, geo, plane=True)) * geo.shape[0] * (1 + extra)
    traffic = (cells + geo.cells) * geo.itemsize / 3e12 / p["max_steps"]
    return cells / 1e11 + traffic + 5e-6 / p["max_steps"]


SPEC = StencilKernelSpec(
    name="column", template="stencil/column",
    summary="3-D star stencils: temporal blocking streamed along the planes, each cell's "
            "column in registers",
    params=PARAMS, launch=launch, defaults=defaults, steps_param="max_steps",
    local_mem=local_mem, check=check, candidates=candidates, cost=cost, handles=handles,
    arguments=(Argument("seg"),) + WINDOW_ARGUMENTS, suits=GPU,
)
