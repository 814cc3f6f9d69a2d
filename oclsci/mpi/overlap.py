"""A slab whose halo exchange runs while its interior steps, for any workload's slabs.

The rank's slab is cut into sub-slabs, each with a solver of its own on the rank's device: a
strip at each edge that faces another rank (``H + fixed`` owned rows: what that rank needs;
``H`` ghost rows, plus Jacobi's fixed row) and the interior between them. Every sub-slab of
every rank is a slab of one :class:`~oclsci.mpi.slabs.Decomposition` of the global grid, with
the slabs' ghost and fixed rows, so every owned cell goes through the same operations as on
one device: results are bit-identical to one device, as with whole slabs. A "row" is a layer
along the slowest axis (a plane of a 3-D stencil grid), as in :mod:`oclsci.mpi.slabs`.

Per exchange period the device's queue runs the strips' steps, then the interior's (an
interior in bands runs beside them, on queues of its own: below). When the strips are done,
their edge rows go to host memory on the device's copy queue (a window the node's ranks
share, or page-locked memory for MPI between nodes: oclsci.mpi.transport), and the
neighbours exchange them while the interior steps. The rows received go back on the copy
queue, the rows between strips and interior are copied on the device after the interior's
steps (all of them in one kernel launch: :mod:`oclsci.mpi.rowcopy`), and the strips' next
steps wait, on the device, for both. The device waits only when an exchange takes longer than
the interior's steps; that wait is measured from the copies' and the launches' profiling
times and reported apart from the hidden part.

A workload plugs in through an adapter (:class:`Pieces`): how to make a sub-slab's solver,
which of its buffers travel (one level, or a stencil's u.prev and u), and a row's size. The
interior's solver may be bands of rows on queues of their own, apart from the device queue
(:class:`~oclsci.mpi.concurrent.ConcurrentBands`): then the rows between it and the strips
are read from and written into the bands that own them, in one launch on each edge band's
queue. That launch waits on the device for the strip's steps only, not for the rows from
other ranks, so the bands go on while the strips' next steps wait for those rows; the bands
wait for MPI only where the host, which enqueues their next steps after the exchange, is
late.
"""

from __future__ import annotations

import math
import time
from typing import Any, Protocol

import pyopencl as cl

from oclsci.mpi.concurrent import ConcurrentBands
from oclsci.mpi.rowcopy import RowCopier
from oclsci.mpi.slabs import EXCHANGE_PHASES, Decomposition, Slab
from oclsci.mpi.transport import RowTransport
from oclsci.mpi.world import World


class Pieces(Protocol):
    """What a workload tells :class:`OverlappedSlab` (its solvers have ``advance``,
    ``iteration``, ``steps_per_launch``, ``config`` and ``dtype``)."""

    def solver(self, rows: slice, strip: bool, owned: slice) -> Any:
        """The solver of a sub-slab holding the slab's rows ``rows`` (counted from the
        slab's first held row, ``slab.lo``); ``strip``: it sends rows to other ranks;
        ``owned``: its own rows among them (counted from its first), the only ones read
        between exchanges (the others are ghost rows, which every exchange refreshes). An
        interior's may be a :class:`~oclsci.mpi.concurrent.ConcurrentBands` of these rows
        whose bands each hold whole the rows that the strips exchange with it
        (:func:`~oclsci.mpi.concurrent.bands_that_fit`), all on queues other than the
        device's (the strips'), or a band there would wait for MPI every period."""

    def levels(self, solver: Any) -> list[tuple[Any, list[Any]]]:
        """Per level that travels, in one order on every rank: the buffer its rows are read
        from now, and the buffers that received rows go into."""

    def row_stride(self, solver: Any) -> int:
        """Elements of one padded row (layer) of ``solver``'s buffers."""

    # Optional: ``after_exchange(solver)``, enqueued for every sub-slab after each exchange's
    # copies (a periodic grid's wrap along the other axes).


class OverlappedSlab:
    """This rank's sub-slab solvers: the solver and the ``halo`` that a workload's runner
    drives. Rows are numbered as in the rank's whole slab ``slab`` (padded local rows);
    ``adapter`` makes each sub-slab's solver (:class:`Pieces`); the strips (the sub-slabs
    that send rows to other ranks) may run another configuration than the interior;
    ``period``, the steps between exchanges.
    """

    def __init__(self, world: World, compute: Any, slab: Slab,
                 pieces: tuple[Decomposition, list[int]], adapter: Pieces, *, period: int):
        self.world = world
        self.compute = compute
        self.slab = slab
        self.adapter = adapter
        self.steps_between_exchanges = int(period)
        decomposition, owners = pieces
        rank = world.rank
        self.pieces = {index: decomposition.slabs[index]
                       for index, owner in enumerate(owners) if owner == rank}
        strips = {source for source, dest, _, _ in decomposition.transfers()
                  if owners[source] == rank and owners[dest] != rank}
        self.solvers: dict[int, Any] = {
            index: adapter.solver(slice(piece.lo - slab.lo, piece.hi - slab.lo),
                                  index in strips,
                                  slice(piece.first - piece.lo, piece.stop - piece.lo))
            for index, piece in self.pieces.items()}
        any_solver = _leaf(next(iter(self.solvers.values())))
        interior = [solver for index, solver in self.solvers.items() if index not in strips]
        self.config = (interior or [any_solver])[0].config
        self.strip_configs = {self.solvers[index].config for index in strips} - {self.config}
        self.steps_per_launch = math.lcm(*(s.steps_per_launch for s in self.solvers.values()))
        self.dtype = any_solver.dtype
        self.banded = {index: solver for index, solver in self.solvers.items()
                       if isinstance(solver, ConcurrentBands)}
        self.row_stride = adapter.row_stride(any_solver)
        self.level_count = len(adapter.levels(any_solver))

        # (other rank, own piece, first global row, rows) per transfer; both sides list them
        # in the order of decomposition.transfers(), so messages match in order.
        self.sends, self.receives, self.local_copies = [], [], []
        # Rows as the receiving piece numbers them; a periodic grid's beyond its ends, which
        # the sending piece holds as source_row(first).
        for source, dest, first, stop in decomposition.transfers():
            if owners[source] == rank and owners[dest] == rank:
                self.local_copies.append((source, dest, first, stop))
            elif owners[source] == rank:
                self.sends.append((owners[dest], source, decomposition.source_row(first),
                                   stop - first))
            elif owners[dest] == rank:
                self.receives.append((owners[source], dest, first, stop - first))
        self.source_row = decomposition.source_row
        self.transport: RowTransport | None = None  # made at the first exchange (collective)
        self.row_copier = RowCopier(compute, self.dtype)
        self._band_copiers: dict[int, RowCopier] = {}  # per band's queue: its edge's copies
        # Strips (pieces that send to other ranks) step first, so that their rows are ready
        # early; the interior after them.
        senders = {piece for _, piece, _, _ in self.sends}
        self.order = sorted(self.pieces, key=lambda index: (index not in senders, index))
        self._last_events: dict[int, Any] = {}
        self._pending_writes: list = []
        self._unsettled: list = []  # (interior's last launches, host-to-device events)
        self.exchanges = 0
        self._phases = dict.fromkeys(EXCHANGE_PHASES, 0.0)
        self._exposed = 0.0

    # ---------------------------------------------------------------------------------------
    # The solver's side

    @property
    def iteration(self) -> int:
        """Steps done (the same in every sub-slab)."""
        return next(iter(self.solvers.values())).iteration

    @iteration.setter
    def iteration(self, value: int) -> None:
        for solver in self.solvers.values():
            solver.iteration = int(value)

    def advance(self, steps: int, *args: Any) -> Any:
        """Enqueue ``steps`` steps of every sub-slab, strips first (``args`` go to each
        solver's ``advance``); return the last event."""
        event = None
        for index in self.order:
            event = self.solvers[index].advance(steps, *args)
            if event is not None:
                self._last_events[index] = event
        self.compute.queue.flush()
        return event

    def pieces_in(self, first: int, last: int):
        """(solver, first, last) in each sub-slab's padded rows for the owned rows among the
        slab's padded rows ``first..last``, in order."""
        ring = self.slab.ring
        for index, piece in sorted(self.pieces.items()):
            lo = max(self.slab.lo + first - ring, piece.first)
            hi = min(self.slab.lo + last - ring, piece.stop - 1)
            if hi >= lo:
                yield self.solvers[index], piece.local(lo), piece.local(hi)

    # ---------------------------------------------------------------------------------------
    # The halo's side

    def _offset(self, index: int, row: int) -> int:
        """Elements before global row ``row`` in sub-slab ``index``'s buffers."""
        return self.pieces[index].local(row) * self.row_stride

    def _place(self, index: int, first: int, stop: int) -> tuple[Any, int]:
        """The solver whose buffers hold global rows ``first..stop-1`` of sub-slab ``index``
        (the sub-slab's, or the band of it that owns them), and the elements before
        ``first`` there."""
        if index in self.banded:
            lo = self.pieces[index].lo
            solver, row = self.banded[index].holding(first - lo, stop - lo)
            return solver, row * self.row_stride
        return self.solvers[index], self._offset(index, first)

    def exchange(self, solver: Any = None) -> None:
        """Refresh every sub-slab's ghost and fixed rows: from other ranks by MPI, between
        sub-slabs on the device. Waits on the host only for the strips' rows."""
        copies, queue, levels = self.compute.copy_queue, self.compute.queue, self.level_count
        item = self.dtype.itemsize
        if self.transport is None or self.transport.closed:
            self.transport = RowTransport(
                self.world, self.compute,
                [(other, rows) for _ in range(levels) for other, _, _, rows in self.sends],
                [(other, rows) for _ in range(levels) for other, _, _, rows in self.receives],
                self.row_stride, self.dtype)
        transport = self.transport
        buffers = {index: self.adapter.levels(solver) for index, solver in self.solvers.items()
                   if index not in self.banded}
        # Every level's transfers in the order of the sends and receives (as the transport's).
        sends = [(level, index, first) for level in range(levels)
                 for _, index, first, _ in self.sends]
        receives = [(level, index, first) for level in range(levels)
                    for _, index, first, _ in self.receives]
        # The last exchange's copies out of the host rows must be done before those rows are
        # reused (they are, long since, unless the device is far behind); then its sends.
        clock = time.perf_counter()
        _wait(self._pending_writes)
        if not self.compute.profiling:  # the copies' own times are unknown: the wait's
            self._phases["host-to-device"] += time.perf_counter() - clock
        transport.begin()
        clock = time.perf_counter()
        reads = [cl.enqueue_copy(copies, transport.outbox(k), buffers[index][level][0],
                                 is_blocking=False,
                                 src_offset=self._offset(index, first) * item,
                                 wait_for=[self._last_events[index]]
                                 if index in self._last_events else None)
                 for k, (level, index, first) in enumerate(sends)]
        copies.flush()
        _wait(reads)
        self._settle()
        self._phases["device-to-host"] += (sum(_duration(event) for event in reads)
                                           if self.compute.profiling
                                           else time.perf_counter() - clock)
        clock = time.perf_counter()
        transport.send()
        transport.wait_receives()
        self._phases["MPI"] += time.perf_counter() - clock
        writes = []
        for k, (level, index, first) in enumerate(receives):
            for buffer in buffers[index][level][1]:
                writes.append(cl.enqueue_copy(copies, buffer, transport.inbox(k),
                                              is_blocking=False,
                                              dst_offset=self._offset(index, first) * item))
        copies.flush()
        # Rows between the strips and the bands on queues of their own: on those queues, not
        # after the received rows. These copies and the received rows' go into other rows of
        # the strips' buffers from two queues at once: OpenCL leaves that to the
        # implementation; on one device's memory NVIDIA's driver and PoCL gave bit-identical
        # results, and the orderings that avoid it ran 2.4% and 13% slower on two H200s
        # (16384^2: docs/bench/h200x4-edge-copies-2026-11-28.md).
        moves, edges = self._copy_edges()
        # Rows between sub-slabs on the device queue, after this period's steps and after
        # the received rows (other rows of the same buffers): one launch.
        if writes or edges:
            cl.enqueue_barrier(queue, wait_for=writes + edges)
        self.row_copier.enqueue(queue, moves)
        after = getattr(self.adapter, "after_exchange", None)
        if after is not None:
            for index in self.order:
                after(self.solvers[index])
        queue.flush()
        # The interior's last launches: its bands' where it runs in bands.
        last = self.order[-1]
        interior = (self.banded[last].last_events() if last in self.banded
                    else [self._last_events[last]] if last in self._last_events else [])
        self._unsettled.append((interior, writes))
        self._pending_writes = writes
        self._last_events.clear()
        self.exchanges += 1

    def _copy_edges(self) -> tuple[list, list]:
        """Enqueue the copies between a strip and a band of the interior on a queue of its
        own: both ways in one launch on the band's queue, after the strip's steps (done by
        now) and not after the rows received from other ranks, so that the band's next steps
        wait for MPI only through the host (they are enqueued after this exchange), never on
        the device. Return the copies left for the device queue's launch (between sub-slabs
        on it) and the bands' copy events, which the strips' next steps wait for."""
        levels, queue = self.level_count, self.compute.queue
        moves, apart = [], {}
        for source, dest, first, stop in self.local_copies:
            held = self.source_row(first)
            reader, start = self._place(source, held, held + stop - first)
            writer, to = self._place(dest, first, stop)
            ranges = [(self.adapter.levels(reader)[level][0], start, buffer, to,
                       (stop - first) * self.row_stride)
                      for level in range(levels)
                      for buffer in self.adapter.levels(writer)[level][1]]
            sides = [(solver, other) for solver, other in ((reader, dest), (writer, source))
                     if solver.compute.queue is not queue]
            if not sides:
                moves += ranges
                continue
            if len(sides) == 2:  # neither queue would wait for the other's copy
                raise ValueError(f"sub-slabs {source} and {dest} are both on queues other "
                                 "than the device's: rows between them are not exchanged")
            (band, strip), = sides
            entry = apart.setdefault(id(band.compute.queue), (band.compute.queue, [], []))
            entry[1].extend(ranges)
            if strip in self._last_events:
                entry[2].append(self._last_events[strip])
        edges = []
        for key, (band_queue, ranges, strips_done) in apart.items():
            if key not in self._band_copiers:
                self._band_copiers[key] = RowCopier(self.compute, self.dtype)
            event = self._band_copiers[key].enqueue(band_queue, ranges, wait_for=strips_done)
            band_queue.flush()
            if event is not None:
                edges.append(event)
        return moves, edges

    def _settle(self) -> None:
        """Account for the finished exchanges' copies to the device, and for the time the
        device waited for them after the interior's steps (profiling times)."""
        still = []
        for interior, writes in self._unsettled:
            if any(_status(event) != cl.command_execution_status.COMPLETE
                   for event in writes + interior):
                still.append((interior, writes))
                continue
            if not self.compute.profiling:
                continue
            self._phases["host-to-device"] += sum(_duration(event) for event in writes)
            if writes and interior:
                # The interior's next steps wait for the received rows on the device; bands
                # on queues of their own only for the host to enqueue them, after the rows
                # came in (when it enqueued their copies to the device).
                arrived = max(event.profile.queued if self.banded else event.profile.end
                              for event in writes)
                done = max(event.profile.end for event in interior)
                self._exposed += max(0.0, (arrived - done) * 1e-9)
        self._unsettled = still

    def finish(self) -> None:
        """Complete the last exchange's sends and wait for both queues (then every copy is
        accounted for)."""
        if self.transport is not None:
            self.transport.complete()
        self.compute.copy_queue.finish()
        self.compute.queue.finish()
        for bands in self.banded.values():
            bands.finish()
        self._settle()

    def close(self) -> None:
        """Wait for every copy, then free the node's shared memory that this rank's exchanges
        use (collective over the node's ranks, after the last exchange; a later exchange
        makes it again)."""
        self.finish()
        if self.transport is not None:
            self.transport.close()

    @property
    def phase_seconds(self) -> dict[str, float]:
        """Seconds per phase of all exchanges (copies timed on the device where profiling
        works): :data:`~oclsci.mpi.slabs.EXCHANGE_PHASES`."""
        self.finish()
        return dict(self._phases)

    @property
    def seconds(self) -> float:
        """The exchanges' copies and MPI waits, hidden or not."""
        return sum(self.phase_seconds.values())

    @property
    def exposed_seconds(self) -> float | None:
        """Time the device waited for exchanges after the interior's steps were done (None
        without profiling: not measured)."""
        self.finish()
        return self._exposed if self.compute.profiling else None

    def waits_summary(self) -> str:
        """How long a device waited for the exchanges, for summaries (collective)."""
        exposed = self.exposed_seconds
        exposed = self.world.allreduce_max(-1.0 if exposed is None else exposed)
        return (f"a device waited {exposed:.4f} s for the exchanges after its own steps (at "
                "most on a rank)" if exposed >= 0
                else "device waits for the exchanges not measured (no profiling)")

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""
        return self.world.allreduce_sum(value)

    def agree(self, stop: int, launches: int) -> tuple[int, int]:
        """A stop request on any rank stops all; the next poll comes at the smallest chunk.
        On a stop, the last exchange's sends are completed (MPI wants them done before it
        finalises; their rows have arrived, the neighbours waited for them)."""
        stop, launches = self.world.agree_stop(stop, launches)
        if stop and self.transport is not None:
            self.transport.complete()
        return stop, launches

    def owned_rows(self, solver: Any = None) -> tuple[int, int]:
        """The slab's padded rows that this rank owns."""
        return self.slab.owned_local

    def describe(self, rows: str = "rows") -> str:
        """The sub-slabs (of ``rows``: rows, planes), for summaries."""
        heights = "+".join(str(piece.rows) for _, piece in sorted(self.pieces.items()))
        strips = "".join(f", strips: {config.describe()}" for config in self.strip_configs)
        bands = "".join(f" (the interior in {bands.describe()})"
                        for bands in self.banded.values())
        route = f", {self.transport.describe()}" if self.transport is not None else ""
        return (f"sub-slabs of {heights} {rows}{bands}{strips}, exchanges overlapped with the "
                f"interior's steps{route}")


def _leaf(solver: Any) -> Any:
    """A solver of one grid: ``solver``, or the first of its bands."""
    return solver.solvers[0] if isinstance(solver, ConcurrentBands) else solver


def _wait(events: list) -> None:
    if events:
        cl.wait_for_events(events)


def _status(event: Any) -> int:
    return event.get_info(cl.event_info.COMMAND_EXECUTION_STATUS)


def _duration(event: Any) -> float:
    """Seconds the command ran on the device (0 without profiling)."""
    try:
        return max(0, event.profile.end - event.profile.start) * 1e-9
    except cl.Error:
        return 0.0
