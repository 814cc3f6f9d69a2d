"""The Lomb-Scargle kernel's variants as specs (:class:`~oclsci.kernelspec.KernelSpec`).

Each variant is one of the seed's tuning steps (docs/lombscargle.md) on one template,
``kernels/lombscargle.cl.mako``: its parameters' defaults are the step's settings, its
arguments are bound by name, its launch covers the frequencies of one launch. ``auto`` (the
default) is the registry's choice by device kind (:func:`device_kind`): the variants declare
where ``auto`` may mean them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oclsci.kernelspec import Argument, KernelSpec, Param, round_up
from oclsci.kernelspec.registry import Registry

# Work-groups per compute unit of the grid-stride kernel (the seed: 20 blocks per SM).
GROUPS_PER_UNIT = 20
# Work-group size of every launch (the seed's 128 threads per block).
LOCAL_SIZE = 128
ARGUMENTS = (Argument("n"), Argument("first"), Argument("count"), Argument("x", "buffer"),
             Argument("y", "buffer"), Argument("freqs", "buffer"),
             Argument("pgram", "buffer"), Argument("scale", "real"))


def launch(p: Mapping, local_size: Any, count: int, compute_units: int):
    """One work-item per vector of ``vector_width`` frequencies of the ``count`` this launch
    computes, at most :data:`GROUPS_PER_UNIT` groups per compute unit with ``stride``, in
    groups of ``local_size`` (:data:`LOCAL_SIZE` when the kernel fixes none: left to PoCL,
    it changes with each launch's size, and each new size is a new compilation)."""
    local = p["local_size"] or LOCAL_SIZE
    items = -(-count // p["vector_width"])
    if p["stride"]:
        items = min(items, GROUPS_PER_UNIT * compute_units * local)
    return (round_up(items, local),), (local,)


def _variant(name: str, summary: str, typed: bool, local_size: int, stride: bool,
             vector_width: int, auto_on: frozenset = frozenset()) -> KernelSpec:
    """A variant: the template with these settings as its parameters' defaults."""
    return KernelSpec(
        name=name, template="lombscargle", summary=summary, arguments=ARGUMENTS,
        params=(Param("typed", bool, typed),
                Param("local_size", default=local_size, low=0, choices=(0, LOCAL_SIZE)),
                Param("stride", bool, stride),
                # 0: the device's preferred width (DeviceFacts.vector_width)
                Param("vector_width", default=vector_width, low=0, high=16)),
        launch=launch, work_group=lambda p: (p["local_size"] or LOCAL_SIZE,),
        auto_on=auto_on)


REGISTRY = Registry([
    _variant("baseline", "the seed's kernel, double literals", False, 0, False, 1),
    _variant("typed", "literals of the kernel's type", True, 0, False, 1),
    _variant("bounded", "typed, reqd_work_group_size(128)", True, LOCAL_SIZE, False, 1,
             auto_on=frozenset({"scalar cpu"})),
    _variant("stride", "bounded, a grid-stride loop over the frequencies", True, LOCAL_SIZE,
             True, 1),
    _variant("vector", "typed, a vector of frequencies per work-item", True, 0, False, 0,
             auto_on=frozenset({"cpu", "gpu"})),
], noun="variant")
VARIANTS: dict[str, KernelSpec] = REGISTRY.specs


def device_kind(compute: Any, dtype: Any) -> str:
    """The device kind the variants' ``auto_on`` name: ``"gpu"``; ``"scalar cpu"``, a CPU that
    prefers scalars of ``dtype`` (Intel's runtime, which vectorises across work-items itself
    and ran "vector" 1.7-2.6x slower); else ``"cpu"`` (PoCL's vector sincos). On an H100
    "vector" is the fastest accurate variant, 27% and 7% less time than one frequency per
    work-item in float32 and float64 (docs/lombscargle.md)."""
    if not compute.is_cpu:
        return "gpu"
    return "scalar cpu" if compute.facts.prefers_scalars(dtype) else "cpu"


def auto_variant(compute: Any, dtype: Any) -> str:
    """The variant ``auto`` means on ``compute`` for ``dtype``."""
    return REGISTRY.auto(device_kind(compute, dtype))
