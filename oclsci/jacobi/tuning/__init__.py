"""Configurations of the Jacobi kernels: defaults per device type, the tuned ones, the choice.

A :class:`~oclsci.jacobi.kernels.KernelConfig` names a kernel of the registry
(:mod:`oclsci.jacobi.kernels`) with its parameters and work-group. Each kernel's defaults are
in its spec; :func:`default_candidates` checks them against a device's limits.
:func:`choose_config` gives the configuration for a kernel name on a device: ``auto`` takes
the configuration tuned for the device, dtype and size class (the tuning cache,
:mod:`oclsci.kernelspec.registry`, filled by ``oclsci tune``: :mod:`.search`, imported on
demand since it needs the solver) and otherwise a default that suits the device type and grid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.jacobi import kernels
from oclsci.jacobi.kernels import REGISTRY, KernelConfig
from oclsci.kernelspec import LOCAL_SIZE_LIMIT, round_up
from oclsci.kernelspec.registry import (
    CACHE_FORMAT,
    cache_disabled,
    cache_key,
    cache_path,
    check_writable,
    load_cache,
    make_entry,
    save_entry,
    size_class,
)

__all__ = ["CACHE_FORMAT", "cache_disabled", "cache_key", "cache_path", "cached_config",
           "check_writable", "load_cache", "make_entry", "save_entry", "size_class",
           "auto_kernel", "choose_config", "default_candidates", "default_config",
           "device_candidates", "device_default", "suited_kernels", "LOCAL_SIZE_LIMIT",
           "KernelConfig", "round_up"]


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
    facts = {"is_cpu": is_cpu, "cus": compute_units, "local_mem": local_mem_bytes,
             "max_wg": max_work_group_size}
    return REGISTRY.default_candidates(name, facts, dtype, shape)


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
    return REGISTRY.default_candidates(name, compute.facts.kernel_facts(), dtype, shape)


def device_default(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """:func:`default_config` for ``compute``'s device type, local memory and cores."""
    return device_candidates(compute, name, dtype, shape)[0]


def suited_kernels(compute: Any) -> tuple[str, ...]:
    """The kernels worth running on this device type (benchmarks, tuning)."""
    return kernels.suited(compute.is_cpu)


def auto_kernel(compute: Any, shape: tuple[int, int] | None = None) -> str:
    """The kernel ``auto`` means on this device for an m x n ``shape`` (None: the smallest
    grids) without a tuned configuration."""
    return kernels.auto_kernel(compute.is_cpu, shape)


def cached_config(compute: Any, dtype: Any, shape: tuple[int, int],
                  kernel: str | None = None) -> KernelConfig | None:
    """The tuned configuration for this device, dtype and size class (of ``kernel``), if any."""
    return REGISTRY.cached_config(compute, dtype, shape, kernel)


def choose_config(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """The configuration to run kernel ``name`` (or ``auto``) on ``compute``.

    A configuration tuned on this device (``oclsci tune``) for this dtype and size class wins;
    otherwise the default for the device type and grid size.
    """
    kernels.check_choice(name)
    tuned = cached_config(compute, dtype, shape, None if name == "auto" else name)
    if tuned is not None:
        return tuned
    return device_default(compute, auto_kernel(compute, shape) if name == "auto" else name,
                          dtype, shape)
