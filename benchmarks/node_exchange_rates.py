"""Rates that decide how ranks on one node exchange halo rows (docs/mpi.md, "Exchanges
between ranks of one node"). Run one rank per GPU, at least two ranks on one node:

    mpiexec -n 4 python3 benchmarks/node_exchange_rates.py [--sizes 65536,1048576] [--json F]

Rank 0 prints, per message size: device-to-host and host-to-device copy times from pinned
(driver-allocated), pageable (NumPy) and MPI shared-window memory; MPI's Sendrecv between
ranks 0 and 1 of pinned host buffers; the whole hand-over of rows from device 0 to device 1
through MPI (copy out, Send/Recv, copy in) and through a shared window (copy out into the
window, an 8-byte message, copy in from the window), before and after the window is wrapped
in an OpenCL buffer (``CL_MEM_USE_HOST_PTR``: NVIDIA's driver then page-locks it, as
oclsci.mpi.transport does); and, in one process, a copy between
two devices' buffers of one context (does the driver go peer to peer?), and the same through
page-locked host memory of that context. Each figure is the
median of REPEAT runs after one warm-up, in microseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import pyopencl as cl
from mpi4py import MPI

from oclsci.runtime.device import create_context
from oclsci.runtime.memory import pinned_empty

REPEAT = 30


def _median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


def _time(action, repeat: int = REPEAT) -> float:
    action()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return _median_us(samples)


def register(compute, host: np.ndarray) -> cl.Buffer:
    """``host`` wrapped as a buffer (``CL_MEM_USE_HOST_PTR``), as oclsci.mpi.transport does:
    NVIDIA's driver page-locks the memory while the buffer lives."""
    return cl.Buffer(compute.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                     hostbuf=host)


def copy_rates(compute, nbytes: int, window_rows: np.ndarray) -> dict[str, float]:
    """Blocking copy times between this rank's device and four kinds of host memory: pinned
    by the driver, pageable, the shared window, and the window once wrapped in a buffer."""
    queue = compute.queue
    device = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE, nbytes)
    hosts = {"pinned": pinned_empty(compute, (nbytes,), np.uint8),
             "pageable": np.ones(nbytes, np.uint8), "window": window_rows[:nbytes]}
    result = {}
    for name, host in hosts.items():
        result[f"D2H {name}"] = _time(lambda h=host: cl.enqueue_copy(queue, h, device,
                                                                      is_blocking=True))
        result[f"H2D {name}"] = _time(lambda h=host: cl.enqueue_copy(queue, device, h,
                                                                      is_blocking=True))
    wrapped = register(compute, window_rows[:nbytes])
    host = hosts["window"]
    result["D2H window, registered"] = _time(lambda: cl.enqueue_copy(queue, host, device,
                                                                     is_blocking=True))
    result["H2D window, registered"] = _time(lambda: cl.enqueue_copy(queue, device, host,
                                                                     is_blocking=True))
    wrapped.release()
    return result


def hand_over(comm, node, compute, nbytes: int, window: np.ndarray,
              peer_window: np.ndarray | None) -> dict[str, float]:
    """Rows from device 0 to device 1: through MPI's copy, and through the shared window
    (copy out into rank 0's part, an 8-byte message, copy in from there), before and after
    both ranks registered that part; the last hand-over's bytes are checked on rank 1."""
    rank, queue = comm.rank, compute.queue
    device = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE, nbytes)
    staged = pinned_empty(compute, (nbytes,), np.uint8)
    flag = np.zeros(1, np.int64)
    result: dict[str, float] = {}
    pattern = [0]

    def through_mpi() -> None:
        if rank == 0:
            cl.enqueue_copy(queue, staged, device, is_blocking=True)
            comm.Send(staged, dest=1, tag=1)
            comm.Recv(flag, source=1, tag=2)
        elif rank == 1:
            comm.Recv(staged, source=0, tag=1)
            cl.enqueue_copy(queue, device, staged, is_blocking=True)
            comm.Send(flag, dest=0, tag=2)

    def through_window() -> None:
        pattern[0] = (pattern[0] + 1) % 251
        if rank == 0:
            cl.enqueue_fill_buffer(queue, device, np.uint8(pattern[0]), 0, nbytes)
            cl.enqueue_copy(queue, window[:nbytes], device, is_blocking=True)
            comm.Send(flag, dest=1, tag=3)
            comm.Recv(flag, source=1, tag=4)
        elif rank == 1:
            comm.Recv(flag, source=0, tag=3)
            cl.enqueue_copy(queue, device, peer_window[:nbytes], is_blocking=True)
            comm.Send(flag, dest=0, tag=4)

    comm.Barrier()
    result["hand-over MPI"] = _time(through_mpi)
    comm.Barrier()
    result["hand-over window"] = _time(through_window)
    wrapped = register(compute, (window if rank == 0 else peer_window)[:nbytes]) \
        if rank in (0, 1) else None
    comm.Barrier()
    result["hand-over window, registered"] = _time(through_window)
    if rank == 1:
        check = np.empty(nbytes, np.uint8)
        cl.enqueue_copy(queue, check, device, is_blocking=True)
        print(f"rank 1: the window's hand-over of {nbytes} bytes arrived intact: "
              f"{bool((check == pattern[0]).all())}", flush=True)
    if wrapped is not None:
        wrapped.release()
    comm.Barrier()
    send, recv = pinned_empty(compute, (nbytes,), np.uint8), pinned_empty(compute, (nbytes,),
                                                                           np.uint8)
    if rank in (0, 1):
        other = 1 - rank
        result["Sendrecv both ways"] = _time(lambda: comm.Sendrecv(send, dest=other,
                                                                    recvbuf=recv, source=other))
    return result


def peer_copy(nbytes: int) -> dict[str, float]:
    """One context over two GPUs: a copy from device 0's buffer to device 1's."""
    platforms = [p for p in cl.get_platforms() if p.get_devices(cl.device_type.GPU)]
    if not platforms or len(platforms[0].get_devices(cl.device_type.GPU)) < 2:
        return {}
    devices = platforms[0].get_devices(cl.device_type.GPU)[:2]
    context = cl.Context(devices)
    queues = [cl.CommandQueue(context, device) for device in devices]
    source = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    target = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queues[0], source, np.uint8(1), 0, nbytes).wait()
    cl.enqueue_fill_buffer(queues[1], target, np.uint8(0), 0, nbytes).wait()

    def copy() -> None:
        cl.enqueue_copy(queues[1], target, source).wait()
        cl.enqueue_fill_buffer(queues[0], source, np.uint8(2), 0, 4).wait()  # source moves back
    # Staged through page-locked memory of the same context: device 0 -> host -> device 1.
    staged = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
    host, _ = cl.enqueue_map_buffer(queues[0], staged, cl.map_flags.READ | cl.map_flags.WRITE,
                                    0, (nbytes,), np.uint8, is_blocking=True)

    def through_host() -> None:
        cl.enqueue_copy(queues[0], host, source, is_blocking=True)
        cl.enqueue_copy(queues[1], target, host, is_blocking=True)
    return {"peer copy, one context": _time(copy, 10),
            "via pinned host, one context": _time(through_host)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="65536,262144,1048576,4194304")
    parser.add_argument("--json")
    args = parser.parse_args()
    sizes = [int(text) for text in args.sizes.split(",")]
    comm = MPI.COMM_WORLD
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    compute = create_context(local_rank=node.rank, local_ranks=node.size)
    largest = max(sizes)
    window_handle = MPI.Win.Allocate_shared(largest, 1, comm=node)
    segments = []
    for rank in range(node.size):
        memory, _ = window_handle.Shared_query(rank)
        segments.append(np.ndarray(buffer=memory, dtype=np.uint8, shape=(largest,)))
    own, peer = segments[node.rank], (segments[0] if node.rank == 1 else None)
    table = []
    for nbytes in sizes:
        row = {"bytes": nbytes, **copy_rates(compute, nbytes, own)}
        row.update(hand_over(comm, node, compute, nbytes, own, peer))
        table.append(row)
    comm.Barrier()
    if comm.rank == 0:
        for nbytes in sizes:
            table[sizes.index(nbytes)].update(peer_copy(nbytes))
        print(f"{compute.device.name}; {comm.size} ranks, {node.size} on this node; "
              f"{MPI.Get_library_version().splitlines()[0]}")
        keys = list(table[0])
        print(" | ".join(keys))
        for row in table:
            print(" | ".join(str(row.get(key, "")) for key in keys))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(table, out, indent=1)
    comm.Barrier()
    window_handle.Free()


if __name__ == "__main__":
    main()
