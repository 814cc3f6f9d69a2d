"""``step``: one step per launch, one cell per work-item, global memory only
(``kernels/stencil/step.cl.mako``): the plainest kernel, for any grid and device (on CPUs an
MPI strip's too: it can write some layers only, ``z_first`` .. ``z_stop - 1``)."""

from __future__ import annotations

from collections.abc import Mapping

from oclsci.kernelspec import BOTH, Launch, Param, round_up
from oclsci.stencil.specs import WINDOW_ARGUMENTS, Geometry, StencilKernelSpec

# Work-group shapes on GPUs (contiguous axis first); the global size is rounded up to them.
GPU_LOCAL = {2: (64, 4), 3: (32, 4, 2)}
# On CPUs, work-groups of up to this many cells of a row, the largest that divides the row
# (at least CPU_ROW_MIN, else the runtime chooses), times 2 rows (2 x 2 in 3-D) where they
# divide: with PoCL's own choice for 256^3 (64 x 8 x 8) a step took about twice the CPU time,
# with Intel's about 1.3 times (docs/bench/cpu-stencil-devito-2026-11-27.md).
CPU_ROW_MOST, CPU_ROW_MIN = 256, 16


def cpu_local(sizes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The CPU work-group for a launch of global ``sizes`` (contiguous axis first), None when
    the row's length has no divisor from :data:`CPU_ROW_MIN` to :data:`CPU_ROW_MOST`."""
    row = max(d for d in range(1, min(sizes[0], CPU_ROW_MOST) + 1) if sizes[0] % d == 0)
    if row < CPU_ROW_MIN:
        return None
    return (row, *(2 if size % 2 == 0 else 1 for size in sizes[1:]))


def launch(p: Mapping, geo: Geometry) -> Launch:
    """Every cell of the layers the launch writes (``z_first`` .. ``z_stop - 1`` along the
    slowest axis when given, else all), the contiguous axis first: whole work-groups of
    :data:`GPU_LOCAL` when ``p["gpu_groups"]`` (GPUs), exactly in work-groups of
    :func:`cpu_local` when ``p["cpu_groups"]`` (CPUs), else exactly in the runtime's."""
    layers = p.get("z_stop", geo.shape[0]) - p.get("z_first", 0)
    sizes = tuple(reversed((max(1, layers),) + geo.shape[1:]))
    if p.get("gpu_groups"):
        local = GPU_LOCAL[geo.dims]
        return tuple(round_up(s, g) for s, g in zip(sizes, local, strict=True)), local
    return sizes, cpu_local(sizes) if p.get("cpu_groups") else None


def defaults(facts: Mapping, geo: Geometry) -> list[dict]:
    """Work-groups of :data:`GPU_LOCAL` on GPUs, of :func:`cpu_local` on CPUs; then the
    runtime's."""
    return [{"cpu_groups": 1} if facts["is_cpu"] else {"gpu_groups": 1}, {}]


def check(p: Mapping, geo: Geometry) -> str | None:
    """Refuse GPU and CPU work-groups at once."""
    if p["gpu_groups"] and p["cpu_groups"]:
        return "gpu_groups and cpu_groups exclude each other"
    return None


def cost(p: Mapping, geo: Geometry, facts: Mapping) -> float:
    """Reads and writes every cell once per step (a rough guide: 300 GB/s per CPU core's
    share, 3 TB/s on a GPU, plus a launch)."""
    traffic = geo.cells * geo.itemsize * (3 if geo.uses_prev else 2)
    rate = 3e9 * facts["cus"] if facts["is_cpu"] else 3e12
    return (20e-6 if facts["is_cpu"] else 5e-6) + traffic / rate


SPEC = StencilKernelSpec(
    name="step", template="stencil/step",
    summary="one step per launch from global memory, any device",
    params=(Param("gpu_groups", default=0, low=0, high=1),
            Param("cpu_groups", default=0, low=0, high=1, template=False)),
    launch=launch, defaults=defaults, check=check, cost=cost, arguments=WINDOW_ARGUMENTS,
    suits=BOTH,
)
