"""Kernel configurations for the Jacobi solver: template parameters and launch shapes.

A :class:`KernelConfig` names a kernel template (``jacobi/<name>``), its compile-time template
parameters and its work-group shape. Defaults per device type are in
:mod:`oclsci.jacobi.tuning.defaults`, tuned ones in :mod:`oclsci.jacobi.tuning.cache`.

Kernels (all bit-exact against :func:`oclsci.jacobi.reference.jacobi_numpy`):

``seed``
    the talk's kernel, one step per launch, dimension 0 along rows.
``coalesced``
    one step per launch, dimension 0 along columns, ``vector`` columns and ``rows_per_item``
    rows per work-item: the streaming kernel for large grids.
``blocked``
    temporal blocking in local memory, ``halo_width`` steps per launch.
``temporal``
    temporal blocking in registers for GPUs: each work-item keeps ``rows`` x ``cols`` cells in
    registers, exchanges block edges through local memory, ``max_steps`` steps per launch.
``bands``
    for CPUs: no barriers, each work-item advances tiles of ``band_h`` rows x ``band_w``
    columns ``max_steps`` steps in a private scratch area, recomputing a shrinking halo.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oclsci.errors import InputError

KERNELS = ("seed", "coalesced", "blocked", "temporal", "bands")

# Parameters of each kernel: name -> (type, default or None when required).
PARAMETERS: dict[str, dict[str, tuple[type, Any]]] = {
    "seed": {},
    "coalesced": {"rows_per_item": (int, 1), "vector": (int, 1)},
    "blocked": {"tile_w": (int, None), "tile_h": (int, None), "halo_width": (int, None),
                "local_w": (int, None), "local_h": (int, None), "rhs_in_local": (bool, False)},
    "temporal": {"rows": (int, None), "cols": (int, None), "local_w": (int, None),
                 "local_h": (int, None), "max_steps": (int, None), "buffers": (int, 2)},
    "bands": {"band_h": (int, None), "band_w": (int, 0), "max_steps": (int, None),
              "workers": (int, 1)},
}
# Parameters that shape the launch but are not template parameters.
LAUNCH_ONLY = {"bands": {"workers"}}
# Largest value of each integer parameter: far beyond any configuration that runs well, small
# enough that sizes computed from them stay reasonable (a hand-edited cache may hold anything).
PARAMETER_LIMITS = {"max_steps": 1024, "halo_width": 1024, "rows": 64, "cols": 64,
                    "rows_per_item": 64, "local_w": 1024, "local_h": 1024, "tile_w": 8192,
                    "tile_h": 8192, "workers": 65536, "band_h": 2**24, "band_w": 2**24}
LOCAL_SIZE_LIMIT = 65536
# Kernels whose launch advances several steps, and the argument (index 6) giving how many.
MULTI_STEP = {"blocked": "halo_width", "temporal": "max_steps", "bands": "max_steps"}


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class KernelConfig:
    """A Jacobi kernel with its compile-time parameters and work-group shape."""

    name: str
    params: dict = field(default_factory=dict)
    local_size: tuple[int, int] | None = None

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params.items())), self.local_size))

    def param(self, key: str) -> Any:
        """A parameter's value, or its default."""
        if key in self.params:
            return self.params[key]
        kind, default = PARAMETERS[self.name][key]
        if default is None:
            raise InputError(f"kernel {self.name!r} needs parameter {key!r}")
        return default

    @property
    def steps_per_launch(self) -> int:
        """Jacobi steps advanced by one full launch."""
        key = MULTI_STEP.get(self.name)
        return int(self.params.get(key, 1)) if key else 1

    def template_params(self) -> dict:
        """The template parameters (defaults filled in, launch-only parameters left out)."""
        skip = LAUNCH_ONLY.get(self.name, set())
        return {key: self.param(key) for key in PARAMETERS[self.name] if key not in skip}

    def describe(self) -> str:
        """``name(param=value, ...)`` for summaries."""
        parts = [f"{k}={v}" for k, v in sorted(self.params.items())]
        if self.local_size:
            parts.append("local=" + "x".join(map(str, self.local_size)))
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    # -- shapes -----------------------------------------------------------------------------

    def temporal_tile(self) -> tuple[int, int]:
        """(tile_w, tile_h) of the temporal kernel: the span less a halo on each side."""
        k = self.param("max_steps")
        return (self.param("local_w") * self.param("cols") - 2 * k,
                self.param("local_h") * self.param("rows") - 2 * k)

    def bands_layout(self, m: int, n: int) -> dict:
        """Tiles, workers and scratch sizes (elements) of the bands kernel on an m x n grid."""
        band_h, k = self.param("band_h"), self.param("max_steps")
        band_w = self.param("band_w") or n
        tiles = math.ceil(m / band_h) * math.ceil(n / band_w)
        workers = max(1, min(self.param("workers"), tiles))
        scratch_row = round_up(band_w + 2 * k, 16)
        scratch_half = scratch_row * (band_h + 2 * k)
        return {"tiles": tiles, "workers": workers, "scratch_row": scratch_row,
                "scratch_half": scratch_half, "scratch_elements": 2 * scratch_half * workers}

    def local_mem_bytes(self, dtype: Any) -> int:
        """Local memory one work-group of this configuration declares."""
        itemsize = np.dtype(dtype).itemsize
        if self.name == "blocked":
            span = ((self.param("tile_w") + 2 * self.param("halo_width"))
                    * (self.param("tile_h") + 2 * self.param("halo_width")))
            return (3 if self.param("rhs_in_local") else 2) * span * itemsize
        if self.name == "temporal":
            lw, lh = self.param("local_w"), self.param("local_h")
            edges = 2 * lh * self.param("rows") * lw + 2 * lh * self.param("cols") * lw
            return self.param("buffers") * edges * itemsize
        return 0

    def work_group_size(self) -> int:
        """Work-items per work-group (1 when the device chooses)."""
        if self.name == "blocked":
            return self.param("local_w") * self.param("local_h")
        if self.name == "temporal":
            return self.param("local_w") * self.param("local_h")
        if self.local_size:
            return self.local_size[0] * self.local_size[1]
        return 1

    def launch_shape(self, m: int, n: int) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """Global and local sizes for an m x n interior."""
        if self.name == "seed":
            # The seed launches one work-item per padded cell, dimension 0 along rows.
            if self.local_size is None:
                return (m + 2, n + 2), None
            return ((round_up(m + 2, self.local_size[0]), round_up(n + 2, self.local_size[1])),
                    self.local_size)
        if self.name == "coalesced":
            vector = self.param("vector")
            columns = n if vector == 1 else math.ceil((n + 1) / vector)
            rows = math.ceil(m / self.param("rows_per_item"))
            if self.local_size is None:
                return (columns, rows), None
            return ((round_up(columns, self.local_size[0]), round_up(rows, self.local_size[1])),
                    self.local_size)
        if self.name == "blocked":
            local_w, local_h = self.params["local_w"], self.params["local_h"]
            groups_w = math.ceil(n / self.params["tile_w"])
            groups_h = math.ceil(m / self.params["tile_h"])
            return (groups_w * local_w, groups_h * local_h), (local_w, local_h)
        if self.name == "temporal":
            tile_w, tile_h = self.temporal_tile()
            lw, lh = self.param("local_w"), self.param("local_h")
            return (math.ceil(n / tile_w) * lw, math.ceil(m / tile_h) * lh), (lw, lh)
        if self.name == "bands":
            return (self.bands_layout(m, n)["workers"],), (1,)
        raise InputError(f"unknown kernel {self.name!r}")

    # -- checks and serialisation -----------------------------------------------------------

    def validate(self, *, max_work_group_size: int | None = None,
                 local_mem_bytes: int | None = None, dtype: Any = np.float32) -> None:
        """Raise :class:`InputError` when the parameters are missing, wrong or do not fit."""
        if self.name not in PARAMETERS:
            raise InputError(f"unknown kernel {self.name!r}; choose one of {', '.join(KERNELS)}")
        known = PARAMETERS[self.name]
        unknown = set(self.params) - set(known)
        if unknown:
            raise InputError(f"kernel {self.name!r}: unknown parameter(s) {sorted(unknown)}")
        for key, (kind, _default) in known.items():
            value = self.param(key)
            if kind is bool:
                if not isinstance(value, (bool, np.bool_)):
                    raise InputError(f"kernel {self.name!r}: {key} must be true or false")
            elif isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"kernel {self.name!r}: {key} must be an integer, got {value!r}")
            elif value < (0 if key == "band_w" else 1):
                raise InputError(f"kernel {self.name!r}: {key} must be >= 1, got {value}")
            elif value > PARAMETER_LIMITS.get(key, value):
                raise InputError(f"kernel {self.name!r}: {key} must be <= "
                                 f"{PARAMETER_LIMITS[key]}, got {value}")
        if self.local_size is not None and (len(self.local_size) != 2
                                            or min(self.local_size) < 1
                                            or max(self.local_size) > LOCAL_SIZE_LIMIT):
            raise InputError(f"kernel {self.name!r}: bad work-group shape {self.local_size}")
        if self.name == "coalesced" and self.param("vector") not in (1, 2, 4):
            raise InputError("kernel 'coalesced': vector must be 1, 2 or 4")
        if self.name == "blocked" and self.param("halo_width") < 1:
            raise InputError("kernel 'blocked': halo_width must be >= 1")
        if self.name == "temporal":
            if self.param("buffers") not in (1, 2):
                raise InputError("kernel 'temporal': buffers must be 1 or 2")
            if min(self.temporal_tile()) < 1:
                raise InputError(f"kernel 'temporal': span {self.param('local_w')}x"
                                 f"{self.param('cols')} by {self.param('local_h')}x"
                                 f"{self.param('rows')} leaves no tile inside a halo of "
                                 f"{self.param('max_steps')}")
        if max_work_group_size is not None and self.work_group_size() > max_work_group_size:
            raise InputError(f"{self.describe()}: work-group of {self.work_group_size()} "
                             f"exceeds the device's {max_work_group_size}")
        if local_mem_bytes is not None and self.local_mem_bytes(dtype) > local_mem_bytes:
            raise InputError(f"{self.describe()}: needs {self.local_mem_bytes(dtype)} bytes of "
                             f"local memory, the device has {local_mem_bytes}")

    def fits(self, compute: Any, dtype: Any) -> bool:
        """True when this configuration is valid on ``compute`` for ``dtype``."""
        try:
            self.validate(max_work_group_size=int(compute.device.max_work_group_size),
                          local_mem_bytes=int(compute.device.local_mem_size), dtype=dtype)
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
