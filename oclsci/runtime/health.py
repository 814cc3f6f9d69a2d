"""Why an installed OpenCL platform offers no usable device, and checks before building.

PoCL, the CPU platform, needs a writable kernel cache folder: when it cannot create or write
it, PoCL registers its platform with no device at all (so that the user would otherwise read
"no OpenCL platform found"), and when the folder's file system is full its LLVM aborts the
process while building a kernel. These checks name the folder and what is wrong with it.
PyOpenCL's own caches (under ``$XDG_CACHE_HOME``) are turned off, with a warning, where their
folder cannot be written: PyOpenCL would otherwise fail with a traceback.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from oclsci.errors import NoPlatformError, OclsciWarning
from oclsci.runtime import cache_home

POCL_PLATFORM_NAME = "portable computing language"
# Free space PoCL needs in its cache to build a program (a program's cache entry is a few MB).
POCL_MIN_FREE_BYTES = 32 * 2**20
# PyOpenCL's caches (pytools' SQLite database, built binaries) need room to write.
PYOPENCL_MIN_FREE_BYTES = 32 * 2**20


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
    return _cache_folder_problem("PoCL's kernel cache folder", pocl_cache_dir(environ),
                                 min_free_bytes)


def _cache_folder_problem(what: str, folder: Path, min_free_bytes: int) -> str | None:
    """Why ``folder`` cannot hold a cache (made when missing, as its owner would make it; a
    file made and removed in it; at least ``min_free_bytes`` free), in words naming
    ``what``, or None."""
    if folder.exists() and not folder.is_dir():
        return f"{what} {folder} is not usable (a file, not a folder)"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        return f"{what} {folder} is not usable ({reason})"
    free = _short_of_space(folder, min_free_bytes)
    return None if free is None else f"{what} {folder} is on a full file system ({free})"


def _short_of_space(folder: Path, min_free_bytes: int) -> str | None:
    """``N MiB free`` where ``folder``'s file system has less than ``min_free_bytes`` free,
    else None (also when it cannot tell)."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    return f"{free / 2**20:.1f} MiB free" if free < min_free_bytes else None


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
    """Raise :class:`NoPlatformError` (exit 69, as when PoCL lists no device for the same
    reason) when ``platform`` cannot build kernels (PoCL's cache)."""
    if is_pocl(platform):
        problem = pocl_cache_problem()
        if problem:
            raise NoPlatformError(cache_advice(problem))


def _unwritable(folder: Path, min_free_bytes: int) -> str | None:
    """Why files cannot be made in ``folder`` (made when missing, as PyOpenCL makes it), in
    words, or None; nothing is left behind to find out (a folder is made and removed in its
    nearest existing parent: /proc takes none)."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):  # EROFS too, for root
        return f"{probe} is not writable"
    try:
        os.rmdir(tempfile.mkdtemp(dir=probe, prefix=".oclsci-probe-"))
    except OSError as error:
        return f"nothing can be made in {probe}: {error.strerror or error}"
    free = _short_of_space(probe, min_free_bytes)
    return None if free is None else f"a full file system: {free}"


def pyopencl_cache_problem() -> str | None:
    """What keeps PyOpenCL from keeping its caches (pytools' under ``$XDG_CACHE_HOME/pytools``,
    its compiler's under ``$XDG_CACHE_HOME/pyopencl``), in words, or None if they are usable."""
    import platformdirs  # PyOpenCL's and pytools' way of finding the folders

    for name in ("pytools", "pyopencl"):
        folder = Path(platformdirs.user_cache_dir(name, name))
        reason = _unwritable(folder, PYOPENCL_MIN_FREE_BYTES)
        if reason:
            return f"PyOpenCL's cache folder {folder} is not usable ({reason})"
    return None


def disable_unusable_pyopencl_cache() -> bool:
    """Run PyOpenCL without its caches, with one :class:`OclsciWarning`, where their folder
    cannot be written (PyOpenCL would fail with a traceback at the first kernel call).
    Returns True when the caches were turned off here.

    PyOpenCL reads ``PYOPENCL_NO_CACHE`` once, when it is imported, into
    ``pyopencl._PYOPENCL_NO_CACHE``, which its program builds and kernel invokers read when
    they run: both are set, before any kernel is built or called.
    """
    import pyopencl

    if getattr(pyopencl, "_PYOPENCL_NO_CACHE", False):
        return False  # turned off already (PYOPENCL_NO_CACHE=1, or an earlier call)
    problem = pyopencl_cache_problem()
    if problem is None:
        return False
    os.environ["PYOPENCL_NO_CACHE"] = "1"
    pyopencl._PYOPENCL_NO_CACHE = True
    warnings.warn(f"{problem}: running without PyOpenCL's caches (set XDG_CACHE_HOME to a "
                  "writable folder to keep them)", OclsciWarning, stacklevel=2)
    return True
