"""Why an installed OpenCL platform offers no usable device, and checks before building.

PoCL, the CPU platform, needs a writable kernel cache folder: when it cannot create or write
it, PoCL registers its platform with no device at all (so that the user would otherwise read
"no OpenCL platform found"), and when the folder's file system is full its LLVM aborts the
process while building a kernel. These checks name the folder and what is wrong with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from oclsci.errors import DeviceError
from oclsci.runtime.cachedir import cache_home

POCL_PLATFORM_NAME = "portable computing language"
# Free space PoCL needs in its cache to build a program (a program's cache entry is a few MB).
POCL_MIN_FREE_BYTES = 32 * 2**20


def is_pocl(platform: Any) -> bool:
    """True for PoCL's platform."""
    return POCL_PLATFORM_NAME in platform.name.strip().lower()


def pocl_cache_dir(environ: dict[str, str] | None = None) -> Path:
    """The folder PoCL caches kernels in: $POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl/kcache."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("POCL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return cache_home(environ) / "pocl" / "kcache"


def pocl_cache_problem(environ: dict[str, str] | None = None,
                       min_free_bytes: int | None = None) -> str | None:
    """What keeps PoCL from using its kernel cache folder, in words, or None if it is usable."""
    min_free_bytes = POCL_MIN_FREE_BYTES if min_free_bytes is None else min_free_bytes
    folder = pocl_cache_dir(environ)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        return f"PoCL's kernel cache folder {folder} is not usable ({reason})"
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    if free < min_free_bytes:
        return (f"PoCL's kernel cache folder {folder} is on a full file system "
                f"({free / 2**20:.1f} MiB free)")
    return None


def cache_advice(problem: str) -> str:
    """``problem`` with what to do about it."""
    return f"{problem}: set POCL_CACHE_DIR to a writable folder with free space"


def empty_platform_reason(platform: Any) -> str:
    """Why ``platform`` lists no device, as far as oclsci can tell."""
    if is_pocl(platform):
        problem = pocl_cache_problem()
        if problem:
            return cache_advice(problem)
    return "its driver lists none; check the driver's installation"


def check_before_build(platform: Any) -> None:
    """Raise :class:`DeviceError` when ``platform`` cannot build kernels (PoCL's cache)."""
    if is_pocl(platform):
        problem = pocl_cache_problem()
        if problem:
            raise DeviceError(cache_advice(problem))
