"""What a stencil kernel spec is (:class:`StencilKernelSpec`), and what specs share.

One module per kernel (``step``, ``tiled``, ``stream``, ``column`` of ``kernels/stencil/``;
``streaming``, Jacobi's ``kernels/jacobi/streaming.cl.mako`` rendered with the stencil's
update) defines ``SPEC``; :mod:`oclsci.stencil.kernels` lists them in a
:class:`~oclsci.kernelspec.registry.Registry` and chooses among them. A stencil kernel's launch,
limits and defaults depend on the stencil as well as the grid, so its spec functions take
``geo``, the run's :class:`Geometry`, where a generic :class:`~oclsci.kernelspec.KernelSpec`'s
take sizes, a dtype or an item size. They take ``p``, a configuration's parameters with
defaults filled in (:meth:`StencilKernelSpec.resolve`), and ``facts``, a device's
(:meth:`oclsci.runtime.facts.DeviceFacts.kernel_facts`: ``{"is_cpu", "cus", "max_wg",
"local_mem"}``), and make configurations as parameter dicts (no work-group shape: the
launch makes it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from oclsci.errors import InputError, InvalidArgumentError
from oclsci.kernelspec import Argument, KernelSpec, Launch

__all__ = ["WINDOW_ARGUMENTS", "Geometry", "StencilKernelSpec", "blocked_steps", "span", "tile"]

# The layers along the slowest axis that a launch writes, for the kernels that can write some
# only (runtime: :class:`oclsci.stencil.solver.StencilSolver` sets them; the others ignore them).
WINDOW_ARGUMENTS = (Argument("z_first"), Argument("z_stop"))


@dataclass(frozen=True)
class Geometry:
    """What a kernel's launch and limits depend on: the grid's shape (slowest axis first),
    the stencil's radius, whether it reads u.prev, the item size in bytes, and what it
    reads (kernels for some stencils only check it)."""

    shape: tuple[int, ...]
    radius: int
    uses_prev: bool = False
    itemsize: int = 4
    # (source, offset) of each read: source "u", "u.prev" or a field's name, the offset along
    # every axis, slowest first (empty: not known, and kernels that need it refuse).
    reads: frozenset = frozenset()

    @property
    def dims(self) -> int:
        """2 or 3."""
        return len(self.shape)

    @property
    def cells(self) -> int:
        """Cells of the grid."""
        return math.prod(self.shape)


def blocked_steps(span: int, radius: int, most: int, share: float = 0.25) -> int:
    """Steps per launch for a span of ``span`` cells across: the most (up to ``most``) whose
    halo (radius x steps on each side) takes at most ``share`` of the span, at least 1."""
    if radius == 0:
        return most
    return max(1, min(most, int(share * span) // (2 * radius)))


# The blocked kernels' parameters along each axis, slowest first: work-items and cells each.
AXES = (("local_d", "cells_z"), ("local_h", "cells_y"), ("local_w", "cells_x"))


def span(p: Mapping, geo: Geometry, plane: bool = False) -> tuple[int, ...]:
    """Cells of a blocked kernel's span (work-items x cells per item) along every axis of the
    grid, slowest first; ``plane``: along the axes across the slowest only (``stream``,
    ``column``)."""
    axes = geo.dims - 1 if plane else geo.dims
    return tuple(p[items] * p[cells] for items, cells in AXES[len(AXES) - axes:])


def tile(p: Mapping, geo: Geometry, plane: bool = False) -> tuple[int, ...]:
    """The :func:`span` less the halo (radius x max_steps on each side)."""
    halo = 2 * geo.radius * p["max_steps"]
    return tuple(size - halo for size in span(p, geo, plane))


@dataclass(frozen=True)
class StencilKernelSpec(KernelSpec):
    """A stencil kernel: a :class:`~oclsci.kernelspec.KernelSpec` whose functions take the
    run's :class:`Geometry` (see the module's docstring), so that :meth:`problem` rather than
    :meth:`KernelConfig.validate <oclsci.kernelspec.KernelConfig.validate>` checks a
    configuration, and what a stencil needs beyond it. Its ``arguments`` are the integer
    ones after the grid's, bound by name from the parameters."""

    # (p, geo) -> (global size, local size); the contiguous axis first.
    launch: Callable[[Mapping, Geometry], Launch] | None = None
    # (facts, geo) -> configurations best first (before the device's limits).
    defaults: Callable[[Mapping, Geometry], list[dict]] = lambda facts, geo: [{}]
    # (p, geo) -> bytes of local memory per work-group.
    local_mem: Callable[[Mapping, Geometry], int] = lambda p, geo: 0
    # (p, geo) -> why the parameters cannot work for this geometry, or None.
    check: Callable[[Mapping, Geometry], str | None] = lambda p, geo: None
    # (facts, geo) -> the tuning space.
    candidates: Callable[[Mapping, Geometry], list[dict]] | None = None
    # (p, geo, facts) -> rough seconds per step (orders a search; never a test's measure).
    cost: Callable[[Mapping, Geometry, Mapping], float] | None = None
    # The parameter giving the steps one launch does (None: one step).
    steps_param: str | None = None
    # geo -> why the kernel cannot run this stencil whatever its parameters (dimension,
    # radius, shape, reads), or None.
    handles: Callable[[Geometry], str | None] = lambda geo: None
    # (expression, dims, dtype) -> the template's parameters for the stencil (None: those of
    # oclsci.stencil.codegen the stencil templates share).
    codegen: Callable[[Any, int, Any], dict] | None = None

    def resolve(self, params: Mapping) -> dict:
        """:meth:`KernelSpec.resolve <oclsci.kernelspec.KernelSpec.resolve>`'s values, unknown
        names and values beyond a parameter's bounds or choices refused
        (:class:`InvalidArgumentError`)."""
        known = [param.name for param in self.params]
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise InvalidArgumentError(f"kernel {self.name!r} has no parameter "
                                       f"{unknown[0]!r}; it takes {', '.join(known) or 'none'}")
        try:
            values = super().resolve(params)
        except InputError as error:  # a parameter without a value
            raise InvalidArgumentError(str(error)) from None
        for param in self.params:
            value = values[param.name]
            if param.problem(value) or (param.choices and value not in param.choices):
                raise InvalidArgumentError(f"kernel {self.name!r}: {param.name}={value!r} is "
                                           "out of range")
        return values

    def problem(self, p: Mapping, geo: Geometry, facts: Mapping) -> str | None:
        """Why ``p`` cannot run on this device for ``geo`` (the stencil, the spec's own
        checks, local memory, work-group size), or None."""
        why = self.handles(geo) or self.check(p, geo)
        if why:
            return why
        if self.local_mem(p, geo) > facts["local_mem"]:
            return (f"needs {self.local_mem(p, geo)} bytes of local memory, the device has "
                    f"{facts['local_mem']}")
        local = self.launch(p, geo)[1]
        items = math.prod(local) if local is not None else 0  # 0: the runtime chooses
        if items > facts["max_wg"]:
            return f"work-groups of {items} exceed the device's {facts['max_wg']}"
        return None
