"""Where oclsci keeps per-user files between runs: under $XDG_CACHE_HOME, else ~/.cache, as
PyOpenCL and PoCL do (tuning results, the managed ICD folder, compiled kernel templates)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (``environ`` defaults to ``os.environ``)."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"))
