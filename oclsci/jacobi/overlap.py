"""A slab whose halo exchange runs while its interior steps.

The rank's slab is cut into sub-slabs, each with a solver of its own on the rank's device: a
strip at each edge that faces another rank (``H + 1`` owned rows: what that rank needs) and
the interior between them. Every sub-slab of every rank is a slab of one
:class:`~oclsci.mpi.slabs.Decomposition` of the global grid, with ``H`` ghost rows per side
and a fixed row beyond, so every owned cell goes through the same operations as on one device:
results are bit-identical to one device, as with whole slabs.

Per exchange period the device's queue runs the strips' steps, then the interior's. When the
strips are done, their edge rows go to host memory on the device's copy queue (a window the
node's ranks share, or page-locked memory for MPI between nodes: oclsci.mpi.transport), and
the neighbours exchange them while the interior steps. The rows received go back on the copy
queue, the rows between strips and interior are copied on the device after the interior's
steps, and the strips' next steps wait, on the device, for both. The device waits only when
an exchange takes longer than the interior's steps; that wait is measured from the copies'
and the launches' profiling times and reported apart from the hidden part.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError
from oclsci.jacobi.solver import JacobiSolver
from oclsci.mpi.slabs import EXCHANGE_PHASES, Decomposition, Slab
from oclsci.mpi.transport import RowTransport
from oclsci.mpi.world import World


def wants_overlap(compute: Any, environ: Any = None) -> bool:
    """Whether to overlap: ``OCLSCI_MPI_OVERLAP=1`` or ``0``; unset or ``auto``: on GPUs
    (on a CPU device MPI's host work and the kernels share the same cores)."""
    text = (environ if environ is not None else os.environ).get("OCLSCI_MPI_OVERLAP", "")
    text = text.strip().lower()
    if text in ("", "auto"):
        return bool(compute.is_gpu)
    if text not in ("0", "1"):
        raise InputError(f"OCLSCI_MPI_OVERLAP must be 0, 1 or auto, got {text!r}")
    return text == "1"


def sub_slabs(decomposition: Decomposition) -> tuple[Decomposition, list[int]] | None:
    """The sub-slabs of every rank's slab, and the rank owning each; None when a slab is too
    thin for strips of ``halo + 1`` rows and an interior at least that high."""
    edge = decomposition.halo + 1
    last = decomposition.parts - 1
    bounds, owners = [], []
    for slab in decomposition.slabs:
        top = edge if slab.rank > 0 else 0
        bottom = edge if slab.rank < last else 0
        if slab.rows - top - bottom < edge:
            return None
        cuts = sorted({slab.first, slab.first + top, slab.stop - bottom, slab.stop})
        for first, stop in zip(cuts, cuts[1:], strict=False):
            bounds.append((first, stop))
            owners.append(slab.rank)
    return (Decomposition.from_bounds(decomposition.m, decomposition.n, bounds,
                                      decomposition.halo), owners)


class OverlappedSlab:
    """This rank's sub-slab solvers: the solver and the ``halo`` that
    :func:`oclsci.jacobi.run` drives. Rows are numbered as in the rank's whole slab ``slab``
    (padded local rows, as :class:`~oclsci.jacobi.JacobiSolver` numbers them); ``rhs_rows``
    and ``x0_rows`` (or None) hold the slab's rows ``slab.lo..slab.hi-1``. The strips (the
    sub-slabs that send rows to other ranks) run ``strip_config`` (default ``config``), the
    interior ``config``; ``period`` is a multiple of both steps per launch, or launches of
    fewer steps make up the difference.
    """

    def __init__(self, world: World, compute: Any, slab: Slab,
                 pieces: tuple[Decomposition, list[int]], rhs_rows: np.ndarray,
                 x0_rows: np.ndarray | None, *, dtype: Any, config: Any, period: int,
                 strip_config: Any = None):
        self.world = world
        self.compute = compute
        self.slab = slab
        self.steps_between_exchanges = int(period)
        decomposition, owners = pieces
        rank = world.rank
        self.pieces = {index: decomposition.slabs[index]
                       for index, owner in enumerate(owners) if owner == rank}
        strips = {source for source, dest, _, _ in decomposition.transfers()
                  if owners[source] == rank and owners[dest] != rank}
        self.solvers: dict[int, JacobiSolver] = {}
        for index, piece in self.pieces.items():
            rows = slice(piece.lo - slab.lo, piece.hi - slab.lo)
            self.solvers[index] = JacobiSolver(
                compute, rhs_rows[rows], x0=None if x0_rows is None else x0_rows[rows],
                dtype=dtype, config=strip_config if index in strips and strip_config
                else config)
        any_solver = next(iter(self.solvers.values()))
        interior = [solver for index, solver in self.solvers.items() if index not in strips]
        self.config = (interior or [any_solver])[0].config
        self.strip_configs = {self.solvers[index].config for index in strips} - {self.config}
        self.steps_per_launch = math.lcm(*(s.steps_per_launch for s in self.solvers.values()))
        self.dtype = any_solver.dtype
        self.row_stride = any_solver.row_stride

        # (other rank, own piece, first global row, rows) per transfer; both sides list them
        # in the order of decomposition.transfers(), so messages match in order.
        self.sends, self.receives, self.local_copies = [], [], []
        for source, dest, first, stop in decomposition.transfers():
            if owners[source] == rank and owners[dest] == rank:
                self.local_copies.append((source, dest, first, stop))
            elif owners[source] == rank:
                self.sends.append((owners[dest], source, first, stop - first))
            elif owners[dest] == rank:
                self.receives.append((owners[source], dest, first, stop - first))
        self.transport: RowTransport | None = None  # made at the first exchange (collective)
        # Strips (pieces that send to other ranks) step first, so that their rows are ready
        # early; the interior after them.
        senders = {piece for _, piece, _, _ in self.sends}
        self.order = sorted(self.pieces, key=lambda index: (index not in senders, index))
        self._last_events: dict[int, Any] = {}
        self._pending_writes: list = []
        self._unsettled: list = []  # (interior's last event, host-to-device events)
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

    def advance(self, steps: int, stopwatch: Any = None) -> Any:
        """Enqueue ``steps`` steps of every sub-slab, strips first; return the last event."""
        event = None
        for index in self.order:
            event = self.solvers[index].advance(steps, stopwatch)
            if event is not None:
                self._last_events[index] = event
        self.compute.queue.flush()
        return event

    def _pieces_in(self, first: int, last: int):
        """(solver, first, last) in each sub-slab's padded rows for the owned rows among the
        slab's padded rows ``first..last``."""
        for index, piece in self.pieces.items():
            lo = max(self.slab.lo + first - 1, piece.first)
            hi = min(self.slab.lo + last - 1, piece.stop - 1)
            if hi >= lo:
                yield self.solvers[index], piece.local(lo), piece.local(hi)

    def residual_sum_of_squares(self, first_row: int, last_row: int) -> float:
        """Sum of the squared residual over the slab's padded rows first..last (owned)."""
        return sum(solver.residual_sum_of_squares(a, b)
                   for solver, a, b in self._pieces_in(first_row, last_row))

    def rhs_sum_of_squares(self, first_row: int, last_row: int) -> float:
        """Sum of B squared over the slab's padded rows first..last (owned)."""
        return sum(solver.rhs_sum_of_squares(a, b)
                   for solver, a, b in self._pieces_in(first_row, last_row))

    def read_rows(self, first: int, count: int) -> np.ndarray:
        """The slab's owned padded rows ``first..first+count-1`` of the current iterate."""
        parts = [solver.read_rows(a, b - a + 1)
                 for solver, a, b in self._pieces_in(first, first + count - 1)]
        rows = np.concatenate(parts) if parts else np.empty((0, self.row_stride), self.dtype)
        if len(rows) != count:
            raise ValueError(f"rows {first}..{first + count - 1} are not all owned here")
        return rows

    # ---------------------------------------------------------------------------------------
    # The halo's side

    def _offset(self, index: int, row: int) -> int:
        return self.pieces[index].local(row) * self.row_stride * self.dtype.itemsize

    def exchange(self, solver: Any = None) -> None:
        """Refresh every sub-slab's ghost and fixed rows: from other ranks by MPI, between
        sub-slabs on the device. Waits on the host only for the strips' rows."""
        copies, queue = self.compute.copy_queue, self.compute.queue
        if self.transport is None:
            self.transport = RowTransport(
                self.world, self.compute, [(other, rows) for other, _, _, rows in self.sends],
                [(other, rows) for other, _, _, rows in self.receives], self.row_stride,
                self.dtype)
        transport = self.transport
        # The last exchange's copies out of the host rows must be done before those rows are
        # reused (they are, long since, unless the device is far behind); then its sends.
        clock = time.perf_counter()
        _wait(self._pending_writes)
        if not self.compute.profiling:  # the copies' own times are unknown: the wait's
            self._phases["host-to-device"] += time.perf_counter() - clock
        transport.begin()
        clock = time.perf_counter()
        reads = [cl.enqueue_copy(copies, transport.outbox(k), self.solvers[index].x_buffer,
                                 is_blocking=False, src_offset=self._offset(index, first),
                                 wait_for=[self._last_events[index]]
                                 if index in self._last_events else None)
                 for k, (_, index, first, _) in enumerate(self.sends)]
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
        for k, (_, index, first, _) in enumerate(self.receives):
            for buffer in self.solvers[index].x_buffers:
                writes.append(cl.enqueue_copy(copies, buffer, transport.inbox(k),
                                              is_blocking=False,
                                              dst_offset=self._offset(index, first)))
        copies.flush()
        # Rows between sub-slabs: on the device queue, after this period's steps and after the
        # received rows (other rows of the same buffers: OpenCL orders any two queues' changes
        # to one buffer only through events).
        if writes:
            cl.enqueue_barrier(queue, wait_for=writes)
        item = self.dtype.itemsize
        for source, dest, first, stop in self.local_copies:
            for buffer in self.solvers[dest].x_buffers:
                cl.enqueue_copy(queue, buffer, self.solvers[source].x_buffer,
                                byte_count=(stop - first) * self.row_stride * item,
                                src_offset=self._offset(source, first),
                                dst_offset=self._offset(dest, first))
        queue.flush()
        interior = self._last_events.get(self.order[-1])
        self._unsettled.append((interior, writes))
        self._pending_writes = writes
        self._last_events.clear()
        self.exchanges += 1

    def _settle(self) -> None:
        """Account for the finished exchanges' copies to the device, and for the time the
        device waited for them after the interior's steps (profiling times)."""
        still = []
        for interior, writes in self._unsettled:
            if any(_status(event) != cl.command_execution_status.COMPLETE
                   for event in writes + ([interior] if interior is not None else [])):
                still.append((interior, writes))
                continue
            if not self.compute.profiling:
                continue
            self._phases["host-to-device"] += sum(_duration(event) for event in writes)
            if writes and interior is not None:
                arrived = max(event.profile.end for event in writes)
                self._exposed += max(0.0, (arrived - interior.profile.end) * 1e-9)
        self._unsettled = still

    def _finish(self) -> None:
        if self.transport is not None:
            self.transport.complete()
        self.compute.copy_queue.finish()
        self.compute.queue.finish()
        self._settle()

    @property
    def phase_seconds(self) -> dict[str, float]:
        """Seconds per phase of all exchanges (copies timed on the device where profiling
        works): :data:`~oclsci.mpi.slabs.EXCHANGE_PHASES`."""
        self._finish()
        return dict(self._phases)

    @property
    def seconds(self) -> float:
        """The exchanges' copies and MPI waits, hidden or not."""
        return sum(self.phase_seconds.values())

    @property
    def exposed_seconds(self) -> float | None:
        """Time the device waited for exchanges after the interior's steps were done (None
        without profiling: not measured)."""
        self._finish()
        return self._exposed if self.compute.profiling else None

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

    def describe(self) -> str:
        """The sub-slabs, for summaries."""
        rows = "+".join(str(piece.rows) for _, piece in sorted(self.pieces.items()))
        strips = "".join(f", strips: {config.describe()}" for config in self.strip_configs)
        route = f", {self.transport.describe()}" if self.transport is not None else ""
        return (f"sub-slabs of {rows} rows{strips}, exchanges overlapped with the interior's "
                f"steps{route}")


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
