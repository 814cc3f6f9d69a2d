"""What knows about OpenCL platforms, devices and processes, and nothing about any solver;
here, its light part: what an MPI launcher's variables say of this process, and where
per-user caches live.

- :mod:`~oclsci.runtime.device`: platforms, ``PYOPENCL_CTX``, ranks, contexts and queues;
- :mod:`~oclsci.runtime.programs`: Mako templates of ``kernels/`` rendered and built, memoised;
- :mod:`~oclsci.runtime.launch`: cheap launches, how far the host runs ahead of the device,
  timing;
- :mod:`~oclsci.runtime.memory`: host and device memory: checks before any work, pinned host
  arrays, staged transfers;
- :mod:`~oclsci.runtime.signals`: what SIGTERM, SIGUSR1, SIGINT and SIGHUP do;
- :mod:`~oclsci.runtime.health`, :mod:`~oclsci.runtime.icd`, :mod:`~oclsci.runtime.binding`:
  why a platform has no device, Intel's runtime from PyPI, GPUs given by Slurm.

Solvers receive a :class:`~oclsci.runtime.device.ComputeContext`; they never enumerate
platforms. Nothing heavy is imported here (no NumPy, no PyOpenCL, no mpi4py): the command line
asks :func:`wants_mpi` at start-up, and ``oclsci.runtime.signals`` loads without NumPy.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from oclsci.errors import OclsciWarning

# Launcher variables (Slurm, Open MPI, MPICH...) holding the number of ranks, in order of trust.
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                  "SLURM_STEP_NUM_TASKS")
# Variables that mean "started by an MPI launcher" without giving the size.
PRESENCE_VARIABLES = ("PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK")
# Variables that launchers set to the node-local rank, in order of trust.
LOCAL_RANK_VARIABLES = ("OCLSCI_LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK")


def _first_count(environ: dict[str, str], names: tuple[str, ...]) -> int | None:
    """The value of the first of ``names`` that holds a whole number, if any."""
    for name in names:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def launcher_world_size(environ: dict[str, str] | None = None) -> int | None:
    """The number of ranks a launcher announces: an int, 0 when it is unknown, else None."""
    environ = os.environ if environ is None else environ
    size = _first_count(environ, SIZE_VARIABLES)
    if size is None and any(name in environ for name in PRESENCE_VARIABLES):
        return 0
    return size


def node_local_rank(environ: dict[str, str] | None = None) -> int | None:
    """The node-local rank that a launcher announces, if any."""
    return _first_count(os.environ if environ is None else environ, LOCAL_RANK_VARIABLES)


def wants_mpi(environ: dict[str, str] | None = None) -> bool:
    """True when mpi4py must be imported (and only then is :mod:`oclsci.mpi`): OCLSCI_MPI=1,
    or a launcher announced more than one rank."""
    environ = os.environ if environ is None else environ
    setting = environ.get("OCLSCI_MPI", "").strip().lower()
    if setting in ("0", "no", "off", "false"):
        return False
    if setting in ("1", "yes", "on", "true"):
        return True
    size = launcher_world_size(environ)
    return size is not None and size != 1


def cache_home(environ: dict[str, str] | None = None) -> Path:
    """Where oclsci keeps per-user files between runs (tuning results, the managed ICD
    folder, compiled kernel templates), as PyOpenCL and PoCL do: ``$XDG_CACHE_HOME``, else
    ``~/.cache`` (``environ`` defaults to ``os.environ``).

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
