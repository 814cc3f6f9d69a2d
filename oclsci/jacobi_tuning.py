"""Kernel configurations for the Jacobi solver: template parameters and launch shapes.

A :class:`KernelConfig` names a kernel template (``jacobi_<name>``), its compile-time template
parameters and its work-group shape. :func:`choose_config` gives the configuration for a
kernel name on a device: ``auto`` picks the kernel by device type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InputError


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class KernelConfig:
    """A Jacobi kernel with its compile-time parameters and work-group shape."""

    name: str
    params: dict = field(default_factory=dict)
    local_size: tuple[int, int] | None = None

    @property
    def steps_per_launch(self) -> int:
        """Jacobi steps advanced by one launch (the halo width for the blocked kernel)."""
        return int(self.params.get("halo_width", 1)) if self.name == "blocked" else 1

    def describe(self) -> str:
        """``name(param=value, ...)`` for summaries."""
        parts = [f"{k}={v}" for k, v in sorted(self.params.items())]
        if self.local_size:
            parts.append("local=" + "x".join(map(str, self.local_size)))
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    def launch_shape(self, m: int, n: int) -> tuple[tuple[int, int], tuple[int, int] | None]:
        """Global and local sizes for an m x n interior."""
        if self.name == "seed":
            # The seed launches one work-item per padded cell, dimension 0 along rows.
            if self.local_size is None:
                return (m + 2, n + 2), None
            return ((round_up(m + 2, self.local_size[0]), round_up(n + 2, self.local_size[1])),
                    self.local_size)
        if self.name == "coalesced":
            rows = math.ceil(m / self.params["rows_per_item"])
            if self.local_size is None:
                return (n, rows), None
            return ((round_up(n, self.local_size[0]), round_up(rows, self.local_size[1])),
                    self.local_size)
        if self.name == "blocked":
            local_w, local_h = self.params["local_w"], self.params["local_h"]
            groups_w = math.ceil(n / self.params["tile_w"])
            groups_h = math.ceil(m / self.params["tile_h"])
            return (groups_w * local_w, groups_h * local_h), (local_w, local_h)
        raise InputError(f"unknown kernel {self.name!r}")


def default_config(name: str, *, is_cpu: bool, dtype: Any = np.float32,
                   local_mem_bytes: int = 48 * 1024) -> KernelConfig:
    """A sensible configuration of kernel ``name`` for a CPU or a GPU, without tuning."""
    if name == "seed":
        return KernelConfig("seed")
    if name == "coalesced":
        if is_cpu:
            return KernelConfig("coalesced", {"rows_per_item": 4})
        return KernelConfig("coalesced", {"rows_per_item": 1}, (32, 8))
    if name == "blocked":
        itemsize = np.dtype(dtype).itemsize
        if is_cpu:
            params = {"tile_w": 64, "tile_h": 32, "halo_width": 8, "local_w": 64, "local_h": 4}
        else:
            params = {"tile_w": 32, "tile_h": 32, "halo_width": 16, "local_w": 32, "local_h": 16}
        span = (params["tile_w"] + 2 * params["halo_width"]) * (
            params["tile_h"] + 2 * params["halo_width"])
        params["rhs_in_local"] = 3 * span * itemsize <= local_mem_bytes
        if 2 * span * itemsize > local_mem_bytes:
            params.update(tile_w=16, tile_h=16, halo_width=8, local_w=16, local_h=16)
        return KernelConfig("blocked", params)
    raise InputError(f"unknown kernel {name!r}; choose one of seed, coalesced, blocked or auto")


def choose_config(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """The configuration to run kernel ``name`` (or ``auto``) on ``compute``."""
    if name == "auto":
        name = "coalesced" if compute.is_cpu else "blocked"
    return default_config(name, is_cpu=compute.is_cpu, dtype=dtype,
                          local_mem_bytes=int(compute.device.local_mem_size))
