"""Slabs of whole rows, one per rank, and the halo exchange between neighbouring slabs.

Each rank holds its owned rows, ``H`` ghost rows on each side (updated by the kernels like any
other row) and one fixed row beyond them. Errors from a stale fixed row travel one row per
step, so after ``S <= H`` steps the owned rows are still exact: ranks exchange ``H + 1`` rows
with their neighbours once every ``S`` steps (``S`` a multiple of the kernel's steps per
launch).

A "row" is a layer along the slowest axis (a plane of a 3-D stencil grid), and the layout
around the slab's rows is the solver's: Jacobi's grids have a ring of one row, exchanged as
the fixed rows; a stencil of radius ``r`` keeps ``r`` rows of its boundary value beyond its
slab (no fixed rows: ``fixed=0``) and ``H = r S`` ghost rows, whose errors travel ``r`` rows a
step. An exchange may refresh several buffers of each rank (the previous and the current time
level of a stencil reading ``u.prev``): the solver's ``halo_levels``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError
from oclsci.mpi.transport import RowTransport
from oclsci.mpi.world import World
from oclsci.runtime.partition import split_rows

# Steps between exchanges when the kernel does one step per launch (seed, coalesced).
DEFAULT_MIN_EXCHANGE_STEPS = 8


# --------------------------------------------------------------------------------------------
# Decomposition


@dataclass(frozen=True)
class Slab:
    """One rank's rows. Global interior rows are numbered 0..m-1; the rank owns
    ``first..stop-1`` and holds ``lo..hi-1`` (owned rows and ghost rows) as interior rows of
    its local grid, with fixed rows ``lo-1`` and ``hi`` (global boundary zeros at the ends).
    The local grid's padded rows number ``ring`` rows before its first interior row."""

    rank: int
    first: int
    stop: int
    lo: int
    hi: int
    ring: int = 1

    @property
    def rows(self) -> int:
        """Owned rows."""
        return self.stop - self.first

    @property
    def local_m(self) -> int:
        """Interior rows of the local grid (owned and ghost)."""
        return self.hi - self.lo

    def local(self, row: int) -> int:
        """Padded local row number of global interior row ``row``."""
        return row - self.lo + self.ring

    @property
    def owned_local(self) -> tuple[int, int]:
        """First and last padded local rows that this rank owns."""
        return self.local(self.first), self.local(self.stop - 1)


@dataclass(frozen=True)
class Decomposition:
    """1-D slabs of an m x n grid over ``parts`` ranks with ``halo`` ghost rows per side and
    ``fixed`` fixed rows beyond them (exchanged too), in local grids with ``ring`` padded rows
    before the first interior row. ``periodic``: the rows wrap around (row ``-1`` is row
    ``m - 1``), so that the first and last slabs hold ghost rows from each other too; rows
    are then numbered as each slab sees them, beyond ``0..m-1`` at the ends
    (:meth:`source_row` gives the row that the owner holds)."""

    m: int
    n: int
    parts: int
    halo: int
    slabs: tuple = field(default=())
    fixed: int = 1
    ring: int = 1
    periodic: bool = False

    @classmethod
    def build(cls, m: int, n: int, parts: int, halo: int, *, fixed: int = 1,
              ring: int = 1, periodic: bool = False) -> Decomposition:
        """Cut ``m`` rows into ``parts`` slabs; refuse slabs without rows."""
        if parts > m:
            raise InputError(f"{parts} MPI ranks for a grid of {m} rows: each rank needs at "
                             f"least one row; use at most {m} ranks")
        ghost = halo + fixed
        if periodic and ghost > m - -(-m // parts):  # the thickest slab's
            enough = next((p for p in range(parts + 1, m + 1) if ghost <= m - -(-m // p)), None)
            ranks = f"at least {enough} ranks, " if enough else ""
            raise InputError(
                f"{parts} MPI ranks for a periodic grid of {m} layers with {ghost} ghost "
                f"layers a side: a rank's ghost layers would wrap around to its own; use "
                f"{ranks}one process, or a shorter exchange period (OCLSCI_MPI_EXCHANGE_EVERY)")
        return cls.from_bounds(m, n, split_rows(m, parts), halo, fixed=fixed, ring=ring,
                               periodic=periodic)

    @classmethod
    def from_bounds(cls, m: int, n: int, bounds: list[tuple[int, int]], halo: int, *,
                    fixed: int = 1, ring: int = 1, periodic: bool = False) -> Decomposition:
        """Slabs owning rows ``first..stop-1`` for each ``(first, stop)`` of ``bounds``
        (contiguous, in order, covering 0..m-1). Periodic slabs must get their ghost rows
        from other slabs: the ghost and fixed rows on each side at most the others' rows."""
        if halo < 1:
            raise InputError(f"halo width must be >= 1, got {halo}")
        if periodic:
            thickest = max(stop - first for first, stop in bounds)
            if halo + fixed > m - thickest:
                raise InputError(
                    f"{len(bounds)} slabs of a periodic grid of {m} layers with "
                    f"{halo + fixed} ghost layers a side: a slab's ghost layers would wrap "
                    "around to its own")
            slabs = tuple(Slab(index, first, stop, first - halo, stop + halo, ring)
                          for index, (first, stop) in enumerate(bounds))
        else:
            slabs = tuple(Slab(index, first, stop, max(0, first - halo), min(m, stop + halo),
                               ring) for index, (first, stop) in enumerate(bounds))
        return cls(m, n, len(slabs), halo, slabs, fixed, ring, periodic)

    def source_row(self, row: int) -> int:
        """The row that its owner holds for ``row`` as a slab numbers it."""
        return row % self.m if self.periodic else row

    def held(self, array: Any, rank: int) -> Any:
        """``rank``'s rows ``lo..hi-1`` (owned and ghost) of the global ``array`` (a view
        where they do not wrap around)."""
        slab = self.slabs[rank]
        if self.periodic:
            return np.take(array, np.arange(slab.lo, slab.hi), axis=0, mode="wrap")
        return array[slab.lo:slab.hi]

    def needed(self, rank: int) -> list[tuple[int, int]]:
        """Global rows ``(start, stop)`` that ``rank`` receives at each exchange: its ghost
        rows and fixed rows, above then below (global boundary rows excluded; all of them
        where the rows wrap around)."""
        slab = self.slabs[rank]
        if self.periodic:
            ranges = [(slab.lo - self.fixed, slab.first), (slab.stop, slab.hi + self.fixed)]
        else:
            ranges = [(max(0, slab.lo - self.fixed), slab.first),
                      (slab.stop, min(self.m, slab.hi + self.fixed))]
        return [(a, b) for a, b in ranges if b > a]

    def transfers(self) -> list[tuple[int, int, int, int]]:
        """Every ``(source, dest, start, stop)``: rows start..stop-1 (as ``dest`` numbers
        them) go from source to dest."""
        moves = []
        shifts = (-self.m, 0, self.m) if self.periodic else (0,)
        for dest in range(self.parts):
            for start, stop in self.needed(dest):
                for shift in shifts:
                    for source, slab in enumerate(self.slabs):
                        a, b = max(start, slab.first + shift), min(stop, slab.stop + shift)
                        if b > a and source != dest:
                            moves.append((source, dest, a, b))
        return moves

    def halo_bytes_per_exchange(self, rank: int, itemsize: int, row_stride: int) -> int:
        """Bytes that ``rank`` receives at each exchange."""
        return sum(b - a for a, b in self.needed(rank)) * row_stride * itemsize


def exchange_period(steps_per_launch: int, requested: int | None = None,
                    min_steps: int = DEFAULT_MIN_EXCHANGE_STEPS) -> int:
    """Steps between halo exchanges (= ghost rows per side for Jacobi).

    The smallest multiple of the kernel's steps per launch that is at least ``min_steps``
    (default ``DEFAULT_MIN_EXCHANGE_STEPS``: 16 for Jacobi's GPU blocked kernel, 8 for the
    others), unless ``requested`` or ``OCLSCI_MPI_EXCHANGE_EVERY`` names one.
    """
    steps_per_launch = max(1, int(steps_per_launch))
    if requested is None:
        text = os.environ.get("OCLSCI_MPI_EXCHANGE_EVERY", "").strip()
        if text:
            if not text.isdigit() or int(text) < 1:
                raise InputError(f"OCLSCI_MPI_EXCHANGE_EVERY must be a positive integer, "
                                 f"got {text!r}")
            requested = int(text)
    if requested is not None:
        if requested < 1:
            raise InputError(f"exchange period must be >= 1, got {requested}")
        return int(requested)
    return steps_per_launch * max(1, math.ceil(max(1, min_steps) / steps_per_launch))


# --------------------------------------------------------------------------------------------
# Halo exchange


#: The parts of a halo exchange, in order: copies of the rows that neighbours need to the host,
#: waiting for MPI (the neighbours' rows, and the sends to complete), and the copies of the
#: received rows to the device.
EXCHANGE_PHASES = ("device-to-host", "MPI", "host-to-device")


class SlabHalo:
    """The ``halo`` object that :func:`oclsci.jacobi.run` drives on one rank of a slab run
    (and the stencil's runner, :func:`oclsci.stencil.runner.run_steps`).

    ``exchange`` posts the receives of ghost and fixed rows, copies the rows that other ranks
    need to the host, sends them (all non-blocking, both neighbours at once), then writes the
    received rows into the local grid; ``allreduce_sum`` and ``agree`` work over ranks. The
    rows are those of each of the solver's ``halo_levels`` (objects with ``x_buffer`` or
    ``read_rows``, ``write_rows``, ``row_stride``, ``dtype`` and ``compute``), in order; a
    solver without them is its own one level.
    """

    def __init__(self, world: World, decomposition: Decomposition, period: int | None = None):
        self.world = world
        self.decomposition = decomposition
        self.slab = decomposition.slabs[world.rank]
        self.steps_between_exchanges = int(period or decomposition.halo)
        if self.steps_between_exchanges > decomposition.halo:
            raise InputError(f"exchange period {self.steps_between_exchanges} exceeds the halo "
                             f"width {decomposition.halo}")
        moves = decomposition.transfers()
        self.sends = [(dest, a, b) for source, dest, a, b in moves if source == world.rank]
        self.receives = [(source, a, b) for source, dest, a, b in moves if dest == world.rank]
        self.transport: RowTransport | None = None  # made at the first exchange (collective)
        self.exchanges = 0
        self.seconds = 0.0
        # Where the exchange time goes (seconds, summed over exchanges): EXCHANGE_PHASES.
        self.phase_seconds = dict.fromkeys(EXCHANGE_PHASES, 0.0)
        self.bytes_received = 0

    def _read_rows(self, solver: Any, first: int, out: np.ndarray) -> Any:
        """Start copying padded rows from ``first`` into ``out``; return an event or None."""
        buffer = getattr(solver, "x_buffer", None)
        if buffer is None:
            out[...] = solver.read_rows(first, len(out))
            return None
        return cl.enqueue_copy(solver.compute.queue, out, buffer, is_blocking=False,
                               src_offset=first * solver.row_stride * solver.dtype.itemsize)

    def close(self) -> None:
        """Free the node's shared memory that this rank's exchanges use (collective over the
        node's ranks, after the last exchange; a later exchange makes it again)."""
        if self.transport is not None:
            self.transport.close()

    def exchange(self, solver: Any) -> None:
        """Refresh this rank's ghost and fixed rows from the ranks that own them."""
        if not self.sends and not self.receives:
            return
        levels = getattr(solver, "halo_levels", None) or [solver]
        # Every level's transfers in the order of the sends and receives: both sides of a
        # pair list them alike.
        sends = [(level, dest, a, b) for level in levels for dest, a, b in self.sends]
        receives = [(level, source, a, b) for level in levels
                    for source, a, b in self.receives]
        solver.compute.queue.finish()  # the steps before count as compute, not as exchange
        if self.transport is None or self.transport.closed:
            self.transport = RowTransport(
                self.world, solver.compute, [(dest, b - a) for _, dest, a, b in sends],
                [(source, b - a) for _, source, a, b in receives], levels[0].row_stride,
                levels[0].dtype)
        transport = self.transport
        started = time.perf_counter()
        transport.begin()
        clock = started
        source_row = self.decomposition.source_row
        events = [self._read_rows(level, self.slab.local(source_row(a)), transport.outbox(k))
                  for k, (level, _, a, _) in enumerate(sends)]
        events = [event for event in events if event is not None]
        if events:
            cl.wait_for_events(events)
        clock = self._lap("device-to-host", clock)
        transport.send()
        transport.wait_receives()
        clock = self._lap("MPI", clock)
        for k, (level, _, a, _) in enumerate(receives):
            rows = transport.inbox(k)
            level.write_rows(self.slab.local(a), rows)  # finished when it returns
            self.bytes_received += rows.nbytes
        clock = self._lap("host-to-device", clock)
        transport.complete()
        finished = self._lap("MPI", clock)
        self.exchanges += 1
        self.seconds += finished - started  # the phases sum to this exactly

    def _lap(self, phase: str, since: float) -> float:
        """Add the time since ``since`` to ``phase``; return now."""
        now = time.perf_counter()
        self.phase_seconds[phase] += now - since
        return now

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""
        return self.world.allreduce_sum(value)

    def agree(self, stop: int, launches: int) -> tuple[int, int]:
        """A stop request on any rank stops all; the next poll comes at the smallest chunk."""
        return self.world.agree_stop(stop, launches)

    def owned_rows(self, solver: Any) -> tuple[int, int]:
        """Padded local rows this rank owns (for residual sums)."""
        return self.slab.owned_local
