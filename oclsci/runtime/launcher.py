"""What the launcher (Slurm, Open MPI, MPICH...) says of this process, from its variables
alone: whether it is one of several MPI ranks, and its rank on its node.

Light on purpose (no NumPy, no mpi4py): the command line asks it at start-up, and only when it
answers yes is :mod:`oclsci.mpi` imported.
"""

from __future__ import annotations

import os

# Launcher variables holding the number of ranks, in order of trust.
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
    """True when mpi4py must be imported: OCLSCI_MPI=1, or a launcher announced > 1 rank."""
    environ = os.environ if environ is None else environ
    setting = environ.get("OCLSCI_MPI", "").strip().lower()
    if setting in ("0", "no", "off", "false"):
        return False
    if setting in ("1", "yes", "on", "true"):
        return True
    size = launcher_world_size(environ)
    return size is not None and size != 1
