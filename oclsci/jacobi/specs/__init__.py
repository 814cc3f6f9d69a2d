"""What the Jacobi kernels share: their grid arguments and the cost model's device figures.

The specs, each a :class:`JacobiSpec` (the generic :class:`~oclsci.kernelspec.KernelSpec` and
the steps one launch advances), live by family: :mod:`.itemwise` (``seed``, ``coalesced``,
``bands``: work-items that never wait on one another), :mod:`.tiled` (``blocked``,
``temporal``: work-groups sharing a tile, barriers) and :mod:`.streaming`; each names its
specs in capitals (``SEED``, ``STREAMING``...), and :mod:`oclsci.jacobi.kernels` lists them.
Launch shapes take the grid's interior, ``m`` x ``n``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from oclsci.kernelspec import Argument, KernelSpec

# Arguments every Jacobi kernel starts with; multi-step kernels add the step count.
GRID_ARGUMENTS = (Argument("x_new", "buffer"), Argument("x_old", "buffer"),
                  Argument("rhs", "buffer"), Argument("m"), Argument("n"),
                  Argument("row_stride"))
STEPS = Argument("steps")
# The first row a launch's tiles start at (1: all; a kernel taking it may write some rows only:
# JacobiSolver's rows_read).
ROW_FIRST = Argument("row_first")

# The cost model's device figures: launch overheads, rates and bandwidth (a rough guide).
CPU_LAUNCH, CPU_STREAM_PER_CU, CPU_CACHE_PER_CU = 20e-6, 3e8, 2e9
GPU_LAUNCH_HOST, GPU_LAUNCH, GPU_BANDWIDTH = 6e-6, 3e-6, 3.0e12


def cpu_stream_rate(itemsize: int, facts: Mapping) -> float:
    """Cells per second a CPU streams through memory."""
    return CPU_STREAM_PER_CU * facts["cus"] * 4 / itemsize


def streaming_cost(cells: int, itemsize: int, facts: Mapping, *, cpu_passes: float = 1.0,
                   gpu_penalty: float = 1.0) -> float:
    """Seconds per step of a one-step kernel that streams X and B from memory."""
    if facts["is_cpu"]:
        return CPU_LAUNCH + cells / cpu_stream_rate(itemsize, facts) * cpu_passes
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + cells * 3 * itemsize * gpu_penalty / GPU_BANDWIDTH)


def _one_cell(p: Mapping, shape: tuple[int, int], items: int) -> int:
    return 1


@dataclass(frozen=True)
class JacobiSpec(KernelSpec):
    """A Jacobi kernel: a :class:`~oclsci.kernelspec.KernelSpec` whose arguments start with
    :data:`GRID_ARGUMENTS`, and what the solver and the tests need beyond it."""

    # The parameter giving the steps one launch advances (argument "steps").
    steps_param: str | None = None
    # p -> (rows, columns) of its unit of work: tests aim grid sizes at its edges.
    tile: Callable[[Mapping], tuple[int, int]] = lambda p: (16, 16)
    # (p, shape, work-items) -> cell updates per work-item and step (simulation cost).
    work_per_item: Callable[[Mapping, tuple[int, int], int], int] = _one_cell
    # (p, shape, on a GPU, exchanged) -> bands of rows that one device runs on queues of
    # their own (oclsci/mpi/concurrent.py, oclsci/jacobi/concurrent.py); 1: the whole grid on
    # one. exchanged: the grid is an MPI rank's interior, whose edge bands join the exchange.
    queue_bands: Callable[..., int] = lambda p, shape, gpu, exchanged=False: 1
