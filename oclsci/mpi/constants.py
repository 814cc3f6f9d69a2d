"""The constants of the exchange plan's model (:mod:`oclsci.mpi.plan`), measured on a node's
ranks by ``oclsci tune --mpi`` and kept in the tuning cache beside the kernels' entries.

Measured collectively, every rank on its own device: the cost of launching a tiny kernel
(median of many), the rates of page-locked copies device -> host and host -> device and of a
copy on the device (a few sizes around one exchange's bytes, a line fitted through them), and
the hand-over between neighbouring ranks through the node's shared window
(:class:`~oclsci.mpi.transport.RowTransport`) and through MPI (``Sendrecv``), each a latency
and a rate. The slowest rank's figures are kept. The cache key names the device, its driver,
oclsci's version and the node layout (ranks per node), not a grid: a run computes its plan
from these, its grid and its kernel's rate.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError
from oclsci.kernelspec.registry import (
    cache_disabled,
    device_key,
    load_cache,
    save_entry,
    warn_once,
)
from oclsci.mpi.plan import Constants
from oclsci.mpi.transport import RowTransport, node_comm
from oclsci.mpi.world import World, mpi_world
from oclsci.runtime.memory import pinned_empty
from oclsci.runtime.programs import get_kernel

# Bytes of the copies and hand-overs timed: around one exchange (17 rows of 4096 to 65536
# float32 columns: 0.3 to 4.5 MB).
PROBE_BYTES = (1 << 18, 1 << 20, 1 << 22)
# Launches of the tiny kernel per timing, and timings (the median is kept).
LAUNCHES, TIMINGS = 50, 5
# A rate that the line fit cannot tell from infinite (bytes per second).
FASTEST = 1e15


def ranks_per_node(world: World) -> int:
    """The most ranks that share a node (collective; ``OCLSCI_MPI_NODE_RANKS`` counted)."""
    node = node_comm(world)
    size = node.size
    node.Free()
    return int(world.comm.allreduce(size, op=world.MPI.MAX))


def constants_key(compute: Any, node_ranks: int) -> str:
    """The cache key: device, driver, oclsci version and ranks per node."""
    return f"{device_key(compute)} | mpi, {node_ranks} ranks per node"


def save_constants(key: str, constants: Constants) -> Any:
    """Store ``constants`` in the tuning cache under ``key``; return the cache's path."""
    fields = {name: value for name, value in dataclasses.asdict(constants).items()
              if value is not None}
    return save_entry(key, {"mpi_constants": fields,
                            "date": time.strftime("%Y-%m-%dT%H:%M:%S")})


def cached_constants(key: str) -> Constants | None:
    """The constants stored under ``key``; None when the cache is off or holds none, or (with
    one warning) when the entry is malformed."""
    if cache_disabled():
        return None
    entry = load_cache().get(key)
    if entry is None:
        return None
    try:
        fields = entry["mpi_constants"]
        constants = Constants(**fields)
        for name, value in dataclasses.asdict(constants).items():
            if value is not None and not (isinstance(value, int | float) and value >= 0):
                raise ValueError(f"{name} = {value!r}")
        return constants
    except (KeyError, TypeError, ValueError) as error:
        warn_once(f"ignoring the MPI constants {key!r} in the tuning cache ({error}); "
                  "`oclsci tune --mpi` rewrites them")
        return None


def _fit(sizes: tuple[int, ...], seconds: list[float]) -> tuple[float, float]:
    """(latency in us, bytes per second) of a line through (bytes, seconds)."""
    slope, intercept = np.polyfit(np.asarray(sizes, float), np.asarray(seconds, float), 1)
    rate = 1.0 / slope if slope > 1.0 / FASTEST else FASTEST
    return max(0.0, intercept * 1e6), rate


def _median_seconds(action: Any, repeats: int = TIMINGS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def launch_us(compute: Any) -> float:
    """Microseconds per launch of a one-item kernel, queued back to back (median)."""
    kernel = get_kernel(compute, "elementwise", name="oclsci_probe",
                        kernel_name="oclsci_probe", params=(("x", "float", True, True),),
                        operation="x = x + 1.0f;", preamble="", per_item=1, fp_contract=False)
    buffer = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE, 4)
    kernel.set_args(buffer, np.uint64(0), np.uint64(1))
    queue = compute.queue

    def launches() -> None:
        for _ in range(LAUNCHES):
            cl.enqueue_nd_range_kernel(queue, kernel, (1,), None)
        queue.finish()

    launches()  # build and warm up
    return _median_seconds(launches) / LAUNCHES * 1e6


def copy_rates(compute: Any) -> tuple[float, float, float]:
    """Bytes per second device -> page-locked host, back, and on the device."""
    host = pinned_empty(compute, (max(PROBE_BYTES),), np.uint8)
    device = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE, 2 * max(PROBE_BYTES))
    queue = compute.queue
    out, back, inside = [], [], []
    for nbytes in PROBE_BYTES:
        view = host[:nbytes]
        out.append(_median_seconds(lambda v=view: cl.enqueue_copy(queue, v, device).wait()))
        back.append(_median_seconds(lambda v=view: cl.enqueue_copy(queue, device, v).wait()))
        inside.append(_median_seconds(lambda n=nbytes: cl.enqueue_copy(
            queue, device, device, byte_count=n, dst_offset=max(PROBE_BYTES)).wait()))
    return tuple(_fit(PROBE_BYTES, times)[1] for times in (out, back, inside))


def handover(world: World, compute: Any, partner: int | None,
             window: bool) -> tuple[float, float] | None:
    """(latency us, bytes per second) of hand-overs with ``partner`` (None: this rank has no
    partner and only joins the collectives): through the node's shared window, or MPI's
    ``Sendrecv``. None when the window route is not the one the transport takes."""
    times = []
    for nbytes in PROBE_BYTES:
        links = [(partner, 1)] if partner is not None else []
        if window:  # one row of nbytes each way
            transport = RowTransport(world, compute, links, links, nbytes, np.uint8)
            usable = partner in transport.local_peers

            def once(transport=transport) -> None:
                transport.begin()
                transport.send()
                transport.wait_receives()
                transport.complete()
        else:
            usable = partner is not None
            out = pinned_empty(compute, (nbytes,), np.uint8)
            into = pinned_empty(compute, (nbytes,), np.uint8)

            def once(out=out, into=into) -> None:
                if partner is not None:
                    world.comm.Sendrecv(out, dest=partner, recvbuf=into, source=partner)
        once()
        world.comm.Barrier()
        times.append(_median_seconds(once))
        if window:
            transport.close()
    return _fit(PROBE_BYTES, times) if usable else None


def _slowest(world: World, pair: tuple[float, float] | None) -> tuple[float, float] | None:
    """The largest latency and the smallest rate over the ranks that measured one."""
    pairs = [p for p in world.comm.allgather(pair) if p is not None]
    if not pairs:
        return None
    return max(p[0] for p in pairs), min(p[1] for p in pairs)


def measure(world: World, compute: Any) -> Constants:
    """Measure the model's constants on every rank of ``world`` (collective; at least two
    ranks): the slowest rank's figures. Neighbours are paired (0, 1), (2, 3), ...; the MPI
    route's figures are those between nodes where a pair spans two, else within one."""
    node_ranks = ranks_per_node(world)
    rank, size = world.rank, world.size
    partner = rank ^ 1 if (rank ^ 1) < size else None
    launch = max(world.comm.allgather(launch_us(compute)))
    d2h, h2d, d2d = (min(values) for values in zip(*world.comm.allgather(copy_rates(compute)),
                                                    strict=True))
    node = _slowest(world, handover(world, compute, partner, window=True))
    network = _slowest(world, handover(world, compute, partner, window=False))
    node = node or network
    return Constants(launch_us=launch, d2h_bytes_per_s=d2h, h2d_bytes_per_s=h2d,
                     node_bytes_per_s=node[1], node_latency_us=node[0],
                     network_bytes_per_s=network[1], network_latency_us=network[0],
                     ranks_per_node=node_ranks, d2d_bytes_per_s=d2d)


def describe(constants: Constants) -> list[str]:
    """The constants as lines, for ``oclsci tune --mpi``."""
    def rate(value: float) -> str:
        return "too fast to tell" if value >= FASTEST else f"{value / 1e9:.2f} GB/s"

    return [f"launch: {constants.launch_us:.2f} us",
            f"device -> host: {rate(constants.d2h_bytes_per_s)}, host -> device: "
            f"{rate(constants.h2d_bytes_per_s)}, on the device: "
            f"{rate(constants.d2d_bytes_per_s)}",
            f"hand-over on the node: {constants.node_latency_us:.1f} us + "
            f"{rate(constants.node_bytes_per_s)}",
            f"hand-over by MPI: {constants.network_latency_us:.1f} us + "
            f"{rate(constants.network_bytes_per_s)}",
            f"ranks per node: {constants.ranks_per_node}"]


def plan_overridden(environ: Any = None) -> bool:
    """Whether ``OCLSCI_MPI_EXCHANGE_EVERY`` or ``OCLSCI_MPI_OVERLAP`` is set: then the fixed
    rules apply (the variables always win over a measured plan)."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name, "").strip()
               for name in ("OCLSCI_MPI_EXCHANGE_EVERY", "OCLSCI_MPI_OVERLAP"))


def run_constants(world: World, compute: Any) -> Constants | None:
    """The cached constants for this device and node layout, rank 0's on every rank
    (collective); None when a variable overrides the plan or none are cached."""
    key = constants_key(compute, ranks_per_node(world))
    return world.bcast(cached_constants(key) if world.is_root and not plan_overridden()
                       else None)


def tune_constants(device: str | None, *, save: bool = True,
                   notify: Any = None) -> tuple[Constants, str, Any] | None:
    """``oclsci tune --mpi``: open each rank's device, measure the constants (collective),
    store them on rank 0 unless ``save`` is False. Rank 0 gets (constants, cache key, cache
    path or None), the other ranks None."""
    world = mpi_world()
    if world is None:
        raise InputError("oclsci tune --mpi measures between MPI ranks: start it with "
                         "mpiexec -n 2 (or more)")

    def work() -> tuple[Constants, str, Any] | None:
        compute = world.open_device(device, notify)
        constants = measure(world, compute)
        key = constants_key(compute, constants.ranks_per_node)
        path = world.agree(lambda: save_constants(key, constants)
                           if save and world.is_root else None)
        return (constants, key, path) if world.is_root else None

    return world.run_guarded(work)
