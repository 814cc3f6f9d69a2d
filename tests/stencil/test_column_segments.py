"""``column``'s segment from a model of its launch (oclsci.stencil.specs.column): whole and
partial waves of work-groups over the device's resident places."""

from __future__ import annotations

import heapq
import random

import pytest

from oclsci.stencil.language import UPDATED
from oclsci.stencil.specs import Geometry
from oclsci.stencil.specs.column import _launch_advances, defaults, launch_advances, segment_planes

STAR = frozenset((UPDATED, offset) for offset in [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0),
                                                   (0, -1, 0), (0, 0, 1), (0, 0, -1)])
H200 = {"is_cpu": False, "cus": 132, "max_wg": 1024, "local_mem": 48 * 1024}
SPAN_64 = {"local_w": 64, "local_h": 16, "cells_x": 1, "cells_y": 4, "max_steps": 3}
# us per step of the 7-point heat stencil on planes of 512^2 by segment, measured on one H200
# (docs/bench/h200-stencil-column-spans-2026-11-28.md).
MEASURED = {
    512: {32: 228.5, 43: 230.6, 51: 232.2, 64: 209.9, 86: 220.0, 128: 242.0},
    509: {32: 222.6, 43: 225.1, 51: 231.0, 64: 207.9, 86: 215.5, 128: 237.5},
    253: {32: 112.9, 43: 115.4, 51: 133.1, 64: 125.1, 86: 112.2, 128: 158.0},
    125: {32: 67.9, 43: 61.7, 51: 70.5, 64: 82.6, 86: 57.9, 128: 80.5},
}


def geometry(planes: int, itemsize: int = 4) -> Geometry:
    return Geometry((planes, 512, 512), 1, itemsize=itemsize, reads=STAR)


def simulated_advances(planes: int, seg: int, tiles: int, slots: int, extra: int) -> int:
    """The launch's end, group by group: each takes the place that frees first."""
    free, end = [0] * slots, 0
    for first in range(0, planes, seg):
        for _ in range(tiles):
            start = heapq.heappop(free)
            heapq.heappush(free, start + min(seg, planes - first) + extra)
            end = max(end, start + min(seg, planes - first) + extra)
    return end


def test_the_closed_form_is_the_simulation():
    """Whole waves and the short last segment's groups counted in closed form give the end
    that handing out every group one by one gives."""
    rng = random.Random(5)
    for _ in range(500):
        planes = rng.randint(1, 200)
        args = (planes, rng.randint(1, planes), rng.randint(1, 150), rng.randint(1, 140),
                rng.randint(0, 12))
        assert _launch_advances(*args) == simulated_advances(*args), args


@pytest.mark.parametrize("planes", sorted(MEASURED))
def test_the_model_orders_segments_as_measured(planes):
    """One place per compute unit for 1024 work-items of 63 registers: the model's order of
    the launch times is the measured one."""
    measured = MEASURED[planes]
    model = {seg: launch_advances(SPAN_64, geometry(planes), 132, seg) for seg in measured}
    assert sorted(measured, key=measured.get) == sorted(model, key=model.get)


def test_a_short_last_segment_fills_a_waves_end():
    """125 planes in segments of 86 and 39 end sooner than in two of 64 and 61: the short
    segment's groups take the places that the long ones leave in the last wave."""
    geo = geometry(125)
    assert launch_advances(SPAN_64, geo, 132, 86) < launch_advances(SPAN_64, geo, 132, 64)


def test_float64_and_less_local_memory_keep_their_steps():
    """A span whose planes would not fit the local memory at its steps comes after those that
    do: float64, or 32 KiB, take 32 x 32 cells and 4 steps first, not 64 x 64 and fewer."""
    for facts, itemsize in ((H200, 8), ({**H200, "max_wg": 512, "local_mem": 32 * 1024}, 4)):
        first = defaults(facts, geometry(512, itemsize))[0]
        assert (first["local_w"], first["local_h"], first["max_steps"]) == (32, 8, 4)


@pytest.mark.parametrize("planes", [1, 2, 9, 15, 16, 17, 125, 253, 512, 1024, 5000])
def test_defaults_take_a_segment_of_the_grid(planes):
    """Every default's segment lies between 1 and the grid's planes (all of them when the
    grid has fewer than 16), and the first default on an H200 is the 64 x 64 span."""
    found = defaults(H200, geometry(planes))
    assert (found[0]["local_w"], found[0]["local_h"], found[0]["max_steps"]) == (64, 16, 3)
    for p in found:
        assert 1 <= p["seg"] <= planes
        if planes < 16:
            assert p["seg"] == planes
    assert segment_planes(found[0], geometry(planes), H200) == found[0]["seg"]
