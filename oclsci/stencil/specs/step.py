"""``step``: one step per launch, one cell per work-item, global memory only
(``kernels/stencil/step.cl.mako``): the plainest kernel, for any grid and device."""

from __future__ import annotations

from collections.abc import Mapping

from oclsci.kernelspec import BOTH, Launch, Param, round_up
from oclsci.stencil.specs import Geometry, StencilKernelSpec

# Work-group shapes on GPUs (contiguous axis first); CPUs let the runtime choose.
GPU_LOCAL = {2: (64, 4), 3: (32, 4, 2)}


def launch(p: Mapping, geo: Geometry) -> Launch:
    """Every cell, the contiguous axis first; whole work-groups of :data:`GPU_LOCAL` when
    ``p["gpu_groups"]`` (GPUs), else the runtime's choice."""
    sizes = tuple(reversed(geo.shape))
    if not p.get("gpu_groups"):
        return sizes, None
    local = GPU_LOCAL[geo.dims]
    return tuple(round_up(s, g) for s, g in zip(sizes, local, strict=True)), local


def defaults(facts: Mapping, geo: Geometry) -> list[dict]:
    """Work-groups of :data:`GPU_LOCAL` on GPUs, the runtime's on CPUs; then the runtime's."""
    return ([] if facts["is_cpu"] else [{"gpu_groups": 1}]) + [{"gpu_groups": 0}]


def cost(p: Mapping, geo: Geometry, facts: Mapping) -> float:
    """Reads and writes every cell once per step (a rough guide: 300 GB/s per CPU core's
    share, 3 TB/s on a GPU, plus a launch)."""
    traffic = geo.cells * geo.itemsize * (3 if geo.uses_prev else 2)
    rate = 3e9 * facts["cus"] if facts["is_cpu"] else 3e12
    return (20e-6 if facts["is_cpu"] else 5e-6) + traffic / rate


SPEC = StencilKernelSpec(
    name="step", template="stencil/step",
    summary="one step per launch from global memory, any device",
    params=(Param("gpu_groups", default=0, low=0, high=1, template=False),),
    launch=launch, defaults=defaults, cost=cost, suits=BOTH,
)
