"""Several MPI ranks, one per device: the world, slabs of rows, halo transport, bands.

This package knows MPI; the solvers stay MPI-free, and each workload's runner over ranks
lives in its own package (``oclsci.jacobi.distributed``, ``oclsci.stencil.distributed``,
``oclsci.mandelbrot.distributed``, ``oclsci.lombscargle.distributed``,
``oclsci.poisson.distributed``), built on what is here. ``mpi4py`` is imported only when a
launcher announces more than one rank (``mpiexec``/``mpirun`` of MPICH, Open MPI, Intel MPI or
MVAPICH, ``srun`` with several tasks) or when ``OCLSCI_MPI=1``; ``OCLSCI_MPI=0`` turns all of
this off. Without mpi4py, or in a world of one rank, :func:`mpi_world` returns None and every
command runs exactly as on one device.

Modules: :mod:`.world` (launcher detection, :class:`World`, per-rank caches, errors and
abort), :mod:`.slabs` (1-D slabs of rows with ghost rows, :class:`SlabHalo`; see docs/mpi.md),
:mod:`.transport` (halo rows through shared memory on a node, MPI between nodes),
:mod:`.subslabs` (a slab cut into strips and an interior; whether the ranks overlap),
:mod:`.overlap` (the exchange behind the interior's steps; a workload's adapter makes the
sub-slabs' solvers), :mod:`.rowcopy` (the copies between sub-slabs in one launch),
:mod:`.bands` (bands of independent rows dealt out and gathered), :mod:`.concurrent` (one
device's grid as bands of rows on queues of its own, with the slabs' ghost rows and row copies
and no MPI; loaded only where a grid runs in bands), :mod:`.plan` (the model of
a run's time per step; the exchange plan it chooses), :mod:`.constants` (the model's constants,
measured by ``oclsci tune --mpi`` and kept in the tuning cache). Nothing here prints or
imports the command line or a workload.
"""

from __future__ import annotations

import importlib

# Loaded on first use (PEP 562): a one-device run that asks whether it is one of several
# ranks imports none of this.
_LAZY = {
    "InputError": "oclsci.errors", "OclsciError": "oclsci.errors",
    **dict.fromkeys(("gather_bands", "rank_bands"), "oclsci.mpi.bands"),
    **dict.fromkeys(("DEFAULT_MIN_EXCHANGE_STEPS", "Decomposition", "Slab", "SlabHalo",
                     "exchange_period", "split_rows"), "oclsci.mpi.slabs"),
    **dict.fromkeys(("OverlappedSlab", "Pieces"), "oclsci.mpi.overlap"),
    **dict.fromkeys(("agreed_overlap", "sub_slabs", "wants_overlap"), "oclsci.mpi.subslabs"),
    "RowCopier": "oclsci.mpi.rowcopy",
    **dict.fromkeys(("Constants", "Plan", "Run", "choose_plan"), "oclsci.mpi.plan"),
    **dict.fromkeys(("RowTransport", "node_comm", "node_ranks_setting"), "oclsci.mpi.transport"),
    **dict.fromkeys(("MAX_MESSAGE_BYTES", "PRESENCE_VARIABLES", "SIZE_VARIABLES", "TAG_GATHER",
                     "TAG_HALO", "TAG_SCATTER", "RankError", "World", "exit_code_of",
                     "launcher_world_size", "mpi_world", "one_line", "use_rank_cache_dirs",
                     "wants_mpi"), "oclsci.mpi.world"),
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oclsci.mpi' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
