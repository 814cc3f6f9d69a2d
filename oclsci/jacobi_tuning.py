"""Kernel configurations for the Jacobi solver: template parameters, launch shapes, defaults.

A :class:`KernelConfig` names a kernel template (``jacobi_<name>``), its compile-time template
parameters and its work-group shape. :func:`choose_config` gives the configuration for a
kernel name on a device: ``auto`` takes the tuned configuration cached for the device, dtype
and size class (see :mod:`oclsci.tune`, command ``oclsci tune``) and otherwise a default that
suits the device type (:func:`default_config`).

Kernels (all bit-exact against :func:`oclsci.jacobi_reference.jacobi_numpy`):

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

import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

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


# -- defaults ---------------------------------------------------------------------------------

def _bands_default(shape: tuple[int, int], dtype: Any, compute_units: int,
                   cache_bytes: int = 384 * 1024) -> KernelConfig:
    """Bands sized so that a work-item's two scratch halves stay in its core's cache."""
    m, n = shape
    steps = 8
    band_w = n if n <= 1024 else 512
    elements = cache_bytes // np.dtype(dtype).itemsize
    band_h_max = max(8, elements // (round_up(band_w + 2 * steps, 16)) // 2 - 2 * steps)
    # Equal bands, a multiple of the number of cores of them.
    tiles_h = round_up(max(math.ceil(m / band_h_max), 1), compute_units)
    band_h = max(1, math.ceil(m / tiles_h))
    return KernelConfig("bands", {"band_h": band_h, "band_w": 0 if band_w == n else band_w,
                                  "max_steps": steps, "workers": compute_units})


# Default temporal configurations (rows, cols, local_w, local_h, max_steps, buffers), by grid
# size (more than 2^20 cells: large) and item size, from `oclsci tune` on an H100 and an H200
# (docs/performance.md: within 1-3% of the best on both); then smaller ones for devices with
# less local memory or smaller work-groups.
TEMPORAL_DEFAULTS = {
    ("small", 4): [(2, 2, 32, 32, 16, 1), (4, 2, 32, 16, 16, 2)],
    ("small", 8): [(4, 2, 32, 16, 16, 1)],
    ("large", 4): [(8, 4, 32, 8, 8, 2), (8, 4, 32, 16, 12, 1)],
    ("large", 8): [(4, 2, 32, 8, 4, 2), (4, 2, 32, 16, 4, 1)],
}
TEMPORAL_FALLBACKS = [(4, 2, 32, 8, 8, 1), (4, 2, 16, 8, 4, 1), (2, 2, 16, 8, 4, 1),
                      (2, 2, 8, 8, 2, 1)]


def _preferred_configs(name: str, *, is_cpu: bool, dtype: Any, local_mem_bytes: int,
                       shape: tuple[int, int] | None, compute_units: int) -> list[KernelConfig]:
    """Configurations of kernel ``name``, best first, before any check of the device's limits."""
    itemsize = np.dtype(dtype).itemsize
    if name == "seed":
        return [KernelConfig("seed")]
    if name == "coalesced":
        if is_cpu:
            return [KernelConfig("coalesced", {"rows_per_item": 4})]
        # From `oclsci tune` for 16384^2 on an H100 and an H200 (docs/performance.md):
        # within 1-2% of the best of either (float32); 16-byte vectors (float64). Then
        # narrower groups for devices or kernels allowing fewer work-items (ROCm: 256).
        params, shapes = (({"rows_per_item": 4, "vector": 2}, [(128, 4), (64, 4), (32, 4)])
                          if itemsize == 4 else
                          ({"rows_per_item": 2, "vector": 2}, [(64, 8), (32, 8), (16, 8)]))
        return [KernelConfig("coalesced", params, shape) for shape in shapes] + [
            KernelConfig("coalesced", params)]
    if name == "blocked":
        if is_cpu:
            params = {"tile_w": 64, "tile_h": 32, "halo_width": 8, "local_w": 64, "local_h": 4}
        else:
            params = {"tile_w": 32, "tile_h": 32, "halo_width": 16, "local_w": 32, "local_h": 16}
        span = (params["tile_w"] + 2 * params["halo_width"]) * (
            params["tile_h"] + 2 * params["halo_width"])
        params["rhs_in_local"] = 3 * span * itemsize <= local_mem_bytes
        if 2 * span * itemsize > local_mem_bytes:
            params.update(tile_w=16, tile_h=16, halo_width=8, local_w=16, local_h=16)
        configs = [KernelConfig("blocked", dict(params))]
        # Fewer work-items over the same tile (each loops over more cells), then less memory.
        while params["local_w"] * params["local_h"] > 16:
            key = "local_h" if params["local_h"] >= params["local_w"] // 2 else "local_w"
            params[key] //= 2
            configs.append(KernelConfig("blocked", dict(params)))
        configs.append(KernelConfig("blocked", {"tile_w": 16, "tile_h": 16, "halo_width": 4,
                                                "local_w": 8, "local_h": 8,
                                                "rhs_in_local": False}))
        return configs
    if name == "temporal":
        # Tuned on an H100 (oclsci tune): the first that fits the device wins.
        large = shape is not None and shape[0] * shape[1] > 2**20
        keys = ("rows", "cols", "local_w", "local_h", "max_steps", "buffers")
        choices = TEMPORAL_DEFAULTS[("large" if large else "small", itemsize)]
        return [KernelConfig("temporal", dict(zip(keys, values, strict=True)))
                for values in choices + TEMPORAL_FALLBACKS]
    if name == "bands":
        return [_bands_default(shape or (256, 256), dtype, compute_units)]
    raise InputError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)} or auto")


def default_candidates(name: str, *, is_cpu: bool, dtype: Any = np.float32,
                       local_mem_bytes: int = 48 * 1024, shape: tuple[int, int] | None = None,
                       compute_units: int = 2, max_work_group_size: int = 1024
                       ) -> list[KernelConfig]:
    """Default configurations of ``name`` that fit the device's limits, best first.

    Each fits ``max_work_group_size`` (CL_DEVICE_MAX_WORK_GROUP_SIZE) and ``local_mem_bytes``
    (CL_DEVICE_LOCAL_MEM_SIZE). A built kernel may allow fewer work-items still
    (CL_KERNEL_WORK_GROUP_SIZE: register pressure, or ROCm's 256 for kernels without
    ``reqd_work_group_size``); :class:`oclsci.jacobi.JacobiSolver` then takes the next one.
    Never empty: when nothing fits, the smallest is returned (and refused with a clear error
    when the solver validates it).
    """
    configs = _preferred_configs(name, is_cpu=is_cpu, dtype=dtype,
                                 local_mem_bytes=local_mem_bytes, shape=shape,
                                 compute_units=compute_units)
    fitting = [config for config in configs
               if config.local_mem_bytes(dtype) <= local_mem_bytes
               and config.work_group_size() <= max_work_group_size]
    return fitting or configs[-1:]


def default_config(name: str, *, is_cpu: bool, dtype: Any = np.float32,
                   local_mem_bytes: int = 48 * 1024, shape: tuple[int, int] | None = None,
                   compute_units: int = 2, max_work_group_size: int = 1024) -> KernelConfig:
    """A sensible configuration of kernel ``name`` for a CPU or a GPU, without tuning: the
    first of :func:`default_candidates`."""
    return default_candidates(name, is_cpu=is_cpu, dtype=dtype, local_mem_bytes=local_mem_bytes,
                              shape=shape, compute_units=compute_units,
                              max_work_group_size=max_work_group_size)[0]


def device_candidates(compute: Any, name: str, dtype: Any,
                      shape: tuple[int, int]) -> list[KernelConfig]:
    """:func:`default_candidates` for ``compute``'s device type, limits and cores."""
    return default_candidates(name, is_cpu=compute.is_cpu, dtype=dtype,
                              local_mem_bytes=int(compute.device.local_mem_size), shape=shape,
                              compute_units=int(compute.device.max_compute_units),
                              max_work_group_size=int(compute.device.max_work_group_size))


def device_default(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """:func:`default_config` for ``compute``'s device type, local memory and cores."""
    return device_candidates(compute, name, dtype, shape)[0]


def suited_kernels(compute: Any) -> tuple[str, ...]:
    """The kernels worth running on this device type (benchmarks, tuning).

    ``temporal`` synchronises work-groups at every step, which CPUs (PoCL) do slowly;
    ``bands`` runs one work-item per core-sized tile, which starves GPUs.
    """
    if compute.is_cpu:
        return ("seed", "coalesced", "blocked", "bands")
    return ("seed", "coalesced", "blocked", "temporal")


def auto_kernel(compute: Any) -> str:
    """The kernel ``auto`` means on this device without a tuned configuration."""
    return "bands" if compute.is_cpu else "temporal"


def choose_config(compute: Any, name: str, dtype: Any, shape: tuple[int, int]) -> KernelConfig:
    """The configuration to run kernel ``name`` (or ``auto``) on ``compute``.

    A configuration tuned on this device (``oclsci tune``) for this dtype and size class wins;
    otherwise the device type's default.
    """
    if name != "auto" and name not in KERNELS:
        raise InputError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)} or auto")
    tuned = cached_config(compute, dtype, shape, None if name == "auto" else name)
    if tuned is not None:
        return tuned
    return device_default(compute, auto_kernel(compute) if name == "auto" else name, dtype,
                          shape)


# -- the tuning cache -------------------------------------------------------------------------
#
# One JSON file for every device: {"format": 1, "entries": {KEY: ENTRY}}, KEY naming the
# device, its driver, oclsci's version, the dtype and the size class; ENTRY holds the best
# configuration ("best") and the best of each kernel ("kernels"), with their timings.

CACHE_FORMAT = 1
_warned: set = set()
_memo: dict = {}


def cache_disabled() -> bool:
    """True when ``OCLSCI_TUNE_CACHE=off``: nothing is read from or written to a cache."""
    return os.environ.get("OCLSCI_TUNE_CACHE", "").strip().lower() == "off"


def cache_path() -> Path:
    """$OCLSCI_TUNE_CACHE, else $XDG_CACHE_HOME/oclsci/tuning.json, else ~/.cache/oclsci/..."""
    explicit = os.environ.get("OCLSCI_TUNE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "oclsci" / "tuning.json"


def size_class(shape: tuple[int, int]) -> int:
    """The size class of an m x n grid: log2 of its cell count, rounded."""
    m, n = shape
    return int(round(math.log2(max(1, int(m) * int(n)))))


def cache_key(compute: Any, dtype: Any, shape: tuple[int, int]) -> str:
    """The cache key: device, driver, oclsci version, dtype and size class."""
    from . import __version__

    device = compute.device
    return " | ".join([device.name.strip(), f"driver {device.driver_version.strip()}",
                       f"oclsci {__version__}", np.dtype(dtype).name,
                       f"cells~2^{size_class(shape)}"])


def _warn(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"oclsci: warning: {message}", file=sys.stderr)


def load_cache(path: Path | None = None, *, quiet: bool = False) -> dict:
    """The cache's entries ({} when absent or off; one warning line when unreadable or corrupt)."""
    if path is None and cache_disabled():
        return {}
    path = cache_path() if path is None else Path(path)
    try:
        stat = path.stat()
    except OSError:
        return {}
    memo_key = (str(path), stat.st_mtime_ns, stat.st_size)
    if memo_key in _memo:
        return _memo[memo_key]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
            raise ValueError("not an oclsci tuning cache")
        if data.get("format") != CACHE_FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {CACHE_FORMAT}")
        entries = data["entries"]
    except (OSError, ValueError, RecursionError) as error:
        if not quiet:
            _warn(f"ignoring the tuning cache {path} ({str(error).splitlines()[0]}); "
                  "`oclsci tune` rewrites it")
        entries = {}
    _memo[memo_key] = entries
    return entries


def save_entry(key: str, entry: dict, path: Path | None = None) -> Path | None:
    """Add or replace one entry of the cache, atomically (temporary file + os.replace).

    Returns the cache's path, or None when the cache is off (``OCLSCI_TUNE_CACHE=off``).
    """
    if path is None and cache_disabled():
        return None
    path = cache_path() if path is None else Path(path)
    entries = dict(load_cache(path, quiet=True))
    entries[key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": CACHE_FORMAT, "entries": entries}, indent=1, sort_keys=True)
    fd, temporary = tempfile.mkstemp(prefix=".tuning-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text + "\n")
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return path


def make_entry(best: KernelConfig, kernels: dict[str, tuple[KernelConfig, float]],
               shape: tuple[int, int], seconds_per_step: float) -> dict:
    """A cache entry: the best configuration and the best of each kernel, with timings."""
    return {"best": best.to_json(), "us_per_step": 1e6 * seconds_per_step,
            "shape": list(shape), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "kernels": {name: dict(config.to_json(), us_per_step=1e6 * seconds)
                        for name, (config, seconds) in kernels.items()}}


def cached_config(compute: Any, dtype: Any, shape: tuple[int, int],
                  kernel: str | None = None) -> KernelConfig | None:
    """The tuned configuration for this device, dtype and size class (of ``kernel``), if any."""
    if cache_disabled():
        return None
    key = cache_key(compute, dtype, shape)
    entry = load_cache().get(key)
    if not isinstance(entry, dict):
        return None
    kernels = entry.get("kernels")
    data = entry.get("best") if kernel is None else (
        kernels.get(kernel) if isinstance(kernels, dict) else None)
    if data is None:
        return None
    try:
        config = KernelConfig.from_json(data)
        if kernel is not None and config.name != kernel:
            raise InputError(f"entry for kernel {kernel!r} holds {config.name!r}")
    except (InputError, TypeError, ValueError, OverflowError) as error:
        _warn(f"ignoring a malformed entry of the tuning cache {cache_path()} ({error})")
        return None
    if not config.fits(compute, dtype):
        _warn(f"ignoring tuned {config.describe()} of the tuning cache {cache_path()}: it does "
              f"not fit device {compute.name}")
        return None
    if config.name == "bands":
        nbytes = 2 * config.bands_layout(*shape)["scratch_elements"] * np.dtype(dtype).itemsize
        if nbytes // 2 > int(compute.device.max_mem_alloc_size):
            _warn(f"ignoring tuned {config.describe()} of the tuning cache {cache_path()}: its "
                  f"scratch of {nbytes / 2**30:.2f} GiB does not fit device {compute.name}")
            return None
    return config
