"""Default configurations of the Jacobi kernels per device type, and the choice for a run.

:func:`choose_config` gives the configuration for a kernel name on a device: ``auto`` takes the
configuration tuned for the device, dtype and size class (:mod:`oclsci.jacobi.tuning.cache`,
command ``oclsci tune``) and otherwise a default that suits the device type.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from oclsci.errors import InputError
from oclsci.jacobi.tuning.cache import cached_config
from oclsci.jacobi.tuning.space import KERNELS, KernelConfig, round_up


def _bands_default(shape: tuple[int, int], dtype: Any, compute_units: int,
                   cache_bytes: int = 384 * 1024) -> KernelConfig:
    """Bands sized so that a work-item's two scratch halves stay in its core's cache."""
    m, n = shape
    steps = 8
    band_w = n if n <= 1024 else 512
    elements = cache_bytes // np.dtype(dtype).itemsize
    band_h_max = max(8, elements // (round_up(band_w + 2 * steps, 16)) // 2 - 2 * steps)
    # Equal bands, a multiple of the number of cores of them.
    tiles_h = round_up(max(math.ceil(m / band_h_max), 1), compute_units)
    band_h = max(1, math.ceil(m / tiles_h))
    return KernelConfig("bands", {"band_h": band_h, "band_w": 0 if band_w == n else band_w,
                                  "max_steps": steps, "workers": compute_units})


# Default temporal configurations (rows, cols, local_w, local_h, max_steps, buffers), by grid
# size (more than 2^20 cells: large) and item size, from `oclsci tune` on an H100 and an H200
# (docs/performance.md: within 1-3% of the best on both); then smaller ones for devices with
# less local memory or smaller work-groups.
TEMPORAL_DEFAULTS = {
    ("small", 4): [(2, 2, 32, 32, 16, 1), (4, 2, 32, 16, 16, 2)],
    ("small", 8): [(4, 2, 32, 16, 16, 1)],
    ("large", 4): [(8, 4, 32, 8, 8, 2), (8, 4, 32, 16, 12, 1)],
    ("large", 8): [(4, 2, 32, 8, 4, 2), (4, 2, 32, 16, 4, 1)],
}
TEMPORAL_FALLBACKS = [(4, 2, 32, 8, 8, 1), (4, 2, 16, 8, 4, 1), (2, 2, 16, 8, 4, 1),
                      (2, 2, 8, 8, 2, 1)]


def _preferred_configs(name: str, *, is_cpu: bool, dtype: Any, local_mem_bytes: int,
                       shape: tuple[int, int] | None, compute_units: int) -> list[KernelConfig]:
    """Configurations of kernel ``name``, best first, before any check of the device's limits."""
    itemsize = np.dtype(dtype).itemsize
    if name == "seed":
        return [KernelConfig("seed")]
    if name == "coalesced":
        if is_cpu:
            return [KernelConfig("coalesced", {"rows_per_item": 4})]
        # From `oclsci tune` for 16384^2 on an H100 and an H200 (docs/performance.md):
        # within 1-2% of the best of either (float32); 16-byte vectors (float64). Then
        # narrower groups for devices or kernels allowing fewer work-items (ROCm: 256).
        params, shapes = (({"rows_per_item": 4, "vector": 2}, [(128, 4), (64, 4), (32, 4)])
                          if itemsize == 4 else
                          ({"rows_per_item": 2, "vector": 2}, [(64, 8), (32, 8), (16, 8)]))
        return [KernelConfig("coalesced", params, shape) for shape in shapes] + [
            KernelConfig("coalesced", params)]
    if name == "blocked":
        if is_cpu:
            params = {"tile_w": 64, "tile_h": 32, "halo_width": 8, "local_w": 64, "local_h": 4}
        else:
            params = {"tile_w": 32, "tile_h": 32, "halo_width": 16, "local_w": 32, "local_h": 16}
        span = (params["tile_w"] + 2 * params["halo_width"]) * (
            params["tile_h"] + 2 * params["halo_width"])
        params["rhs_in_local"] = 3 * span * itemsize <= local_mem_bytes
        if 2 * span * itemsize > local_mem_bytes:
            params.update(tile_w=16, tile_h=16, halo_width=8, local_w=16, local_h=16)
        configs = [KernelConfig("blocked", dict(params))]
        # Fewer work-items over the same tile (each loops over more cells), then less memory.
        while params["local_w"] * params["local_h"] > 16:
            key = "local_h" if params["local_h"] >= params["local_w"] // 2 else "local_w"
            params[key] //= 2
            configs.append(KernelConfig("blocked", dict(params)))
        configs.append(KernelConfig("blocked", {"tile_w": 16, "tile_h": 16, "halo_width": 4,
                                                "local_w": 8, "local_h": 8,
                                                "rhs_in_local": False}))
        return configs
    if name == "temporal":
        # Tuned on an H100 (oclsci tune): the first that fits the device wins.
        large = shape is not None and shape[0] * shape[1] > 2**20
        keys = ("rows", "cols", "local_w", "local_h", "max_steps", "buffers")
        choices = TEMPORAL_DEFAULTS[("large" if large else "small", itemsize)]
        return [KernelConfig("temporal", dict(zip(keys, values, strict=True)))
                for values in choices + TEMPORAL_FALLBACKS]
    if name == "bands":
        return [_bands_default(shape or (256, 256), dtype, compute_units)]
    raise InputError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)} or auto")


def default_candidates(name: str, *, is_cpu: bool, dtype: Any = np.float32,
                       local_mem_bytes: int = 48 * 1024, shape: tuple[int, int] | None = None,
                       compute_units: int = 2, max_work_group_size: int = 1024
                       ) -> list[KernelConfig]:
    """Default configurations of ``name`` that fit the device's limits, best first.

    Each fits ``max_work_group_size`` (CL_DEVICE_MAX_WORK_GROUP_SIZE) and ``local_mem_bytes``
    (CL_DEVICE_LOCAL_MEM_SIZE). A built kernel may allow fewer work-items still
    (CL_KERNEL_WORK_GROUP_SIZE: register pressure, or ROCm's 256 for kernels without
    ``reqd_work_group_size``); :class:`oclsci.jacobi.JacobiSolver` then takes the next one.
    Never empty: when nothing fits, the smallest is returned (and refused with a clear error
    when the solver validates it).
    """
    configs = _preferred_configs(name, is_cpu=is_cpu, dtype=dtype,
                                 local_mem_bytes=local_mem_bytes, shape=shape,
                                 compute_units=compute_units)
    fitting = [config for config in configs
               if config.local_mem_bytes(dtype) <= local_mem_bytes
               and config.work_group_size() <= max_work_group_size]
    return fitting or configs[-1:]


def default_config(name: str, *, is_cpu: bool, dtype: Any = np.float32,
                   local_mem_bytes: int = 48 * 1024, shape: tuple[int, int] | None = None,
                   compute_units: int = 2, max_work_group_size: int = 1024) -> KernelConfig:
    """A sensible configuration of kernel ``name`` for a CPU or a GPU, without tuning: the
    first of :func:`default_candidates`."""
    return default_candidates(name, is_cpu=is_cpu, dtype=dtype, local_mem_bytes=local_mem_bytes,
                              shape=shape, compute_units=compute_units,
                              max_work_group_size=max_work_group_size)[0]


def device_candidates(compute: Any, name: str, dtype: Any,
                      shape: tuple[int, int]) -> list[KernelConfig]:
    """:func:`default_candidates` for ``compute``'s device type, limits and cores."""
    return default_candidates(name, is_cpu=compute.is_cpu, dtype=dtype,
                              local_mem_bytes=int(compute.device.local_mem_size), shape=shape,
                              compute_units=int(compute.device.max_compute_units),
                              max_work_group_size=int(compute.device.max_work_group_size))


def device_default(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """:func:`default_config` for ``compute``'s device type, local memory and cores."""
    return device_candidates(compute, name, dtype, shape)[0]


def suited_kernels(compute: Any) -> tuple[str, ...]:
    """The kernels worth running on this device type (benchmarks, tuning).

    ``temporal`` synchronises work-groups at every step, which CPUs (PoCL) do slowly;
    ``bands`` runs one work-item per core-sized tile, which starves GPUs.
    """
    if compute.is_cpu:
        return ("seed", "coalesced", "blocked", "bands")
    return ("seed", "coalesced", "blocked", "temporal")


def auto_kernel(compute: Any) -> str:
    """The kernel ``auto`` means on this device without a tuned configuration."""
    return "bands" if compute.is_cpu else "temporal"


def choose_config(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """The configuration to run kernel ``name`` (or ``auto``) on ``compute``.

    A configuration tuned on this device (``oclsci tune``) for this dtype and size class wins;
    otherwise the device type's default.
    """
    if name != "auto" and name not in KERNELS:
        raise InputError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)} or auto")
    tuned = cached_config(compute, dtype, shape, None if name == "auto" else name)
    if tuned is not None:
        return tuned
    return device_default(compute, auto_kernel(compute) if name == "auto" else name, dtype,
                          shape)


