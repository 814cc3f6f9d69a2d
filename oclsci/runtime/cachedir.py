"""Where oclsci keeps per-user files between runs: under $XDG_CACHE_HOME, else ~/.cache, as
PyOpenCL and PoCL do (tuning results, the managed ICD folder, compiled kernel templates)."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path


def cache_home(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (``environ`` defaults to ``os.environ``).

    A relative ``$XDG_CACHE_HOME`` is ignored, as the XDG specification says; where no home
    folder can be found either, a new private folder under the temporary folder serves this
    process (never a folder relative to the working directory, nor a shared one that another
    user could have made first: oclsci imports compiled templates from its cache).
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(configured):
        return Path(configured)
    home = environ.get("HOME") or os.path.expanduser("~")
    if os.path.isabs(home):
        return Path(home) / ".cache"
    return _private_temporary_folder()


@functools.lru_cache(maxsize=1)
def _private_temporary_folder() -> Path:
    """A folder of this process's own (mode 0700), made once per process."""
    return Path(tempfile.mkdtemp(prefix="oclsci-cache-"))
