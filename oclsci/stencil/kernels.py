"""The registry of stencil kernels (one :class:`~oclsci.stencil.specs.StencilKernelSpec` per
template of ``kernels/stencil/``, and Jacobi's streaming template) and how a run chooses one: a
configuration tuned for the device and the stencil's structure (``oclsci tune --stencil``:
:mod:`oclsci.stencil.tuner`), else ``auto`` per device kind and grid, a kernel's defaults for
the device, parameters a caller gives.

:data:`REGISTRY` (:class:`oclsci.kernelspec.registry.Registry`) lists them in the order commands
show them (:data:`KERNELS`), refuses unknown names and writes ``--kernel``'s help; a
:class:`StencilConfig` is a kernel of it with its parameters. Since stencil specs' functions
take the run's geometry, :func:`configurations` and :func:`tuned_config` stand for the
registry's ``default_candidates`` and ``cached_config``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from oclsci import kernelspec
from oclsci.errors import InputError, InvalidArgumentError, OclsciWarning
from oclsci.kernelspec.registry import Registry, cache_key, cache_path, cached_entry
from oclsci.stencil.language import Expression
from oclsci.stencil.specs import Geometry, StencilKernelSpec, column, step, stream, streaming, tiled

REGISTRY = Registry((step.SPEC, tiled.SPEC, stream.SPEC, column.SPEC, streaming.SPEC),
                    noun="stencil kernel")
KERNELS: dict[str, StencilKernelSpec] = REGISTRY.specs
# 2-D grids from which ``auto`` takes ``streaming`` on GPUs (for the stencils it takes)
# rather than blocking tiles (a tile per work-group leaves too few groups below it,
# streaming too few above).
STREAMING_MIN_CELLS_2D = 1 << 20


def get(name: str) -> StencilKernelSpec:
    """The spec of kernel ``name``; :class:`~oclsci.errors.UnknownNameError` naming the
    kernels if none."""
    return REGISTRY.get(name)


def check_choice(name: str) -> str:
    """``name`` when it is ``auto`` or a kernel's; otherwise
    :class:`~oclsci.errors.UnknownNameError`."""
    return REGISTRY.check_choice(name)


def check_param_names(kernel: str, params: Mapping) -> None:
    """Refuse (before any device is chosen) parameter names that ``kernel`` does not take
    (with ``auto``: that no kernel takes)."""
    specs = KERNELS.values() if check_choice(kernel) == "auto" else [get(kernel)]
    known = {param.name for spec in specs for param in spec.params}
    for name in params:
        if name not in known:
            raise InvalidArgumentError(f"kernel {kernel!r} has no parameter {name!r}; it "
                                       f"takes {', '.join(sorted(known)) or 'none'}")


def parse_param_values(kernel: str, texts: Mapping[str, str]) -> dict:
    """``--kernel-param`` texts as values of the kinds ``kernel``'s parameters declare (with
    ``auto``: a name that kernels declare with different kinds is an integer if it reads as
    one, else true or false); names checked first (:func:`check_param_names`)."""
    check_param_names(kernel, texts)
    specs = KERNELS.values() if check_choice(kernel) == "auto" else [get(kernel)]
    values = {}
    for name, text in texts.items():
        declared = [param for spec in specs for param in spec.params if param.name == name]
        kinds = {param.kind for param in declared}
        ordered = [next(p for p in declared if p.kind is kind) for kind in (int, bool)
                   if kind in kinds] or declared[:1]
        for param in ordered:
            try:
                values[name] = param.parse(text)
                break
            except ValueError as error:
                problem = str(error)
        else:
            raise InvalidArgumentError(f"--kernel-param {problem}")
    return values


def choices_help() -> str:
    """``--kernel``'s help: ``auto`` and every kernel with its summary."""
    return REGISTRY.choices_help("chosen for the device and grid", title="Kernel")


def auto_kernel(facts: Mapping, geo: Geometry) -> str:
    """The kernel ``auto`` means: on GPUs, in 2-D Jacobi's register streaming for the
    five-point stencils it takes on large grids (the kernel ``oclsci jacobi`` runs there),
    else tiles in local memory (on an H200 at 16384^2 float32, ``tiled`` ran 420 G cell
    updates/s, ``stream`` 151), in 3-D streaming: each cell's column in registers for star
    stencils (``column``), else planes in local memory (``stream`` 371, ``tiled`` 249 at
    512^3); on CPUs the one-step kernel (on PoCL it was 1.4x faster than ``tiled``
    and 1.8x than ``stream`` in 2-D, 2.7x and 4.5x in 3-D: benchmarks/stencil_cpu.py; PoCL
    pays for every barrier)."""
    if facts["is_cpu"]:
        return "step"
    if geo.dims == 3:
        return "column" if column.SPEC.handles(geo) is None else "stream"
    if geo.cells >= STREAMING_MIN_CELLS_2D and streaming.SPEC.handles(geo) is None:
        return "streaming"
    return "tiled"


@REGISTRY.configures
class StencilConfig(kernelspec.KernelConfig):
    """A stencil kernel of :data:`KERNELS` and its parameters' values (every one, defaults
    filled in); no work-group shape (the spec's launch makes it from the geometry)."""

    @property
    def steps_per_launch(self) -> int:
        """Steps one launch does."""
        key = self.spec.steps_param
        return self.params[key] if key else 1

    def with_steps(self, steps: int) -> StencilConfig:
        """The same kernel doing ``steps`` steps a launch (remainder launches)."""
        if self.spec.steps_param is None:
            return self
        return StencilConfig(self.name, {**self.params, self.spec.steps_param: steps})

    def describe(self) -> str:
        """``name`` or ``name(key=value, ...)``, in the spec's order of parameters."""
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params.items())})"

    @classmethod
    def from_json(cls, data: Any) -> StencilConfig:
        """The configuration :meth:`to_json` described, its parameters checked and completed
        (:class:`~oclsci.errors.InputError` when malformed)."""
        if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
            raise InputError("a stencil kernel configuration must be an object with a "
                             "'kernel' name and 'params'")
        return cls(data.get("kernel"), get(data.get("kernel")).resolve(data["params"]))


def configurations(facts: Mapping, kernel: str, geo: Geometry,
                   params: Mapping | None = None) -> list[StencilConfig]:
    """The configurations to try, best first, for ``kernel`` (a name or ``auto``) on a device
    with ``facts``: ``params``, those not given at the first device default's values (where
    those do not fit the ones given: at their own defaults, else the device default's),
    refused in one line if they cannot run; or else the kernel's defaults that fit the
    device; ``auto`` ends with ``step``, which always fits."""
    name = auto_kernel(facts, geo) if check_choice(kernel) == "auto" else kernel
    spec = get(name)
    if spec.handles(geo):
        raise InvalidArgumentError(f"kernel {name}: {spec.handles(geo)}")
    fitting = [p for p in map(spec.resolve, spec.defaults(facts, geo))
               if spec.problem(p, geo, facts) is None]
    if params:
        known = {param.name for param in spec.params}
        unknown = sorted(set(params) - known)
        if unknown and name != kernel:
            raise InvalidArgumentError(
                f"--kernel auto runs {name} here, which has no parameter {unknown[0]!r} (it "
                f"takes {', '.join(sorted(known)) or 'none'}); name the kernel with --kernel")
        device = fitting[0] if fitting else {}
        tries = [spec.resolve({**device, **params}), spec.resolve(
            {**{key: value for key, value in device.items()
                if spec.param(key).default is None}, **params})]
        for chosen in tries:
            why = spec.problem(chosen, geo, facts)
            if why is None:
                return [StencilConfig(name, chosen)]
        raise InvalidArgumentError(f"kernel {StencilConfig(name, chosen).describe()}: {why}")
    found = [StencilConfig(name, p) for p in fitting]
    if kernel == "auto" and name != "step":
        found += configurations(facts, "step", geo)
    if not found:
        raise InvalidArgumentError(f"kernel {name}: no configuration fits this device for a "
                                   f"{'x'.join(map(str, geo.shape))} grid of radius "
                                   f"{geo.radius}")
    return found


# -- the tuning cache -----------------------------------------------------------------------------

def structure(expression: Expression, geo: Geometry) -> str:
    """What the tuning cache tells stencils apart by (beside device, dtype and size class):
    dimension, points, shape, radius, u.prev and the number of read-only fields, e.g.
    ``stencil 2-D 5-point star radius 1, 1 field``."""
    fields = len(expression.fields)
    return (f"stencil {geo.dims}-D {len(expression.offsets())}-point {expression.shape} "
            f"radius {geo.radius}" + (", u.prev" if geo.uses_prev else "")
            + (f", {fields} field{'s' if fields > 1 else ''}" if fields else ""))


def tuning_key(compute: Any, expression: Expression, geo: Geometry, dtype: Any) -> str:
    """The tuning cache's key for a stencil run: Jacobi's key (device, driver, oclsci's
    version, dtype, size class) and the stencil's :func:`structure`."""
    return f"{cache_key(compute, np.dtype(dtype), geo.shape)} | {structure(expression, geo)}"


def tuned_config(compute: Any, expression: Expression, geo: Geometry, dtype: Any,
                 kernel: str | None = None) -> StencilConfig | None:
    """The configuration ``oclsci tune --stencil`` cached for this device, dtype, size class
    and stencil structure (the best of all, or of ``kernel``), if one fits this grid;
    None otherwise (a malformed or unfitting entry: a warning)."""
    data = cached_entry(tuning_key(compute, expression, geo, dtype), kernel)
    if data is None:
        return None
    try:
        config = StencilConfig.from_json(data)
        if kernel is not None and config.name != kernel:
            raise InputError(f"entry for kernel {kernel!r} holds {config.name!r}")
    except (InputError, TypeError, ValueError) as error:
        warnings.warn(f"ignoring a malformed stencil entry of the tuning cache {cache_path()} "
                      f"({error})", OclsciWarning, stacklevel=2)
        return None
    why = config.spec.problem(config.params, geo, compute.facts.kernel_facts())
    if why:
        warnings.warn(f"ignoring tuned {config.describe()} of the tuning cache "
                      f"{cache_path()}: {why}", OclsciWarning, stacklevel=2)
        return None
    return config


def choose(compute: Any, kernel: str, geo: Geometry, expression: Expression, dtype: Any,
           params: Mapping | None = None) -> list[StencilConfig]:
    """The configurations a run tries, best first: the tuned one for ``kernel`` (``auto``:
    the best tuned of any kernel) when the cache holds one and no ``params`` are given,
    then :func:`configurations`."""
    found = configurations(compute.facts.kernel_facts(), kernel, geo, params)
    if params:
        return found
    tuned = tuned_config(compute, expression, geo, dtype, None if kernel == "auto" else kernel)
    return found if tuned is None else [tuned] + [c for c in found if c != tuned]
