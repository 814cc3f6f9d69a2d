"""Kernel configurations for the Jacobi solver: template parameters and launch shapes.

A :class:`KernelConfig` names a kernel of :mod:`oclsci.jacobi.kernels` (template
``jacobi/<name>``), its compile-time parameters and its work-group shape; what each kernel
takes and needs is in its spec (:mod:`oclsci.jacobi.specs`). Defaults per device type are
in :mod:`oclsci.jacobi.tuning.defaults`, tuned ones in :mod:`oclsci.jacobi.tuning.cache`.
Every kernel is bit-exact against :func:`oclsci.jacobi.reference.jacobi_numpy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.errors import InputError
from oclsci.jacobi import kernels
from oclsci.jacobi.specs import KernelSpec, round_up, temporal

# The largest work-group side a configuration may name (a sanity bound on parsed caches).
LOCAL_SIZE_LIMIT = 65536

__all__ = ["LOCAL_SIZE_LIMIT", "KernelConfig", "round_up"]


def _one_of(values: tuple) -> str:
    return ", ".join(map(str, values[:-1])) + f" or {values[-1]}"


@dataclass(frozen=True)
class KernelConfig:
    """A Jacobi kernel with its compile-time parameters and work-group shape."""

    name: str
    params: dict = field(default_factory=dict)
    local_size: tuple[int, int] | None = None

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items())), self.local_size))

    @property
    def spec(self) -> KernelSpec:
        """The kernel's spec (:class:`InputError` for an unknown kernel)."""
        return kernels.get(self.name)

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

    @property
    def steps_per_launch(self) -> int:
        """Jacobi steps advanced by one full launch."""
        key = self.spec.steps_param
        return int(self.params.get(key, 1)) if key else 1

    def template_params(self) -> dict:
        """The template parameters (defaults filled in, launch-only parameters left out)."""
        return {p.name: self.param(p.name) for p in self.spec.params if p.template}

    def describe(self) -> str:
        """``name(param=value, ...)`` for summaries."""
        parts = [f"{k}={v}" for k, v in sorted(self.params.items())]
        if self.local_size:
            parts.append("local=" + "x".join(map(str, self.local_size)))
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    # -- shapes -----------------------------------------------------------------------------

    def temporal_tile(self) -> tuple[int, int]:
        """(tile_w, tile_h) of the temporal kernel: the span less a halo on each side."""
        return temporal.tile(self.values())

    def scratch_layout(self, m: int, n: int) -> dict | None:
        """The scratch buffer's layout on an m x n grid (elements), None if it needs none."""
        scratch = self.spec.scratch
        return scratch(self.values(), m, n) if scratch else None

    def bands_layout(self, m: int, n: int) -> dict:
        """Tiles, workers and scratch sizes (elements) of the bands kernel on an m x n grid."""
        return self.scratch_layout(m, n) or {}

    def local_mem_bytes(self, dtype: Any) -> int:
        """Local memory one work-group of this configuration declares."""
        local_mem = self.spec.local_mem
        return local_mem(self.values(), np.dtype(dtype).itemsize) if local_mem else 0

    def work_group_size(self) -> int:
        """Work-items per work-group (1 when the device chooses)."""
        fixed = self.spec.work_group
        shape = fixed(self.values()) if fixed else self.local_size
        return math.prod(shape) if shape else 1

    def launch_shape(self, m: int, n: int) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """Global and local sizes for an m x n interior."""
        return self.spec.launch(self.values(), self.local_size, m, n)

    # -- checks and serialisation -----------------------------------------------------------

    def validate(self, *, max_work_group_size: int | None = None,
                 local_mem_bytes: int | None = None, dtype: Any = np.float32) -> None:
        """Raise :class:`InputError` when the parameters are missing, wrong or do not fit."""
        spec = self.spec
        unknown = set(self.params) - {p.name for p in spec.params}
        if unknown:
            raise InputError(f"kernel {self.name!r}: unknown parameter(s) {sorted(unknown)}")
        for param in spec.params:
            key, value = param.name, self.param(param.name)
            if param.kind is bool:
                if not isinstance(value, (bool, np.bool_)):
                    raise InputError(f"kernel {self.name!r}: {key} must be true or false")
            elif isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"kernel {self.name!r}: {key} must be an integer, got {value!r}")
            elif value < param.low:
                raise InputError(f"kernel {self.name!r}: {key} must be >= {param.low}, "
                                 f"got {value}")
            elif param.high is not None and value > param.high:
                raise InputError(f"kernel {self.name!r}: {key} must be <= {param.high}, "
                                 f"got {value}")
        if self.local_size is not None and (len(self.local_size) != 2
                                            or min(self.local_size) < 1
                                            or max(self.local_size) > LOCAL_SIZE_LIMIT):
            raise InputError(f"kernel {self.name!r}: bad work-group shape {self.local_size}")
        for param in spec.params:
            if param.choices and self.param(param.name) not in param.choices:
                raise InputError(f"kernel {self.name!r}: {param.name} must be "
                                 f"{_one_of(param.choices)}")
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
