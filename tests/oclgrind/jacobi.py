"""The Jacobi cases: each kernel of the registry over its corner cases and defaults.

Each case is a small JSON-able dict (``id``, ``kind`` "jacobi", the kernel, its parameters
and work-group, the grid, the steps, the dtype and an estimated ``cost``).
"""

from __future__ import annotations

import math
from typing import Any

# Grids: one cell, smaller than any tile, odd sizes that divide nothing.
SHAPES = ((1, 1), (5, 3), (17, 40))
# Extra grids for tiled kernels with 16-wide tiles: exactly one tile, one tile plus one.
TILE_SHAPES = ((16, 16), (17, 17))

# Oclgrind's device limits (21.10): the configurations below fit them.
OCLGRIND_LOCAL_MEM = 64 * 1024  # see CHECK_ENVIRONMENT
OCLGRIND_MAX_WORK_GROUP = 1024


def jacobi_corner_cases() -> dict[str, list[tuple[dict, Any]]]:
    """The parameter space of each Jacobi kernel explored under Oclgrind: (params, local_size).

    Each spec's ``corner_cases`` (oclsci/jacobi/specs/): every parameter takes several values
    (test_every_jacobi_parameter_is_varied); work-groups larger than, equal to and smaller
    than tiles; tiles that are not powers of two; one step per launch up to 8; vectors wider
    than the grid; more workers than tiles. :func:`jacobi_spaces` adds each kernel's defaults.
    """
    from oclsci.jacobi.kernels import KERNELS

    return {name: [(dict(params), local) for params, local in spec.corner_cases]
            for name, spec in KERNELS.items()}


def make_id(*parts: Any) -> str:
    return "-".join(str(p) for p in parts if p != "")


def config_label(params: dict, local_size: Any) -> str:
    short = {"rows_per_item": "r", "vector": "v", "tile_w": "tw", "tile_h": "th",
             "halo_width": "h", "local_w": "lw", "local_h": "lh", "rhs_in_local": "rl",
             "rows": "R", "cols": "C", "max_steps": "k", "buffers": "b", "band_h": "bh",
             "band_w": "bw", "workers": "w"}
    label = ",".join(f"{short.get(k, k)}{int(v) if isinstance(v, bool) else v}"
                     for k, v in sorted(params.items()))
    if local_size:
        label += "," * bool(label) + "L" + "x".join(map(str, local_size))
    return label or "default"


def _steps_per_launch(name: str, params: dict) -> int:
    from oclsci.jacobi.kernels import KernelConfig

    return int(KernelConfig(name, dict(params)).steps_per_launch)


def fits_oclgrind(name: str, params: dict, local_size: Any, dtype: str = "float32") -> bool:
    from oclsci.jacobi.kernels import KernelConfig

    config = KernelConfig(name, dict(params), local_size)
    try:
        config.validate(max_work_group_size=OCLGRIND_MAX_WORK_GROUP,
                        local_mem_bytes=OCLGRIND_LOCAL_MEM, dtype=dtype)
    except Exception:  # noqa: BLE001 - InputError: does not fit
        return False
    return True


def jacobi_spaces() -> dict[str, list[tuple[dict, Any]]]:
    """The configurations to check for every kernel of ``oclsci.jacobi.kernels.KERNELS``.

    The corner cases of :func:`jacobi_corner_cases`, then the kernel's default configurations
    for a GPU and for a CPU with Oclgrind's limits (what ``--kernel NAME`` runs without
    tuning).
    """
    spaces: dict[str, list[tuple[dict, Any]]] = {}
    for name, corner_cases in jacobi_corner_cases().items():
        configs = [entry for entry in corner_cases if fits_oclgrind(name, *entry)]
        for entry in _default_configs(name):
            if entry not in configs and fits_oclgrind(name, *entry):
                configs.append(entry)
        spaces[name] = configs
    return spaces


def _default_configs(name: str) -> list[tuple[dict, Any]]:
    """Every configuration ``default_config`` gives for ``name`` on CPUs and GPUs, in both
    precisions, for small and large grids and devices with less local memory or smaller
    work-groups (its fallbacks), as far as Oclgrind can run them."""
    from oclsci.jacobi.kernels import default_config

    found: list[tuple[dict, Any]] = []
    for is_cpu in (False, True):
        for dtype in ("float32", "float64"):
            for shape in (None, (17, 40), (2048, 1024)):
                for local_mem in (48 * 1024, 32 * 1024, 8 * 1024):
                    for max_group in (OCLGRIND_MAX_WORK_GROUP, 128):
                        default = default_config(name, is_cpu=is_cpu, dtype=dtype,
                                                 local_mem_bytes=local_mem, shape=shape,
                                                 max_work_group_size=max_group)
                        entry = (dict(default.params), default.local_size)
                        if entry not in found:
                            found.append(entry)
    return found


def simulated_work(name: str, params: dict, local_size: Any, shape: tuple[int, int],
                   steps: int) -> int:
    """A rough measure of what Oclgrind must simulate: cell updates of every work-item
    (idle ones included) times steps; about 20 us of CPU each with all checks on."""
    from oclsci.jacobi.kernels import KernelConfig

    config = KernelConfig(name, dict(params), tuple(local_size) if local_size else None)
    global_size, _ = config.launch_shape(*shape)
    items = math.prod(global_size)
    per_item = config.spec.work_per_item(config.values(), shape, items)
    return items * per_item * max(1, steps) + items


# Simulated work allowed per configuration (see simulated_work): about 5 s of CPU.
WORK_PER_CONFIG = 250_000


def jacobi_cases() -> list[dict]:
    """Each Jacobi kernel and configuration on small grids, over several launches.

    Per configuration, in order of priority while the simulated work allows (the first two
    always): the odd-sized grid over a full launch and a remainder launch (k + 1 steps, k the
    steps per launch); one cell, one step; a grid smaller than most tiles over k + 1 steps;
    the odd-sized grid over two full launches and a remainder; one tile plus one cell (for
    16-wide tiles); double precision.
    """
    cases = []
    for name, configs in jacobi_spaces().items():
        for params, local_size in configs:
            k = _steps_per_launch(name, params)
            label = config_label(params, local_size)
            plan = [((17, 40), k + 1, "float32"), ((1, 1), 1, "float32"),
                    ((5, 3), k + 1, "float32")]
            if k > 1:
                plan.append(((17, 40), 2 * k + 1, "float32"))
            if 16 in (params.get("tile_w"), params.get("local_w")):
                plan.append(((17, 17), k + 1, "float32"))
            if fits_oclgrind(name, params, local_size, "float64"):
                plan.append(((5, 3), k + 1, "float64"))
            spent = 0
            for index, (shape, steps, dtype) in enumerate(plan):
                work = simulated_work(name, params, local_size, shape, steps)
                if index >= 2 and spent + work > WORK_PER_CONFIG:
                    continue
                spent += work
                cases.append({
                    "id": make_id("jacobi", name, label, f"{shape[0]}x{shape[1]}",
                                   f"s{steps}", dtype),
                    "kind": "jacobi", "kernel": name, "params": params,
                    "local_size": local_size, "shape": shape, "steps": steps, "dtype": dtype,
                    "cost": work,
                })
    return cases
