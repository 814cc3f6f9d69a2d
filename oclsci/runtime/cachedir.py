"""Where oclsci keeps per-user files between runs: under $XDG_CACHE_HOME, else ~/.cache, as
PyOpenCL and PoCL do (tuning results, the managed ICD folder, compiled kernel templates)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_home(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (``environ`` defaults to ``os.environ``).

    A relative ``$XDG_CACHE_HOME`` is ignored, as the XDG specification says; where no home
    folder can be found either, a folder of this user's under the temporary folder is used,
    never one relative to the working directory.
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(configured):
        return Path(configured)
    home = environ.get("HOME") or os.path.expanduser("~")
    if os.path.isabs(home):
        return Path(home) / ".cache"
    user = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"oclsci-cache-{user}"
