"""``oclsci poisson`` over MPI ranks: multigrid on slabs of rows, the coarse levels on rank 0.

Every level of the hierarchy (:func:`oclsci.poisson.hierarchy.build_levels`) is cut into
slabs of rows, one per rank: the finest as :func:`~oclsci.runtime.partition.split_rows` cuts
it, each coarser one by keeping the rows whose finer row the rank holds (coarse row ``c`` is
fine row ``2c + 1``), so that restriction and interpolation read at most one row of a
neighbour: the ghost row that :meth:`PoissonHalo.exchange` fills before each step that reads
it (each half-sweep of red-black smoothing, residual, restriction, interpolation). Red-black
smoothing updates each colour's cells from the other colour only, so a slab's cells go
through the same arithmetic as on one device. Once a level would leave a rank fewer than
:data:`MIN_ROWS` rows, or has at most :data:`GATHER_CELLS` cells, its right-hand side and
start are gathered on rank 0, which runs the rest of the cycle alone (a one-device
:class:`~oclsci.poisson.multigrid.Multigrid` of the remaining levels) and sends the result
back. Norms are sums over ranks, so the residual history, and with it the number of cycles,
can differ from one device's in the last bits; the solution is the same to within the
tolerance (tests: identical to one device to rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError
from oclsci.mpi.world import TAG_GATHER, TAG_SCATTER, World
from oclsci.poisson.hierarchy import Level
from oclsci.poisson.multigrid import Multigrid
from oclsci.runtime.partition import split_rows

MIN_ROWS = 2
GATHER_CELLS = 4096
TAG_GHOST_UP, TAG_GHOST_DOWN = 31, 32


def level_slabs(levels: list[Level], ranks: int) -> tuple[list[list[tuple[int, int]]], int]:
    """The ``(first, stop)`` rows of every rank on each distributed level and on the gathered
    one, and the index of the gathered level."""
    m = levels[0].shape[0]
    if ranks > m:
        raise InputError(f"{ranks} MPI ranks for a grid of {m} rows: each rank needs at least "
                         f"one row; use at most {m} ranks")
    slabs = [split_rows(m, ranks)]
    for index in range(1, len(levels)):
        step = levels[index].row_transfer.step
        coarse = [(a // 2, b // 2) if step == 2 else (a, b) for a, b in slabs[-1]]
        slabs.append(coarse)
        rows, n = levels[index].shape
        if min(b - a for a, b in coarse) < MIN_ROWS or rows * n <= GATHER_CELLS:
            return slabs, index
    return slabs, 0  # one level only: the whole problem is gathered


class PoissonHalo:
    """This rank's slabs, ghost-row exchanges and the coarse levels gathered on rank 0 (see
    the module's docstring); the ``halo`` of :class:`~oclsci.poisson.PoissonSolver`.

    Collective: every rank makes one with the same ``levels``; ``options`` (dtype, cycle,
    pre, post, smoother) are those of the solver, for rank 0's coarse cycle.
    """

    def __init__(self, world: World, compute: Any, levels: list[Level], **options: Any):
        self.world, self.compute, self.levels = world, compute, levels
        self.slabs, self.gather_level = level_slabs(levels, world.size)
        self.options = options
        self._sub: Multigrid | None = None
        self._sub_buffers: tuple = ()
        self._rows: dict[int, tuple] = {}

    def rows(self, index: int) -> tuple[int, int]:
        """(first global row, row count) of this rank's slab on level ``index``."""
        first, stop = self.slabs[index][self.world.rank]
        return first, stop - first

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""
        return self.world.allreduce_sum(value)

    def _row_bytes(self, index: int) -> int:
        return self.levels[index].shape[1] * np.dtype(self.options["dtype"]).itemsize

    def exchange(self, buffer: Any, index: int) -> None:
        """Send this rank's first and last rows of ``buffer`` (level ``index``) to the ranks
        above and below, and put theirs in the ghost rows (zero rows at the grid's edges stay
        zero). The gathered level's ghost rows are set by :meth:`coarse`."""
        if index >= self.gather_level:
            return
        world, queue = self.world, self.compute.queue
        _, rows = self.rows(index)
        size = self._row_bytes(index)
        first, last, above, below = self._host_rows(index)
        cl.enqueue_copy(queue, first, buffer, src_offset=size)
        cl.enqueue_copy(queue, last, buffer, src_offset=rows * size)
        up = world.rank - 1 if world.rank > 0 else world.MPI.PROC_NULL
        down = world.rank + 1 if world.rank < world.size - 1 else world.MPI.PROC_NULL
        world.comm.Sendrecv(first, dest=up, sendtag=TAG_GHOST_UP, recvbuf=below, source=down,
                            recvtag=TAG_GHOST_UP)
        world.comm.Sendrecv(last, dest=down, sendtag=TAG_GHOST_DOWN, recvbuf=above, source=up,
                            recvtag=TAG_GHOST_DOWN)
        if world.rank > 0:
            cl.enqueue_copy(queue, buffer, above, dst_offset=0)
        if world.rank < world.size - 1:
            cl.enqueue_copy(queue, buffer, below, dst_offset=(rows + 1) * size)

    def _host_rows(self, index: int) -> tuple:
        """Four host rows of level ``index`` for :meth:`exchange`, made once per level."""
        if index not in self._rows:
            n, dtype = self.levels[index].shape[1], np.dtype(self.options["dtype"])
            self._rows[index] = tuple(np.zeros(n, dtype) for _ in range(4))
        return self._rows[index]

    def _owned(self, buffer: Any, index: int) -> np.ndarray:
        _, rows = self.rows(index)
        n, dtype = self.levels[index].shape[1], np.dtype(self.options["dtype"])
        out = np.empty((rows, n), dtype)
        if rows:
            cl.enqueue_copy(self.compute.queue, out, buffer, src_offset=self._row_bytes(index))
        return out

    def coarse(self, u: Any, f: Any, kind: str) -> None:
        """One cycle of the gathered level on rank 0: its rows of ``f`` and ``u`` from every
        rank, the remaining levels on rank 0's device, the new ``u`` back to every rank with
        its ghost rows."""
        index, world = self.gather_level, self.world
        pieces = world.comm.gather((self._owned(f, index), self._owned(u, index)), root=0)
        result = None
        if world.is_root:
            f_all = np.concatenate([piece[0] for piece in pieces])
            u_all = np.concatenate([piece[1] for piece in pieces])
            result = self._solve_on_root(u_all, f_all, kind)
        result = world.comm.bcast(result, root=0)
        first, rows = self.rows(index)
        padded = np.zeros((rows + 2, result.shape[1]), result.dtype)
        lo, hi = max(first - 1, 0), min(first + rows + 1, result.shape[0])
        padded[lo - first + 1:hi - first + 1] = result[lo:hi]
        cl.enqueue_copy(self.compute.queue, u, padded)

    def _solve_on_root(self, u_all: np.ndarray, f_all: np.ndarray, kind: str) -> np.ndarray:
        if self._sub is None:
            options = dict(self.options)
            dtype = options.pop("dtype")
            self._sub = Multigrid(self.compute, self.levels[self.gather_level:], dtype,
                                  **options)
            self._sub_buffers = (self._sub.vector(), self._sub.vector())
        sub, (u_sub, f_sub) = self._sub, self._sub_buffers
        sub.upload(u_sub, u_all)
        sub.upload(f_sub, f_all)
        sub.cycle(u_sub, f_sub, kind)
        return sub.download(u_sub)

    def describe(self) -> str:
        """How the ranks share the levels, for the summary."""
        shapes = self.levels[self.gather_level].shape
        return (f"{self.world.size} ranks, slabs of rows on levels 0..{self.gather_level - 1}, "
                f"level {self.gather_level} ({shapes[0]}x{shapes[1]}) and below on rank 0")


def scatter_rows(world: World, array: np.ndarray | None, rows: tuple[int, int],
                 n: int, dtype: Any) -> np.ndarray:
    """Rank 0's global ``array`` -> this rank's ``rows = (first, count)``."""
    first, count = rows
    everyone = world.comm.gather(rows, root=0)
    if world.is_root:
        for rank, (a, c) in enumerate(everyone[1:], start=1):
            world.send_array(np.ascontiguousarray(array[a:a + c], dtype=dtype), rank,
                             TAG_SCATTER)
        return np.ascontiguousarray(array[first:first + count], dtype=dtype)
    return world.recv_array(np.empty((count, n), dtype), 0, TAG_SCATTER)


def gather_rows(world: World, owned: np.ndarray, shape: tuple[int, int]) -> np.ndarray | None:
    """Every rank's rows (in rank order) -> the global array on rank 0, None elsewhere."""
    counts = world.comm.gather(owned.shape[0], root=0)
    if not world.is_root:
        world.send_array(owned, 0, TAG_GATHER)
        return None
    full = np.empty(shape, owned.dtype)
    full[:counts[0]] = owned
    start = counts[0]
    for rank, count in enumerate(counts[1:], start=1):
        world.recv_array(full[start:start + count], rank, TAG_GATHER)
        start += count
    return full


def solve_on_ranks(world: World, compute: Any, rhs: np.ndarray | None, *, tol: float,
                   max_cycles: int, method: str, dtype: Any, cycle: str, pre: int, post: int,
                   smoother: str, stop_flag: Any = None, progress: Any = None) -> Any:
    """Solve ``L x = rhs`` over the ranks of ``world`` (collective), each on its ``compute``:
    ``rhs`` is the whole right-hand side on rank 0, None elsewhere. Returns on rank 0 the
    :class:`~oclsci.poisson.PoissonResult` with the whole solution, the slowest rank's device
    time and ``extra["mpi"]`` (how the ranks shared the levels); None elsewhere.

    ``dtype`` None: rank 0's device decides, so that every rank computes alike. Errors are
    agreed: rank 0 raises its own, or the lowest failing rank's, the others exit with the
    same code. ``stop_flag`` (a :class:`~oclsci.runtime.signals.StopFlag` that does not
    raise) is polled by every rank at the same points and the answer agreed, so a signal to
    any rank stops them all with 128 + its number. ``progress(cycles, expected, residual)``
    hears each cycle on rank 0.
    """
    from oclsci.arrays import check_fits
    from oclsci.poisson.hierarchy import build_levels
    from oclsci.poisson.solve import PoissonSolver

    shape = world.bcast(None if rhs is None else tuple(rhs.shape))
    if dtype is None:  # rank 0's device decides, so that every rank computes alike
        dtype = world.bcast("float64" if compute.supports_fp64 else "float32")
    world.agree(lambda: check_fits(rhs, dtype, "the right-hand side") if world.is_root
                else None)

    def make() -> PoissonSolver:
        halo = PoissonHalo(world, compute, build_levels(shape), dtype=np.dtype(dtype),
                           cycle=cycle, pre=pre, post=post, smoother=smoother)
        return PoissonSolver(compute, shape, method=method, dtype=dtype, cycle=cycle, pre=pre,
                             post=post, smoother=smoother, halo=halo)

    def agreed_stop() -> int:
        mine = stop_flag.signum if stop_flag is not None and stop_flag() else 0
        answer = int(world.comm.allreduce(int(mine or 0), op=world.MPI.MAX))
        if answer and stop_flag is not None:
            stop_flag.stopping()
        return answer

    solver = world.agree(make)
    rows = scatter_rows(world, rhs, solver.rows, shape[1], solver.dtype)
    result = world.agree(lambda: solver.solve(
        rows, tol, max_cycles=max_cycles, should_stop=agreed_stop,
        progress=progress if world.is_root else None))
    if stop_flag is not None:  # the cycles are done: a signal now only waits for the outputs
        stop_flag.work_done()
    x = gather_rows(world, result.x, shape)
    seconds = world.allreduce_max(result.device_seconds)
    if not world.is_root:
        return None
    result.x, result.device_seconds = x, seconds
    result.extra["mpi"] = solver.halo.describe()
    return result
