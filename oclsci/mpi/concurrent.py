"""One device's grid as bands of rows on queues of their own, so that the end of one band's
launch overlaps the other bands' launches.

The last work-groups of a launch finish while no group of the next launch may start, and the
device idles in part until they do; the fewer waves of groups a launch makes, the more this
weighs. Bands of one grid on separate in-order queues let the device start one band's next
launch while another's ends. Each band is a slab of one
:class:`~oclsci.mpi.slabs.Decomposition` of the grid with ``G = D S`` ghost rows a side
(``S`` the steps per launch, ``D`` = :data:`GHOST_LAUNCHES`) and the fixed rows beyond them,
so every owned cell goes through the same operations as in one solver of the whole grid: the
results are bit-identical to it. A band's ghost rows stay exact for ``G`` steps after a
refresh. The bands refresh in turn (band ``i`` starts ``i mod D`` launches short of ``G``), so
that at each launch only some bands wait for their neighbours' last launch while the others
go on; with ``D = 1`` every band would wait at every launch, and the launches' ends would
line up again.

A refresh copies a neighbour's owned rows into a staging buffer on the neighbour's queue,
right after its last launch (the neighbour never waits for the band), then from there into
the band's buffers on the band's own queue: one launch of the row-copy kernel each
(:class:`~oclsci.mpi.rowcopy.RowCopier`). docs/performance.md, "Bands on concurrent queues",
gives the measurements behind the design.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

import pyopencl as cl

from oclsci.errors import InvalidArgumentError
from oclsci.mpi.rowcopy import RowCopier
from oclsci.mpi.slabs import Decomposition
from oclsci.runtime.partition import split_rows

# Launches that a band's ghost rows last between two refreshes.
GHOST_LAUNCHES = 2
# Rounds (a launch of every band) between the host's waits: it stays at most two such batches
# ahead of the device, so that a long advance() never queues without bound.
ROUNDS_PER_WAIT = 128


def bands_that_fit(rows: int, bands: int, steps_per_launch: int, *, reach: int = 1,
                   edge: int = 0) -> int:
    """At most ``bands`` bands of ``rows`` rows (one where fewer than two fit), each thick
    enough for its ghost rows and, where an outside exchange refreshes ``edge`` rows at each
    end of the grid (:class:`~oclsci.mpi.overlap.OverlappedSlab`), for the rows it sends out
    and receives there too: those must lie in one band's owned rows, away from the rows it
    hands its neighbour band."""
    least = 2 * edge + GHOST_LAUNCHES * steps_per_launch * reach if edge else 1
    count = min(int(bands), rows // max(1, least))
    return count if count > 1 else 1


class BandAdapter(Protocol):
    """What a workload tells :class:`ConcurrentBands` (its solvers have ``advance``,
    ``iteration``, ``compute`` and ``dtype``)."""

    def solver(self, compute: Any, rows: slice) -> Any:
        """The solver of the grid's interior rows ``rows`` (a band's owned and ghost rows) on
        ``compute`` (its own queue)."""

    def levels(self, solver: Any) -> list[tuple[Any, list[Any]]]:
        """Per level that a refresh copies: the buffer its rows are read from now, and the
        buffers that received rows go into."""

    def row_stride(self, solver: Any) -> int:
        """Elements of one padded row of ``solver``'s buffers."""


class ConcurrentBands:
    """The bands of an ``m`` x ``n`` grid on ``compute``'s device, ``bands`` of them, each
    on a queue of its own (the first on ``compute.queue``); ``adapter`` makes their solvers
    (:class:`BandAdapter`), whose launches advance ``steps_per_launch`` steps; a stale row's
    error travels ``reach`` rows a step (a stencil's radius). ``fixed`` and ``ring`` describe
    the solvers' layout as for :class:`~oclsci.mpi.slabs.Decomposition`.
    """

    def __init__(self, compute: Any, m: int, n: int, adapter: BandAdapter, *, bands: int,
                 steps_per_launch: int, reach: int = 1, fixed: int = 1, ring: int = 1):
        if not 1 <= bands <= m:
            raise InvalidArgumentError(f"{bands} bands for a grid of {m} rows: each band needs "
                                       "at least one row")
        self.compute = compute
        self.adapter = adapter
        self.steps_per_launch = int(steps_per_launch)
        self._lasting = GHOST_LAUNCHES * self.steps_per_launch  # steps a refresh lasts
        self.decomposition = Decomposition.from_bounds(m, n, split_rows(m, bands),
                                                       self._lasting * int(reach),
                                                       fixed=fixed, ring=ring)
        self.solvers = [adapter.solver(compute if index == 0 else compute.with_own_queue(),
                                       slice(slab.lo, slab.hi))
                        for index, slab in enumerate(self.decomposition.slabs)]
        self.row_stride = adapter.row_stride(self.solvers[0])
        self.dtype = self.solvers[0].dtype
        # One copier per (source, band) and per band: each keeps its ranges' arguments set.
        self._copiers: dict[tuple[int, int], RowCopier] = {}
        # Per band, the rows it receives: (source band, first global row, stop).
        self._sources: list[list[tuple[int, int, int]]] = [[] for _ in self.solvers]
        for source, dest, first, stop in self.decomposition.transfers():
            self._sources[dest].append((source, first, stop))
        # Steps each band's ghost rows stay exact; staggered so that bands refresh in turn.
        self._valid = [self._lasting - (index % GHOST_LAUNCHES) * self.steps_per_launch
                       for index in range(len(self.solvers))]
        # Per (source band, band, first row, level): a staging buffer, its last copy out.
        self._staging: dict[tuple[int, int, int, int], Any] = {}
        self._consumed: dict[tuple[int, int, int, int], Any] = {}
        self._last: list[Any] = [None] * len(self.solvers)
        self._rounds = 0
        self._batches: deque = deque()  # an event per ROUNDS_PER_WAIT rounds
        self.refreshes = 0

    @property
    def iteration(self) -> int:
        """Steps done (the same in every band)."""
        return self.solvers[0].iteration

    @iteration.setter
    def iteration(self, value: int) -> None:
        for solver in self.solvers:
            solver.iteration = int(value)

    def advance(self, steps: int, stopwatch: Any = None) -> Any:
        """Enqueue ``steps`` steps of every band, a launch at a time, refreshing the bands
        whose ghost rows would not last the launch; return the first band's last event, None
        for no steps (the stopwatch, when given, times every band)."""
        remaining = int(steps)
        if remaining <= 0:
            return None
        while remaining > 0:
            chunk = min(remaining,
                        self.steps_per_launch - self.iteration % self.steps_per_launch)
            for index, valid in enumerate(self._valid):
                if valid < chunk:
                    self._refresh(index)
            for index, solver in enumerate(self.solvers):
                timed = index == 0 and stopwatch is not None
                event = solver.advance(chunk, stopwatch) if timed else solver.advance(chunk)
                if event is not None:
                    self._last[index] = event
                solver.compute.queue.flush()
                self._valid[index] -= chunk
            remaining -= chunk
            self._rounds += 1
            if self._rounds % ROUNDS_PER_WAIT == 0:
                self._batches.append(self._last[-1])
                if len(self._batches) > 2:
                    self._batches.popleft().wait()
        if stopwatch is not None:  # band 0's queue too: it need not be the stopwatch's
            stopwatch.record_ends(self._last)
        return self._last[0]

    def refresh_stale(self) -> None:
        """Refresh the bands whose ghost rows next to their owned rows may be stale (what
        reading a residual needs)."""
        for index, valid in enumerate(self._valid):
            if valid < 1:
                self._refresh(index)

    def last_events(self) -> list[Any]:
        """Every band's last launch so far (those that launched)."""
        return [event for event in self._last if event is not None]

    def finish(self) -> None:
        """Wait for every band's queue."""
        for solver in self.solvers:
            solver.compute.queue.finish()

    def owned(self, first: int, stop: int):
        """(band index, solver, first, stop) in the band's padded rows for the grid's
        interior rows ``first..stop-1`` (counted from 0) that each band owns, in order."""
        for index, slab in enumerate(self.decomposition.slabs):
            a, b = max(first, slab.first), min(stop, slab.stop)
            if b > a:
                yield index, self.solvers[index], slab.local(a), slab.local(b)

    def holding(self, first: int, stop: int) -> tuple[Any, int]:
        """The band solver whose owned rows (or, at the grid's ends, the fixed rows beyond)
        hold the grid's interior rows ``first..stop-1``, and the padded row of ``first`` in
        its buffers: where an outside exchange reads and writes rows (ValueError where no one
        band holds them all)."""
        last = len(self.solvers) - 1
        fixed = self.decomposition.fixed
        for index, slab in enumerate(self.decomposition.slabs):
            low = slab.first - (fixed if index == 0 else 0)
            high = slab.stop + (fixed if index == last else 0)
            if low <= first and stop <= high:
                return self.solvers[index], slab.local(first)
        raise ValueError(f"rows {first}..{stop - 1} are not all held by one band")

    def describe(self) -> str:
        """The bands, for summaries."""
        heights = sorted({slab.rows for slab in self.decomposition.slabs})
        rows = str(heights[0]) if len(heights) == 1 else f"{heights[0]}-{heights[-1]}"
        count = len(self.solvers)
        return (f"{count} bands of {rows} rows on {count} queues, {self.decomposition.halo} "
                f"ghost rows a side; {self.refreshes} refreshes")

    def _copier(self, source: int, dest: int) -> RowCopier:
        """The copier of band ``source``'s rows out to band ``dest`` (or, ``source == dest``,
        into it), on the queue of ``source``."""
        key = (source, dest)
        if key not in self._copiers:
            self._copiers[key] = RowCopier(self.solvers[source].compute, self.dtype)
        return self._copiers[key]

    def _offset(self, index: int, row: int) -> int:
        """Elements before global interior row ``row`` in band ``index``'s buffers."""
        return self.decomposition.slabs[index].local(row) * self.row_stride

    def _refresh(self, index: int) -> None:
        """Copy into band ``index``'s ghost and fixed rows the rows its neighbours own now."""
        dest = self.solvers[index]
        into = self.adapter.levels(dest)
        staged, moves, keys = [], [], []
        for source, first, stop in self._sources[index]:
            solver = self.solvers[source]
            queue = solver.compute.queue
            count = (stop - first) * self.row_stride
            out = []
            for level, (buffer, _) in enumerate(self.adapter.levels(solver)):
                key = (source, index, first, level)
                if key not in self._staging:
                    self._staging[key] = cl.Buffer(self.compute.context, cl.mem_flags.READ_WRITE,
                                                   count * self.dtype.itemsize)
                elif key in self._consumed:  # its rows must be out before new ones go in
                    cl.enqueue_barrier(queue, wait_for=[self._consumed[key]])
                out.append((buffer, self._offset(source, first), self._staging[key], 0, count))
                moves += [(self._staging[key], 0, target, self._offset(index, first), count)
                          for target in into[level][1]]
                keys.append(key)
            staged.append(self._copier(source, index).enqueue(queue, out))
            queue.flush()
        queue = dest.compute.queue
        cl.enqueue_barrier(queue, wait_for=staged)
        event = self._copier(index, index).enqueue(queue, moves)
        for key in keys:
            self._consumed[key] = event
        self._valid[index] = self._lasting
        self.refreshes += 1
