"""``python tests/mpi/mpi_failing_rank.py RANK WHEN oclsci-arguments...``: ``oclsci`` with a failure
injected on one MPI rank, for tests/mpi/test_mpi.py (run under ``mpiexec``).

WHEN is ``setup`` (rank RANK fails while it builds its slab solver) or a step number (rank
RANK fails at its first halo exchange at or after that step). The failure is patched in here,
before the command runs: production code has no test hook.
"""

from __future__ import annotations

import sys

from oclsci.cli import main
from oclsci.runtime.signals import install_exit_handlers


def inject(rank: int, when: str) -> None:
    """Make rank ``rank`` raise a RuntimeError at ``when`` (``setup`` or a step number)."""
    from oclsci.jacobi import distributed as mpi_jacobi  # after install_exit_handlers
    from oclsci.jacobi import overlap as jacobi_overlap
    from oclsci.mpi import mpi_world, overlap, slabs

    world = mpi_world()
    if world is None or world.rank != rank:
        return
    message = f"injected failure (rank {rank}, {when})"
    if when == "setup":
        def failing_solver(*args, **kwargs):
            raise RuntimeError(message)

        mpi_jacobi.JacobiSolver = jacobi_overlap.JacobiSolver = failing_solver
        return
    # Whole slabs (SlabHalo) or sub-slabs with the exchange overlapped (OverlappedSlab).
    for halo_class in (slabs.SlabHalo, overlap.OverlappedSlab):
        def failing_exchange(self, solver, real_exchange=halo_class.exchange):
            if solver.iteration >= int(when):
                raise RuntimeError(message)
            return real_exchange(self, solver)

        halo_class.exchange = failing_exchange


if __name__ == "__main__":
    install_exit_handlers()  # before NumPy starts its threads, as `python -m oclsci` does
    inject(int(sys.argv[1]), sys.argv[2])
    main(sys.argv[3:])
