"""What a kernel is, for every workload: a :class:`KernelSpec` (template, parameters,
arguments bound by name, launch shape, defaults, tuning space), listed in a workload's
:class:`~oclsci.kernelspec.registry.Registry`; a :class:`KernelConfig` is one kernel of a
registry with its parameters' values and work-group shape. Spec functions take ``p``, a
configuration's parameters with defaults filled in (:meth:`KernelSpec.resolve`), and make
configurations as ``(params, local_size)`` pairs (:data:`Choice`); ``facts`` describe a device
(:meth:`oclsci.runtime.facts.DeviceFacts.kernel_facts`): ``{"is_cpu", "cus" (compute units),
"max_wg" (work-items per group), "local_mem" (bytes)}``. Adding one: docs/architecture.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from oclsci.errors import InputError

Choice = tuple[dict, tuple[int, ...] | None]
Launch = tuple[tuple[int, ...], tuple[int, ...] | None]
BOTH, CPU, GPU = frozenset({"cpu", "gpu"}), frozenset({"cpu"}), frozenset({"gpu"})
LOCAL_SIZE_LIMIT = 65536  # the largest work-group side a configuration may name (caches)


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class Param:
    """A kernel parameter: its type, default (None: required), bounds and allowed values."""

    name: str
    kind: type = int
    default: Any = None
    low: int = 1
    high: int | None = None
    choices: tuple = ()
    template: bool = True  # False: it shapes the launch only, the template never sees it
    test_values: Sequence = ()  # small values that tests draw (property tests)

    def parse(self, text: str) -> Any:
        """``text`` as this parameter's value (booleans: true/false or 1/0, any case); raises
        ValueError naming the parameter otherwise. Bounds are :meth:`problem`'s."""
        if self.kind is bool:
            flags = {"true": True, "1": True, "false": False, "0": False}
            if text.strip().lower() not in flags:
                raise ValueError(f"{self.name} takes true or false, not {text!r}")
            return flags[text.strip().lower()]
        try:
            return self.kind(text)
        except ValueError:
            kind = "an integer" if self.kind is int else f"a {self.kind.__name__}"
            raise ValueError(f"{self.name} takes {kind}, not {text!r}") from None

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this parameter (type, bounds), or None."""
        if self.kind is bool:
            ok = isinstance(value, (bool, np.bool_))
            return None if ok else f"{self.name} must be true or false"
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            return f"{self.name} must be an integer, got {value!r}"
        if value < self.low:
            return f"{self.name} must be >= {self.low}, got {value}"
        if self.high is not None and value > self.high:
            return f"{self.name} must be <= {self.high}, got {value}"
        return None


# Argument kinds -> the scalar type the kernel takes ("real": the kernel's dtype).
SCALARS = {"int": np.int32, "long": np.int64, "ulong": np.uint64}


@dataclass(frozen=True)
class Argument:
    """An argument of the OpenCL kernel: its name and kind (buffer, int, long, ulong or
    real, the kernel's floating-point type)."""

    name: str
    kind: str = "int"

    def value(self, raw: Any, dtype: Any = None) -> Any:
        """``raw`` as the kernel takes it (np.int32 for int, ..., ``dtype`` for real)."""
        if self.kind == "real":
            return np.dtype(dtype).type(raw)
        scalar = SCALARS.get(self.kind)
        return raw if scalar is None else scalar(raw)


def _no_params(facts: Mapping, dtype: Any, shape: Any) -> list[Choice]:
    return [({}, None)]


@dataclass(frozen=True)
class KernelSpec:
    """Everything about one kernel (see the module's docstring)."""

    name: str
    template: str  # kernels/<template>.cl.mako
    params: tuple[Param, ...] = ()
    # The OpenCL kernel's arguments in order; callers bind them by name (:meth:`bind`).
    arguments: tuple[Argument, ...] = ()
    # (p, local_size, *sizes) -> (global size, local size) for a problem of those sizes.
    launch: Callable[..., Launch] | None = None
    # The OpenCL kernel's name in its template; None: the template's path with _ for /.
    function: str | None = None
    summary: str = ""  # what it is, in a few words, for --help
    # (facts, dtype, shape or None) -> configurations best first, before the device's limits.
    defaults: Callable[[Mapping, np.dtype, Any], list[Choice]] = _no_params
    # p -> the work-group shape the kernel fixes; None: the configuration's local_size.
    work_group: Callable[[Mapping], tuple[int, ...]] | None = None
    # Device kind ("cpu", "gpu") -> the work-group shape wanted there, for kernels of any shape.
    local_sizes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # (p, itemsize) -> bytes of local memory per work-group.
    local_mem: Callable[[Mapping, int], int] | None = None
    # (p, *sizes) -> scratch buffer layout: "scratch_elements" and the scalar arguments.
    scratch: Callable[..., dict] | None = None
    # p -> why the parameters cannot work together, or None.
    check: Callable[[Mapping], str | None] | None = None
    # p -> values the template derives from the parameters (computed here, once).
    derived: Callable[[Mapping], dict] | None = None
    # (shape, dtype, facts) -> the tuning space; None: nothing to tune.
    candidates: Callable[[Any, np.dtype, Mapping], list[Choice]] | None = None
    # (p, local_size, shape, itemsize, facts) -> rough seconds per step (orders the tuner).
    cost: Callable[..., float] | None = None
    suits: frozenset = BOTH  # device kinds worth running it on
    auto_on: frozenset = frozenset()  # device kinds where ``auto`` may mean this kernel
    # ``auto`` takes it for problems of at least this many cells (the largest reached wins).
    auto_min_cells: int = 0
    tuned_on: frozenset = frozenset()  # device kinds where a search tries it unasked
    examples: tuple[Choice, ...] = ()  # run on every test device
    corner_cases: tuple[Choice, ...] = ()  # run under Oclgrind; every parameter varies

    @property
    def kernel_name(self) -> str:
        """The OpenCL kernel's name (``function``, else the template's path with _ for /)."""
        return self.function or self.template.replace("/", "_")

    def param(self, key: str) -> Param:
        """The parameter called ``key`` (KeyError if none)."""
        for param in self.params:
            if param.name == key:
                return param
        raise KeyError(key)

    def resolve(self, params: Mapping) -> dict:
        """Every parameter's value: ``params`` with defaults filled in."""
        values = {}
        for param in self.params:
            if param.name in params:
                values[param.name] = params[param.name]
            elif param.default is None:
                raise InputError(f"kernel {self.name!r} needs parameter {param.name!r}")
            else:
                values[param.name] = param.default
        return values

    def template_params(self, values: Mapping) -> dict:
        """What the template is rendered with for resolved parameters ``values``: the
        template parameters and the values :attr:`derived` from them."""
        params = {p.name: values[p.name] for p in self.params if p.template}
        return dict(params, **self.derived(values)) if self.derived else params

    def argument_index(self, name: str) -> int:
        """Position of the kernel argument called ``name`` (ValueError if none)."""
        return [argument.name for argument in self.arguments].index(name)

    def bind(self, values: Mapping, dtype: Any = None) -> list:
        """The kernel's arguments in order, from ``values`` by name (``dtype``: the type of
        real arguments); KeyError names a missing one."""
        return [argument.value(values[argument.name], dtype) for argument in self.arguments]


@dataclass(frozen=True)
class KernelConfig:
    """A kernel of :attr:`registry` with its parameters and work-group shape (each workload
    binds a subclass to its registry: ``Registry.configures``)."""

    name: str
    params: dict = field(default_factory=dict)
    local_size: tuple[int, ...] | None = None
    registry: ClassVar[Any] = None

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items())), self.local_size))

    @property
    def spec(self) -> KernelSpec:
        """The kernel's spec (:class:`InputError` for an unknown kernel)."""
        return self.registry.get(self.name)

    def param(self, key: str) -> Any:
        """A parameter's value, or its default."""
        if key in self.params:
            return self.params[key]
        default = self.spec.param(key).default
        if default is None:
            raise InputError(f"kernel {self.name!r} needs parameter {key!r}")
        return default

    def values(self) -> dict:
        """Every parameter's value, defaults filled in."""
        return self.spec.resolve(self.params)

    def template_params(self) -> dict:
        """The template's parameters (defaults filled in, launch-only ones left out, derived
        ones added)."""
        return self.spec.template_params(self.values())

    def describe(self) -> str:
        """``name(param=value, ...)`` for summaries."""
        parts = [f"{k}={v}" for k, v in sorted(self.params.items())]
        if self.local_size:
            parts.append("local=" + "x".join(map(str, self.local_size)))
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    def scratch_layout(self, *sizes: int) -> dict | None:
        """The scratch buffer's layout for a problem of ``sizes`` (elements), None if none."""
        scratch = self.spec.scratch
        return scratch(self.values(), *sizes) if scratch else None

    def local_mem_bytes(self, dtype: Any) -> int:
        """Local memory one work-group of this configuration declares."""
        local_mem = self.spec.local_mem
        return local_mem(self.values(), np.dtype(dtype).itemsize) if local_mem else 0

    def work_group_size(self) -> int:
        """Work-items per work-group (1 when the device chooses)."""
        fixed = self.spec.work_group
        shape = fixed(self.values()) if fixed else self.local_size
        return math.prod(shape) if shape else 1

    def launch_shape(self, *sizes: int) -> Launch:
        """Global and local sizes for a problem of ``sizes``."""
        return self.spec.launch(self.values(), self.local_size, *sizes)

    def validate(self, *, max_work_group_size: int | None = None,
                 local_mem_bytes: int | None = None, dtype: Any = np.float32) -> None:
        """Raise :class:`InputError` when the parameters are missing, wrong or do not fit."""
        spec = self.spec
        unknown = set(self.params) - {p.name for p in spec.params}
        if unknown:
            raise InputError(f"kernel {self.name!r}: unknown parameter(s) {sorted(unknown)}")
        for param in spec.params:
            problem = param.problem(self.param(param.name))
            if problem:
                raise InputError(f"kernel {self.name!r}: {problem}")
        if self.local_size is not None and (len(self.local_size) != 2
                                            or min(self.local_size) < 1
                                            or max(self.local_size) > LOCAL_SIZE_LIMIT):
            raise InputError(f"kernel {self.name!r}: bad work-group shape {self.local_size}")
        for param in spec.params:
            if param.choices and self.param(param.name) not in param.choices:
                one_of = ", ".join(map(str, param.choices[:-1])) + f" or {param.choices[-1]}"
                raise InputError(f"kernel {self.name!r}: {param.name} must be {one_of}")
        problem = spec.check(self.values()) if spec.check else None
        if problem:
            raise InputError(f"kernel {self.name!r}: {problem}")
        if max_work_group_size is not None and self.work_group_size() > max_work_group_size:
            raise InputError(f"{self.describe()}: work-group of {self.work_group_size()} "
                             f"exceeds the device's {max_work_group_size}")
        if local_mem_bytes is not None and self.local_mem_bytes(dtype) > local_mem_bytes:
            raise InputError(f"{self.describe()}: needs {self.local_mem_bytes(dtype)} bytes of "
                             f"local memory, the device has {local_mem_bytes}")

    def fits(self, compute: Any, dtype: Any) -> bool:
        """True when this configuration is valid on ``compute`` for ``dtype``."""
        try:
            self.validate(max_work_group_size=compute.facts.max_work_group_size,
                          local_mem_bytes=compute.facts.local_mem_bytes, dtype=dtype)
        except InputError:
            return False
        return True

    def to_json(self) -> dict:
        """A JSON-able description (see :meth:`from_json`)."""
        data: dict[str, Any] = {"kernel": self.name,
                                "params": {k: (bool(v) if isinstance(v, (bool, np.bool_))
                                               else int(v)) for k, v in self.params.items()}}
        if self.local_size:
            data["local_size"] = list(self.local_size)
        return data

    @classmethod
    def from_json(cls, data: Any) -> KernelConfig:
        """The configuration :meth:`to_json` described; :class:`InputError` if malformed."""
        if not isinstance(data, dict) or not isinstance(data.get("kernel"), str):
            raise InputError("a kernel configuration must be an object with a 'kernel' name")
        params = data.get("params", {})
        local = data.get("local_size")
        if not isinstance(params, dict) or (local is not None and not isinstance(local, list)):
            raise InputError("malformed kernel configuration")
        config = cls(data["kernel"], dict(params),
                     tuple(int(v) for v in local) if local else None)
        config.validate()
        return config
