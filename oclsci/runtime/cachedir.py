"""Where oclsci keeps per-user files between runs: under $XDG_CACHE_HOME, else ~/.cache, as
PyOpenCL and PoCL do (tuning results, the managed ICD folder, compiled kernel templates)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from oclsci.errors import OclsciWarning


def cache_home(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (``environ`` defaults to ``os.environ``).

    A relative ``$XDG_CACHE_HOME`` is ignored, as the XDG specification says; where no home
    folder can be found either, or ``$HOME`` names a folder that does not exist (oclsci never
    makes a home folder), a new private folder under the temporary folder serves this process,
    with one warning (never a folder relative to the working directory, nor a shared one that
    another user could have made first: oclsci imports compiled templates from its cache).
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(configured):
        return Path(configured)
    home = environ.get("HOME") or os.path.expanduser("~")
    if os.path.isabs(home) and os.path.isdir(home):
        return Path(home) / ".cache"
    if os.path.isabs(home):
        _warn_missing_home(home)
    return _private_temporary_folder()


@functools.cache
def _warn_missing_home(home: str) -> None:
    warnings.warn(f"the home folder {home} does not exist; oclsci's cache lives in a "
                  "temporary folder for this run (set XDG_CACHE_HOME to keep it)", OclsciWarning,
                  stacklevel=3)


@functools.lru_cache(maxsize=1)
def _private_temporary_folder() -> Path:
    """A folder of this process's own (mode 0700), made once per process and removed when it
    exits."""
    folder = tempfile.mkdtemp(prefix="oclsci-cache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)
