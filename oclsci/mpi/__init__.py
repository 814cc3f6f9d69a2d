"""Several MPI ranks, one per device: world detection, slabs, halo exchange, scatter and gather.

This is the only package that knows about MPI; the solvers stay MPI-free. ``mpi4py`` is
imported only when a launcher announces more than one rank (``mpiexec``/``mpirun`` of MPICH,
Open MPI, Intel MPI or MVAPICH, ``srun`` with several tasks) or when ``OCLSCI_MPI=1``;
``OCLSCI_MPI=0`` turns all of this off. Without mpi4py, or in a world of one rank,
:func:`mpi_world` returns None and every command runs exactly as on one device.

Jacobi: the grid is cut into 1-D slabs of whole rows. Each rank holds its owned rows, ``H``
ghost rows on each side (updated by the kernels like any other row) and one fixed row beyond
them. Errors from a stale fixed row travel one row per step, so after ``S <= H`` steps the
owned rows are still exact: ranks exchange ``H + 1`` rows with their neighbours once every
``S`` steps (``S`` a multiple of the kernel's steps per launch), and every cell goes through the
same arithmetic as on one device, so results are bit-identical to the one-device run for any
number of ranks. See docs/mpi.md.

Modules: :mod:`.world` (launcher detection, :class:`World`, per-rank caches, errors and
abort), :mod:`.slabs` (decomposition, :class:`SlabHalo`), :mod:`.overlap` (the exchange hidden
behind the interior's steps), :mod:`.jacobi`
(:class:`DistributedJacobi`, scatter/gather, :class:`SlabPlacement`, which runs the Jacobi
driver :func:`oclsci.jacobi.driver.run_job` over the ranks), :mod:`.mandelbrot` (bands of rows),
:mod:`.lombscargle` (bands of frequencies) and :mod:`.poisson` (the multigrid's levels in slabs
of rows, the coarse ones on rank 0). Nothing here prints or imports the command
line: rank 0's device lines go to a ``notify`` callback, summaries are returned.
"""

from __future__ import annotations

import importlib

# Loaded on first use (PEP 562): a one-device run that asks whether it is one of several
# ranks imports none of the distributed code.
_LAZY = {
    "InputError": "oclsci.errors", "OclsciError": "oclsci.errors",
    **dict.fromkeys(("DistributedJacobi", "RowSource", "SlabPlacement", "gather_rows",
                     "jacobi_distributed", "scatter_rows"), "oclsci.mpi.jacobi"),
    **dict.fromkeys(("describe_frequency_bands", "lombscargle_distributed"),
                    "oclsci.mpi.lombscargle"),
    **dict.fromkeys(("DEFAULT_BANDS_PER_RANK", "describe_bands", "gather_bands",
                     "mandelbrot_distributed", "rank_bands", "resolve_bands_per_rank"),
                    "oclsci.mpi.mandelbrot"),
    **dict.fromkeys(("OverlappedSlab", "sub_slabs", "wants_overlap"), "oclsci.mpi.overlap"),
    **dict.fromkeys(("DEFAULT_MIN_EXCHANGE_STEPS", "Decomposition", "Slab", "SlabHalo",
                     "exchange_period", "split_rows"), "oclsci.mpi.slabs"),
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
