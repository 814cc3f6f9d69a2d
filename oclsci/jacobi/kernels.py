"""The registry of Jacobi kernels, and the configuration each run takes: defaults per device
type, the tuned ones, the choice.

:data:`KERNELS` holds one :class:`~oclsci.jacobi.specs.JacobiSpec` per kernel, in the order
commands show them; :data:`REGISTRY` (:class:`oclsci.kernelspec.registry.Registry`) is the one
place an unknown name is refused. A spec (in ``oclsci/jacobi/specs/``) holds everything about
its kernel: parameters and their limits, template (``kernels/jacobi/<name>.cl.mako``), argument
list by name, steps per launch, launch shape, work-group, local memory, scratch buffers,
defaults per device type, tuning space, cost model, the device kinds it suits, and
configurations for the tests. A :class:`KernelConfig` is a kernel of it with its parameters and
work-group shape. Adding a kernel: docs/architecture.md.

:func:`default_candidates` checks a kernel's defaults against a device's limits;
:func:`choose_config` gives the configuration for a kernel name on a device: ``auto`` takes the
configuration tuned for the device, dtype and size class (the tuning cache,
:mod:`oclsci.kernelspec.registry`, filled by ``oclsci tune``: :mod:`oclsci.jacobi.tuner`) and
otherwise a default that suits the device type and grid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci import kernelspec
from oclsci.jacobi.specs import JacobiSpec, itemwise, streaming, tiled
from oclsci.kernelspec.registry import Registry

REGISTRY = Registry((itemwise.SEED, itemwise.COALESCED, tiled.BLOCKED, tiled.TEMPORAL,
                     streaming.STREAMING, itemwise.BANDS))
KERNELS: dict[str, JacobiSpec] = REGISTRY.specs


@REGISTRY.configures
class KernelConfig(kernelspec.KernelConfig):
    """A Jacobi kernel of :data:`KERNELS` with its compile-time parameters and work-group
    shape; every kernel is bit-exact against :func:`oclsci.jacobi.reference.jacobi_numpy`."""

    @property
    def steps_per_launch(self) -> int:
        """Jacobi steps advanced by one full launch."""
        key = self.spec.steps_param
        return int(self.params.get(key, 1)) if key else 1

    def temporal_tile(self) -> tuple[int, int]:
        """(tile_w, tile_h) of the temporal kernel: the span less a halo on each side."""
        return tiled.temporal_tile(self.values())

    def bands_layout(self, m: int, n: int) -> dict:
        """Tiles, workers and scratch sizes (elements) of the bands kernel on an m x n grid."""
        return self.scratch_layout(m, n) or {}


def get(name: str) -> JacobiSpec:
    """The spec of kernel ``name``; :class:`InputError` naming the kernels if there is none."""
    return REGISTRY.get(name)


def check_choice(name: str) -> str:
    """``name`` when it is ``auto`` or a kernel's; otherwise :class:`InputError`."""
    return REGISTRY.check_choice(name)


def device_kind(is_cpu: bool) -> str:
    """``"cpu"`` or ``"gpu"``, as specs name device kinds."""
    return "cpu" if is_cpu else "gpu"


def suited(is_cpu: bool) -> tuple[str, ...]:
    """The kernels worth running on this device kind (benchmarks, tuning)."""
    return REGISTRY.suited(device_kind(is_cpu))


def auto_kernel(is_cpu: bool, shape: tuple[int, int] | None = None) -> str:
    """The kernel ``auto`` means on this device kind for an m x n ``shape`` (None: the
    smallest grids) without a tuned configuration: of the kernels ``auto`` may mean there, the
    one with the largest ``auto_min_cells`` that the grid reaches."""
    cells = 0 if shape is None else int(shape[0]) * int(shape[1])
    return REGISTRY.auto(device_kind(is_cpu), cells)


def tuned_by_default(is_cpu: bool) -> tuple[str, ...]:
    """The kernels ``oclsci tune`` tries unasked on this device kind, ``auto``'s first (for
    the smallest grids)."""
    return REGISTRY.tuned_by_default(device_kind(is_cpu))


def tunable() -> tuple[str, ...]:
    """The kernels with a tuning space (the choices of ``oclsci tune --kernel``)."""
    return REGISTRY.tunable()


def choices_help() -> str:
    """``--kernel``'s help: ``auto`` and every kernel of the registry with its summary."""
    return REGISTRY.choices_help("tuned with `oclsci tune`, else the default for the device "
                                 "and grid")


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


def cached_config(compute: Any, dtype: Any, shape: tuple[int, int],
                  kernel: str | None = None) -> KernelConfig | None:
    """The tuned configuration for this device, dtype and size class (of ``kernel``), if any."""
    return REGISTRY.cached_config(compute, dtype, shape, kernel)


def choose_config(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """The configuration to run kernel ``name`` (or ``auto``) on ``compute``.

    A configuration tuned on this device (``oclsci tune``) for this dtype and size class wins;
    otherwise the default for the device type and grid size.
    """
    check_choice(name)
    tuned = cached_config(compute, dtype, shape, None if name == "auto" else name)
    if tuned is not None:
        return tuned
    kernel = auto_kernel(compute.is_cpu, shape) if name == "auto" else name
    return device_default(compute, kernel, dtype, shape)
