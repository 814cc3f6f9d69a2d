"""How halo rows travel between two ranks: through memory the ranks of one node share, or
through MPI's messages.

Between nodes, rows go device -> page-locked host memory -> MPI -> host -> device. Between
ranks of one node, MPI would copy them once more, from one process's memory into the other's
(about 9 GB/s on a 4x H200 host: 0.27 ms per MiB handed from one GPU to another, docs/mpi.md).
Here the ranks of a node allocate one MPI-3 shared window instead: a rank copies the rows a
neighbour needs from its device straight into its own part of the window, tells the neighbour
with an 8-byte message, and the neighbour copies them from there to its device. Each rank
also wraps the parts it copies to or from in an OpenCL buffer (``CL_MEM_USE_HOST_PTR``), which
NVIDIA's driver answers by page-locking them: copies then run at the bus's speed (0.10 ms per
MiB from one GPU to another on that host). Other drivers copy as from any host memory.

Each transfer has two slots in its sender's part, used in turn (by exchange parity). A slot
is written again two exchanges later; by then its reader has copied it out: every node-local
transfer has one in the other direction (the halos of 1-D slabs are symmetric), and a rank
sends its rows of exchange k + 1 only after its copies from the slots of exchange k have
finished, while the sender waits for those rows before exchange k + 2.

``OCLSCI_MPI_NODE_RANKS=k`` treats each k consecutive ranks of a node as a node of their own
(``1``: every exchange through MPI); the tests use it to run both paths on one machine.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError
from oclsci.mpi.world import TAG_HALO, World
from oclsci.runtime.memory import pinned_empty

# Each rank's part of the window starts at a multiple of this (a driver pins whole pages).
PART_ALIGNMENT = 1 << 16


def node_ranks_setting(environ: Any = None) -> int | None:
    """``OCLSCI_MPI_NODE_RANKS`` as a positive integer, None when unset."""
    text = (environ if environ is not None else os.environ).get("OCLSCI_MPI_NODE_RANKS", "")
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"OCLSCI_MPI_NODE_RANKS must be a positive integer, got {text!r}")
    return int(text)


def node_comm(world: World, environ: Any = None) -> Any:
    """The ranks that share memory with this one (collective): MPI's shared-memory split,
    cut into groups of ``OCLSCI_MPI_NODE_RANKS`` consecutive ranks when set. A new
    communicator: free it (``Free()``, collective) when done."""
    comm = world.comm.Split_type(world.MPI.COMM_TYPE_SHARED, key=world.rank)
    group = node_ranks_setting(environ)
    if group is not None:
        whole, comm = comm, comm.Split(comm.rank // group, key=world.rank)
        whole.Free()
    return comm


def _pages(nbytes: int) -> int:
    return -(-nbytes // PART_ALIGNMENT) * PART_ALIGNMENT


class RowTransport:
    """The rows of one rank's halo exchanges (collective to build, over ``world``).

    ``sends`` and ``receives`` list ``(other rank, rows)``, each in the order of
    :meth:`~oclsci.mpi.slabs.Decomposition.transfers` (both sides list a pair's transfers in
    the same order); rows are padded rows of ``row_stride`` elements of ``dtype``. Per
    exchange: :meth:`begin`, copy each send's rows into :meth:`outbox` (on the host when
    :meth:`send` is called), :meth:`wait_receives`, then copy from :meth:`inbox`; an inbox must
    be copied out before the next :meth:`begin`.
    """

    def __init__(self, world: World, compute: Any, sends: list[tuple[int, int]],
                 receives: list[tuple[int, int]], row_stride: int, dtype: Any,
                 environ: Any = None):
        self.world = world
        self.dtype = np.dtype(dtype)
        self.row_stride = int(row_stride)
        row_bytes = self.row_stride * self.dtype.itemsize
        comm = self._comm = node_comm(world, environ)
        node = comm.allgather(world.rank)  # world ranks of this node, by node rank
        self.local_peers = sorted({other for other, _ in sends + receives if other in node})
        # Node-local transfers need one in the other direction (see the module's docstring).
        one_way = ({other for other, _ in sends} ^ {other for other, _ in receives})
        self.local_peers = [peer for peer in self.local_peers if peer not in one_way]
        local = set(self.local_peers)
        # This rank's part of the window: two slots per node-local send, in order.
        offsets, size = [], 0
        for other, rows in sends:
            offsets.append(size if other in local else None)
            if other in local:
                size += 2 * rows * row_bytes
        self._window = world.MPI.Win.Allocate_shared(_pages(size) if local else 0, 1,
                                                     comm=comm)
        layouts = comm.allgather([(other, offset) for (other, _), offset
                                  in zip(sends, offsets, strict=True)])
        self._parts: dict[int, np.ndarray] = {}
        self._pinned: list[Any] = []
        for peer in [world.rank, *self.local_peers] if local else []:
            memory, _ = self._window.Shared_query(node.index(peer))
            part = np.frombuffer(memory, np.uint8)
            self._parts[peer] = part
            if part.nbytes:
                try:  # NVIDIA's driver page-locks the memory it wraps: faster copies
                    self._pinned.append(cl.Buffer(
                        compute.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=part))
                except cl.Error:
                    pass

        def slots(part: np.ndarray, offset: int, rows: int) -> list[np.ndarray]:
            nbytes = rows * row_bytes
            return [part[offset + k * nbytes:offset + (k + 1) * nbytes].view(self.dtype)
                    .reshape((rows, self.row_stride)) for k in (0, 1)]

        # Per send and receive: (other rank, node-local?, host rows for each parity).
        self.sends = []
        for (other, rows), offset in zip(sends, offsets, strict=True):
            if offset is None:
                staged = pinned_empty(compute, (rows, self.row_stride), self.dtype)
                self.sends.append((other, False, [staged, staged]))
            else:
                self.sends.append((other, True, slots(self._parts[world.rank], offset, rows)))
        seen: dict[int, int] = {}
        self.receives = []
        for other, rows in receives:
            if other not in local:
                staged = pinned_empty(compute, (rows, self.row_stride), self.dtype)
                self.receives.append((other, False, [staged, staged]))
                continue
            # The k-th transfer from ``other`` to this rank is the k-th in its list.
            mine = [offset for dest, offset in layouts[node.index(other)]
                    if dest == world.rank]
            k = seen[other] = seen.get(other, -1) + 1
            self.receives.append((other, True, slots(self._parts[other], mine[k], rows)))
        self._notices = [np.zeros(1, np.int64) for _ in self.receives]
        self._closed_route: str | None = None  # what describe() said, once closed
        self._parity = 1
        self._receiving: list[Any] = []
        self._sending: list[Any] = []

    def begin(self) -> None:
        """Start an exchange: the last one's sends complete, this one's receives posted."""
        self.complete()
        self._parity ^= 1
        comm = self.world.comm
        self._receiving = [
            comm.Irecv(notice if local else slots[self._parity], source=other, tag=TAG_HALO)
            for (other, local, slots), notice in zip(self.receives, self._notices,
                                                      strict=True)]

    def outbox(self, index: int) -> np.ndarray:
        """Host rows to fill with send ``index``'s rows in this exchange."""
        return self.sends[index][2][self._parity]

    def send(self) -> None:
        """Send (the rows, or between ranks of a node a notice that they are in place)."""
        comm = self.world.comm
        notice = np.full(1, self._parity, np.int64)
        self._sending = [comm.Isend(notice if local else slots[self._parity], dest=other,
                                    tag=TAG_HALO) for other, local, slots in self.sends]

    def wait_receives(self) -> None:
        """Wait until every receive's rows are in its inbox."""
        self.world.MPI.Request.Waitall(self._receiving)
        self._receiving = []

    def inbox(self, index: int) -> np.ndarray:
        """Host rows of receive ``index`` in this exchange (after :meth:`wait_receives`)."""
        return self.receives[index][2][self._parity]

    def complete(self) -> None:
        """Complete this exchange's sends (MPI wants them done before it finalises)."""
        self.world.MPI.Request.Waitall(self._sending)
        self._sending = []

    def close(self) -> None:
        """Free the shared window and the node's communicator (collective over the node's
        ranks; the rows and buffers over the window must no longer be used). Once only:
        later calls do nothing."""
        if self.closed:
            return
        self.complete()
        self._closed_route = self.describe()
        self._pinned.clear()
        self._parts.clear()
        self.sends, self.receives = [], []
        self._window.Free()
        self._comm.Free()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed_route is not None

    def describe(self) -> str:
        """How this rank's rows travel, for summaries (closed: as they travelled)."""
        if self._closed_route is not None:
            return self._closed_route
        local = any(local for _, local, _ in self.sends + self.receives)
        remote = any(not local for _, local, _ in self.sends + self.receives)
        if local and remote:
            return "rows through shared memory on the node, through MPI between nodes"
        return "rows through shared memory" if local else "rows through MPI"
