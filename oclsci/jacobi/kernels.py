"""The registry of Jacobi kernels: one :class:`~oclsci.jacobi.specs.KernelSpec` per kernel.

A spec (``oclsci/jacobi/specs/<name>.py``) holds everything about its kernel: parameters and
their limits, template (``kernels/jacobi/<name>.cl.mako``), argument list by name, steps per
launch, launch shape, work-group, local memory, scratch buffers, defaults per device type,
tuning space, cost model, the device kinds it suits, and configurations for the tests.
:data:`KERNELS` lists them in the order commands show them; :func:`get` is the one place an
unknown name is refused. The solver, the configurations, the defaults, the tuner, the
commands and the tests read them. Adding a kernel: docs/architecture.md.
"""

from __future__ import annotations

from oclsci.errors import UnknownNameError
from oclsci.jacobi.specs import (
    KernelSpec,
    bands,
    blocked,
    coalesced,
    seed,
    streaming,
    temporal,
)

KERNELS: dict[str, KernelSpec] = {module.SPEC.name: module.SPEC for module in (
    seed, coalesced, blocked, temporal, streaming, bands)}


def get(name: str) -> KernelSpec:
    """The spec of kernel ``name``; :class:`InputError` naming the kernels if there is none."""
    spec = KERNELS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise UnknownNameError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
    return spec


def check_choice(name: str) -> str:
    """``name`` when it is ``auto`` or a kernel's; otherwise :class:`InputError`."""
    if name != "auto" and (not isinstance(name, str) or name not in KERNELS):
        raise UnknownNameError(f"unknown kernel {name!r}; choose auto or one of "
                         f"{', '.join(KERNELS)}")
    return name


def device_kind(is_cpu: bool) -> str:
    """``"cpu"`` or ``"gpu"``, as specs name device kinds."""
    return "cpu" if is_cpu else "gpu"


def suited(is_cpu: bool) -> tuple[str, ...]:
    """The kernels worth running on this device kind (benchmarks, tuning)."""
    kind = device_kind(is_cpu)
    return tuple(name for name, spec in KERNELS.items() if kind in spec.suits)


def auto_kernel(is_cpu: bool, shape: tuple[int, int] | None = None) -> str:
    """The kernel ``auto`` means on this device kind for an m x n ``shape`` (None: the
    smallest grids) without a tuned configuration: of the kernels ``auto`` may mean there, the
    one with the largest ``auto_min_cells`` that the grid reaches."""
    kind = device_kind(is_cpu)
    cells = 0 if shape is None else int(shape[0]) * int(shape[1])
    reached = [(spec.auto_min_cells, name) for name, spec in KERNELS.items()
               if kind in spec.auto_on and spec.auto_min_cells <= cells]
    return max(reached, key=lambda entry: entry[0])[1]


def tuned_by_default(is_cpu: bool) -> tuple[str, ...]:
    """The kernels ``oclsci tune`` tries unasked on this device kind, ``auto``'s first (for
    the smallest grids)."""
    kind, first = device_kind(is_cpu), auto_kernel(is_cpu)
    return (first,) + tuple(name for name, spec in KERNELS.items()
                            if kind in spec.tuned_on and name != first)


def tunable() -> tuple[str, ...]:
    """The kernels with a tuning space (the choices of ``oclsci tune --kernel``)."""
    return tuple(name for name, spec in KERNELS.items() if spec.candidates is not None)


def choices_help() -> str:
    """``--kernel``'s help: ``auto`` and every kernel of the registry with its summary."""
    named = [f"{name} ({spec.summary})" if spec.summary else name
             for name, spec in KERNELS.items()]
    return ("Kernel: auto (tuned with `oclsci tune`, else the default for the device and "
            "grid), " + ", ".join(named) + ".")
