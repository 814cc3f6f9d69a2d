"""A workload's kernels by name (:class:`Registry`), and the tuning cache of their best
configurations per device.

The registry is the one place an unknown kernel name is refused, ``auto`` is resolved from
the specs' declared suitability, and ``--kernel``'s help is written. The cache is one JSON
file for every device: ``{"format": 1, "entries": {KEY: ENTRY}}``, KEY naming the device, its
driver, oclsci's version, the dtype and the size class; ENTRY holds the best configuration
("best") and the best of each kernel ("kernels"), with their timings (``oclsci tune``).
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from oclsci.errors import InputError, OclsciWarning, OutputError, UnknownNameError, first_line
from oclsci.io import atomic_path
from oclsci.kernelspec import KernelConfig, KernelSpec
from oclsci.runtime import cache_home

CACHE_FORMAT = 1
_warned: set = set()
_memo: dict = {}


class Registry:
    """The kernels of one workload, in the order commands show them."""

    def __init__(self, specs: Iterable[KernelSpec], noun: str = "kernel"):
        self.specs: dict[str, KernelSpec] = {spec.name: spec for spec in specs}
        self.noun = noun
        self.config: type[KernelConfig] = KernelConfig

    def configures(self, cls: type[KernelConfig]) -> type[KernelConfig]:
        """Class decorator: ``cls`` names kernels of this registry (and is the class its
        configurations are made of)."""
        cls.registry, self.config = self, cls
        return cls

    def get(self, name: str) -> KernelSpec:
        """The spec called ``name``; a one-line :class:`InputError` naming them if none."""
        spec = self.specs.get(name) if isinstance(name, str) else None
        if spec is None:
            raise UnknownNameError(f"unknown {self.noun} {name!r}; choose one of "
                                   f"{', '.join(self.specs)}")
        return spec

    def check_choice(self, name: str) -> str:
        """``name`` when it is ``auto`` or a spec's; otherwise :class:`InputError`."""
        if name != "auto" and (not isinstance(name, str) or name not in self.specs):
            raise UnknownNameError(f"unknown {self.noun} {name!r}; choose auto or one of "
                                   f"{', '.join(self.specs)}")
        return name

    def suited(self, kind: str) -> tuple[str, ...]:
        """The kernels worth running on device kind ``kind`` (benchmarks, tuning)."""
        return tuple(name for name, spec in self.specs.items() if kind in spec.suits)

    def auto(self, kind: str, cells: int = 0) -> str:
        """The kernel ``auto`` means on device kind ``kind`` for a problem of ``cells``
        cells, without a tuned configuration: of those ``auto`` may mean there, the one with
        the largest ``auto_min_cells`` that the problem reaches."""
        reached = [(spec.auto_min_cells, name) for name, spec in self.specs.items()
                   if kind in spec.auto_on and spec.auto_min_cells <= cells]
        return max(reached, key=lambda entry: entry[0])[1]

    def tuned_by_default(self, kind: str) -> tuple[str, ...]:
        """The kernels a search tries unasked on device kind ``kind``, ``auto``'s first (for
        the smallest problems)."""
        first = self.auto(kind)
        return (first,) + tuple(name for name, spec in self.specs.items()
                                if kind in spec.tuned_on and name != first)

    def tunable(self) -> tuple[str, ...]:
        """The kernels with a tuning space."""
        return tuple(name for name, spec in self.specs.items() if spec.candidates is not None)

    def choices_help(self, auto: str, title: str | None = None) -> str:
        """Help for a ``--kernel`` option: ``title`` (default: the noun, capitalised), then
        ``auto`` (meaning ``auto``) and every kernel with its summary."""
        named = [f"{name} ({spec.summary})" if spec.summary else name
                 for name, spec in self.specs.items()]
        title = title or self.noun.capitalize()
        return f"{title}: auto ({auto}), " + ", ".join(named) + "."

    def default_candidates(self, name: str, facts: Mapping, dtype: Any,
                           shape: Any = None) -> list[KernelConfig]:
        """The spec's default configurations that fit the device's ``facts`` (work-group and
        local memory), best first; never empty: when nothing fits, the smallest."""
        configs = [self.config(name, params, local)
                   for params, local in self.get(name).defaults(facts, np.dtype(dtype), shape)]
        fitting = [config for config in configs
                   if config.local_mem_bytes(dtype) <= facts["local_mem"]
                   and config.work_group_size() <= facts["max_wg"]]
        return fitting or configs[-1:]

    def cached_config(self, compute: Any, dtype: Any, shape: tuple[int, ...],
                      kernel: str | None = None) -> KernelConfig | None:
        """The configuration tuned for this device, dtype and size class (of ``kernel``), if
        the cache holds one that fits the device."""
        data = cached_entry(cache_key(compute, dtype, shape), kernel)
        if data is None:
            return None
        try:
            config = self.config.from_json(data)
            if kernel is not None and config.name != kernel:
                raise InputError(f"entry for kernel {kernel!r} holds {config.name!r}")
        except (InputError, TypeError, ValueError, OverflowError) as error:
            warn_once(f"ignoring a malformed entry of the tuning cache {cache_path()} ({error})")
            return None
        if not config.fits(compute, dtype):
            warn_once(f"ignoring tuned {config.describe()} of the tuning cache {cache_path()}: it "
                  f"does not fit device {compute.name}")
            return None
        layout = config.scratch_layout(*shape)
        if layout is not None:
            nbytes = 2 * layout["scratch_elements"] * np.dtype(dtype).itemsize
            if nbytes // 2 > compute.facts.max_alloc_bytes:
                warn_once(f"ignoring tuned {config.describe()} of the tuning cache {cache_path()}: "
                      f"its scratch of {nbytes / 2**30:.2f} GiB does not fit device "
                      f"{compute.name}")
                return None
        return config


# -- the tuning cache ---------------------------------------------------------------------------

def cache_disabled() -> bool:
    """True when ``OCLSCI_TUNE_CACHE=off``: nothing is read from or written to a cache."""
    return os.environ.get("OCLSCI_TUNE_CACHE", "").strip().lower() == "off"


def cache_path() -> Path:
    """$OCLSCI_TUNE_CACHE, else $XDG_CACHE_HOME/oclsci/tuning.json, else ~/.cache/oclsci/..."""
    explicit = os.environ.get("OCLSCI_TUNE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    return cache_home() / "oclsci" / "tuning.json"


def size_class(shape: tuple[int, ...]) -> int:
    """The size class of a problem: log2 of its cell count, rounded."""
    return int(round(math.log2(max(1, math.prod(int(v) for v in shape)))))


def cached_entry(key: str, kernel: str | None = None) -> Any:
    """The tuning cache's configuration (as stored) under ``key``: the best of all, or of
    ``kernel``; None when the cache is off or holds none."""
    if cache_disabled():
        return None
    entry = load_cache().get(key)
    if not isinstance(entry, dict):
        return None
    if kernel is None:
        return entry.get("best")
    kernels = entry.get("kernels")
    return kernels.get(kernel) if isinstance(kernels, dict) else None


def device_key(compute: Any) -> str:
    """What every cache key begins with: device, driver and oclsci version."""
    from oclsci import __version__

    device = compute.device
    return " | ".join([device.name.strip(), f"driver {device.driver_version.strip()}",
                       f"oclsci {__version__}"])


def cache_key(compute: Any, dtype: Any, shape: tuple[int, ...]) -> str:
    """The cache key: device, driver, oclsci version, dtype and size class."""
    return " | ".join([device_key(compute), np.dtype(dtype).name,
                       f"cells~2^{size_class(shape)}"])


def warn_once(message: str) -> None:
    """Warn about the cache (an :class:`OclsciWarning`), each message once per process."""
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, OclsciWarning, stacklevel=3)


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
            warn_once(f"ignoring the tuning cache {path} ({first_line(error)}); "
                  "`oclsci tune` rewrites it")
        entries = {}
    _memo[memo_key] = entries
    return entries


def save_entry(key: str, entry: dict, path: Path | None = None) -> Path | None:
    """Add or replace one entry of the cache, atomically (:func:`oclsci.io.atomic_path`).

    Returns the cache's path, or None when the cache is off (``OCLSCI_TUNE_CACHE=off``).
    A cache that cannot be written raises :class:`~oclsci.errors.OutputError` naming it.
    """
    if path is None and cache_disabled():
        return None
    path = cache_path() if path is None else Path(path)
    entries = dict(load_cache(path, quiet=True))
    entries[key] = entry
    text = json.dumps({"format": CACHE_FORMAT, "entries": entries}, indent=1, sort_keys=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{path}: cannot create its folder ({error.strerror or error})") \
            from None
    with atomic_path(path) as temporary:
        temporary.write_text(text + "\n", encoding="utf-8")
    return path


def check_writable(path: Path | None = None) -> Path | None:
    """Refuse, before a search, a cache that :func:`save_entry` could not write, with a
    one-line :class:`~oclsci.errors.OutputError` naming it: a folder, or a path whose nearest
    existing folder is a file or not writable (missing folders are made when saving). Returns
    the cache's path, or None when the cache is off."""
    if path is None and cache_disabled():
        return None
    path = cache_path() if path is None else Path(path)
    if path.is_dir():
        raise OutputError(f"{path}: the tuning cache is a folder; name a file "
                          "(OCLSCI_TUNE_CACHE=FOLDER/tuning.json)")
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the folders that saving would make
    if not existing.is_dir():
        raise OutputError(f"{path}: cannot create its folder ({existing} is not a folder)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: cannot write the tuning cache ({existing} is not "
                          "writable)")
    return path


def make_entry(best: KernelConfig, kernels: dict[str, tuple[KernelConfig, float]],
               shape: tuple[int, ...], seconds_per_step: float) -> dict:
    """A cache entry: the best configuration and the best of each kernel, with timings."""
    return {"best": best.to_json(), "us_per_step": 1e6 * seconds_per_step,
            "shape": list(shape), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "kernels": {name: dict(config.to_json(), us_per_step=1e6 * seconds)
                        for name, (config, seconds) in kernels.items()}}
