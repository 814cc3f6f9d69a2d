"""Default configurations of the Jacobi kernels per device type, and the choice for a run.

Each kernel's defaults are in its spec (:mod:`oclsci.jacobi.kernels`); this module checks them
against a device's limits.

:func:`choose_config` gives the configuration for a kernel name on a device: ``auto`` takes the
configuration tuned for the device, dtype and size class (:mod:`oclsci.jacobi.tuning.cache`,
command ``oclsci tune``) and otherwise a default that suits the device type and grid size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.jacobi import kernels
from oclsci.jacobi.specs.temporal import TEMPORAL_DEFAULTS, TEMPORAL_FALLBACKS
from oclsci.jacobi.tuning.cache import cached_config
from oclsci.jacobi.tuning.space import KernelConfig

__all__ = ["TEMPORAL_DEFAULTS", "TEMPORAL_FALLBACKS", "auto_kernel", "choose_config",
           "default_candidates", "default_config", "device_candidates", "device_default",
           "suited_kernels"]


def _preferred_configs(name: str, *, is_cpu: bool, dtype: Any, local_mem_bytes: int,
                       shape: tuple[int, int] | None, compute_units: int,
                       max_work_group_size: int) -> list[KernelConfig]:
    """Configurations of kernel ``name``, best first, before any check of the device's limits.
    The facts have the keys of :func:`oclsci.jacobi.tuning.search.device_facts`."""
    facts = {"is_cpu": is_cpu, "cus": compute_units, "local_mem": local_mem_bytes,
             "max_wg": max_work_group_size}
    return [KernelConfig(name, params, local)
            for params, local in kernels.get(name).defaults(facts, np.dtype(dtype), shape)]


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
                                 compute_units=compute_units,
                                 max_work_group_size=max_work_group_size)
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
    facts = compute.facts
    return default_candidates(name, is_cpu=facts.is_cpu, dtype=dtype,
                              local_mem_bytes=facts.local_mem_bytes, shape=shape,
                              compute_units=facts.compute_units,
                              max_work_group_size=facts.max_work_group_size)


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


