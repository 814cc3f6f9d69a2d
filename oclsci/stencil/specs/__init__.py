"""What a stencil kernel spec is (:class:`StencilKernelSpec`), and what specs share.

One module per kernel (``step``, ``tiled``, ``stream`` of ``kernels/stencil/``; ``streaming``,
Jacobi's ``kernels/jacobi/streaming.cl.mako`` rendered with the stencil's update) defines
``SPEC``; :mod:`oclsci.stencil.kernels` lists them and chooses among them. Spec functions take
``p``, a configuration's parameters with defaults filled in (:meth:`StencilKernelSpec.resolve`),
and ``geo``, the run's :class:`Geometry`; ``facts`` describe a device as
:meth:`oclsci.runtime.facts.DeviceFacts.kernel_facts` has them: ``{"is_cpu", "cus",
"max_wg", "local_mem"}``. :class:`Param` is the generic kernel parameter Jacobi's specs use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from oclsci.errors import InvalidArgumentError
from oclsci.kernelspec import Param

__all__ = ["BOTH", "CPU", "GPU", "Geometry", "Param", "StencilKernelSpec", "blocked_steps"]

BOTH, CPU, GPU = frozenset({"cpu", "gpu"}), frozenset({"cpu"}), frozenset({"gpu"})
Launch = tuple[tuple[int, ...], tuple[int, ...] | None]


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
        total = 1
        for size in self.shape:
            total *= size
        return total


def blocked_steps(span: int, radius: int, most: int, share: float = 0.25) -> int:
    """Steps per launch for a span of ``span`` cells across: the most (up to ``most``) whose
    halo (radius x steps on each side) takes at most ``share`` of the span, at least 1."""
    if radius == 0:
        return most
    return max(1, min(most, int(share * span) // (2 * radius)))


@dataclass(frozen=True)
class StencilKernelSpec:
    """Everything about one stencil kernel (see the module's docstring)."""

    name: str
    summary: str
    params: tuple[Param, ...]
    # (p, geo) -> (global size, local size); the contiguous axis first.
    launch: Callable[[Mapping, Geometry], Launch]
    # (facts, geo) -> configurations best first (before the device's limits).
    defaults: Callable[[Mapping, Geometry], list[dict]]
    # The parameter giving the steps one launch does (None: one step).
    steps_param: str | None = None
    # (p, geo) -> bytes of local memory per work-group.
    local_mem: Callable[[Mapping, Geometry], int] = lambda p, geo: 0
    # (p, geo) -> why the parameters cannot work for this geometry, or None.
    check: Callable[[Mapping, Geometry], str | None] = lambda p, geo: None
    # (facts, geo) -> the tuning space.
    candidates: Callable[[Mapping, Geometry], list[dict]] | None = None
    # (p, geo, facts) -> rough seconds per step (orders a search; never a test's measure).
    cost: Callable[[Mapping, Geometry, Mapping], float] | None = None
    # Parameters the launch takes as runtime arguments (the template never sees them).
    runtime: tuple[str, ...] = ()
    # Parameters the kernel takes as int arguments after the grid's, in order (runtime ones,
    # or template ones it also takes at run time).
    arguments: tuple[str, ...] = ()
    suits: frozenset = BOTH  # device kinds worth running it on
    # geo -> why the kernel cannot run this stencil whatever its parameters (dimension,
    # radius, shape, reads), or None.
    handles: Callable[[Geometry], str | None] = lambda geo: None
    # p -> template parameters derived from the kernel's parameters (added to them).
    derived: Callable[[Mapping], dict] | None = None
    # (expression, dims, dtype) -> the template's parameters for the stencil (None: those of
    # oclsci.stencil.codegen the stencil templates share).
    codegen: Callable[[Any, int, Any], dict] | None = None
    template_file: str | None = None  # the template's name when not stencil/<name>

    @property
    def template(self) -> str:
        """The template's name: ``stencil/<name>`` unless the spec names another."""
        return self.template_file or f"stencil/{self.name}"

    def resolve(self, params: Mapping) -> dict:
        """Every parameter's value: ``params`` with defaults filled in; unknown names and
        values beyond a parameter's bounds or choices refused (InputError)."""
        known = {param.name: param for param in self.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise InvalidArgumentError(f"kernel {self.name!r} has no parameter "
                                       f"{unknown[0]!r}; it takes "
                                       f"{', '.join(known) or 'none'}")
        values = {}
        for param in self.params:
            value = params.get(param.name, param.default)
            if value is None:
                raise InvalidArgumentError(f"kernel {self.name!r} needs parameter {param.name!r}")
            if isinstance(value, bool) or not isinstance(value, int) or value < param.low or \
                    (param.high is not None and value > param.high) or \
                    (param.choices and value not in param.choices):
                raise InvalidArgumentError(f"kernel {self.name!r}: {param.name}={value!r} is "
                                           "out of range")
            values[param.name] = value
        return values

    def steps_per_launch(self, p: Mapping) -> int:
        """Steps one launch does."""
        return p[self.steps_param] if self.steps_param else 1

    def work_group(self, p: Mapping, geo: Geometry) -> int:
        """Work-items per group (0: the runtime chooses)."""
        local = self.launch(p, geo)[1]
        if local is None:
            return 0
        total = 1
        for size in local:
            total *= size
        return total

    def problem(self, p: Mapping, geo: Geometry, facts: Mapping) -> str | None:
        """Why ``p`` cannot run on this device for ``geo`` (local memory, work-group size,
        the spec's own checks), or None."""
        why = self.handles(geo) or self.check(p, geo)
        if why:
            return why
        if self.local_mem(p, geo) > facts["local_mem"]:
            return (f"needs {self.local_mem(p, geo)} bytes of local memory, the device has "
                    f"{facts['local_mem']}")
        if self.work_group(p, geo) > facts["max_wg"]:
            return (f"work-groups of {self.work_group(p, geo)} exceed the device's "
                    f"{facts['max_wg']}")
        return None

    def template_params(self, p: Mapping) -> dict:
        """The parameters the template takes (the runtime ones left out, the derived ones
        added)."""
        params = {key: value for key, value in p.items() if key not in self.runtime}
        return dict(params, **self.derived(p)) if self.derived else params


def param(name: str, default: Any = None, high: int = 1024) -> Param:
    """An integer parameter of at least 1."""
    return Param(name, default=default, high=high)
