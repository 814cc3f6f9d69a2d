"""The registry of Jacobi kernels: one :class:`~oclsci.jacobi.specs.JacobiSpec` per kernel,
and :class:`KernelConfig`, a kernel of it with its parameters and work-group shape.

A spec (``oclsci/jacobi/specs/<name>.py``) holds everything about its kernel: parameters and
their limits, template (``kernels/jacobi/<name>.cl.mako``), argument list by name, steps per
launch, launch shape, work-group, local memory, scratch buffers, defaults per device type,
tuning space, cost model, the device kinds it suits, and configurations for the tests.
:data:`KERNELS` lists them in the order commands show them; :data:`REGISTRY`
(:class:`oclsci.kernelspec.registry.Registry`) is the one place an unknown name is refused.
The solver, the defaults, the tuner, the commands and the tests read them. Adding a kernel:
docs/architecture.md.
"""

from __future__ import annotations

from oclsci import kernelspec
from oclsci.jacobi.specs import JacobiSpec, bands, blocked, coalesced, seed, streaming, temporal
from oclsci.kernelspec.registry import Registry

REGISTRY = Registry(module.SPEC for module in (seed, coalesced, blocked, temporal, streaming,
                                               bands))
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
        return temporal.tile(self.values())

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
