"""Where one exchange period of an overlapped MPI rank goes on its device, without MPI: a
middle rank's sub-slabs (two strips and the interior, as oclsci.mpi.overlap cuts them) step
one period each, then the rows between them are copied (docs/mpi.md, "Four GPUs of one
node"). Two ways alternate between periods: the strips on the interior's queue, before it
(as a rank does), and on a queue of their own, beside it (tried and not kept: ranks ran
slower, docs/mpi.md; the copy then waits for both). The rows between sub-slabs are copied
in one launch of the copy kernel (oclsci.mpi.rowcopy, as a rank does), or with
``--copies separate`` one ``clEnqueueCopyBuffer`` per copy. One process, one device:

    python3 benchmarks/period_parts.py [--size 16384] [--ranks 4] [--periods 200]
                                       [--strip-kernel NAME] [--strips-write all]
                                       [--copies separate]

(``--size 256 --periods 5`` checks it on a CPU in seconds.) Prints the device time per period
of each part (profiling events; beside the interior, a strip's launch takes longer), and per
way their sum and the span from the first part's start to the last one's end (the period).
"""

from __future__ import annotations

import argparse
import math
import statistics

import numpy as np
import pyopencl as cl

from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config
from oclsci.mpi.rowcopy import RowCopier
from oclsci.mpi.slabs import Decomposition, exchange_period
from oclsci.mpi.subslabs import sub_slabs
from oclsci.runtime.device import create_context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16384)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--periods", type=int, default=200,
                        help="periods timed per way of copying")
    parser.add_argument("--strip-kernel", default="auto",
                        help="the strips' kernel (default: what auto means for them)")
    parser.add_argument("--strips-write", choices=("owned", "all"), default="owned",
                        help="the rows the strips' launches write: their owned rows where one "
                             "launch makes the period (as a rank does), or all of them")
    parser.add_argument("--copies", choices=("kernel", "separate"), default="kernel",
                        help="the rows between sub-slabs: one copy kernel launch (as a rank "
                             "does) or one buffer copy each")
    args = parser.parse_args()
    compute = create_context()
    beside = compute.with_own_queue()
    queue, n, dtype = compute.queue, args.size, np.float32
    rows = args.size // args.ranks
    # The configurations and period that DistributedJacobi chooses with --kernel auto.
    interior_config = choose_fitting_config(compute, "auto", dtype, (rows - 34, n))
    strip_config = choose_fitting_config(compute, args.strip_kernel, dtype, (17, n))
    period = exchange_period(math.lcm(interior_config.steps_per_launch,
                                      strip_config.steps_per_launch))
    decomposition, owners = sub_slabs(Decomposition.build(n, n, args.ranks, period))
    rank = 1 if args.ranks > 2 else 0
    mine = [index for index, owner in enumerate(owners) if owner == rank]
    strips = {source for source, dest, _, _ in decomposition.transfers()
              if owners[source] == rank and owners[dest] != rank}
    rng = np.random.default_rng(0)
    ways = ("strips before the interior", "strips beside the interior")
    solvers: dict[str, dict[int, JacobiSolver]] = {way: {} for way in ways}
    for index in mine:
        piece = decomposition.slabs[index]
        rhs = rng.random((piece.hi - piece.lo, n), dtype=dtype)
        config = strip_config if index in strips else interior_config
        owned = (piece.first - piece.lo, piece.stop - piece.lo)
        for way, strips_compute in zip(ways, (compute, beside), strict=True):
            if index not in strips and way != ways[0]:
                solvers[way][index] = solvers[ways[0]][index]  # one interior
                continue
            solvers[way][index] = JacobiSolver(
                strips_compute if index in strips else compute, rhs, dtype=dtype,
                config=config, rows_read=owned if index in strips
                and args.strips_write == "owned" and config.steps_per_launch == period
                else None)
    copies = [(source, dest, first, stop) for source, dest, first, stop
              in decomposition.transfers() if source in mine and dest in mine]
    order = sorted(mine, key=lambda index: (index not in strips, index))
    stride = solvers[ways[0]][mine[0]].row_stride
    item = np.dtype(dtype).itemsize
    copier = RowCopier(compute, dtype)
    print(f"{compute.device.name}: rank {rank} of {args.ranks} on {n}^2, period {period}; "
          f"pieces {[decomposition.slabs[i].rows for i in order]} rows; interior "
          f"{interior_config.describe()}; strips {strip_config.describe()}, writing "
          f"{args.strips_write} rows; copies: {args.copies}")
    parts: dict[str, dict[str, list[float]]] = {way: {} for way in ways}
    sums: dict[str, list[float]] = {way: [] for way in ways}
    spans: dict[str, list[float]] = {way: [] for way in ways}
    for repeat in range(2 * (args.periods + 5)):
        way = ways[repeat % 2]
        mines = solvers[way]
        events = []
        for index in order:
            if index not in strips:
                beside.queue.flush()  # the strips first
            events.append(("strip" if index in strips else "interior",
                           mines[index].advance(period)))
        beside.queue.flush()
        ahead = [event for name, event in events if name == "strip"]
        if way == ways[1] and ahead:
            cl.enqueue_barrier(queue, wait_for=ahead)
        table = [(mines[source].x_buffer, decomposition.slabs[source].local(first) * stride,
                  buffer, decomposition.slabs[dest].local(first) * stride,
                  (stop - first) * stride)
                 for source, dest, first, stop in copies for buffer in mines[dest].x_buffers]
        if args.copies == "kernel":
            event = copier.enqueue(queue, table)
            if event is not None:
                events.append(("copies", event))
        for source, source_at, dest, dest_at, elements in (
                table if args.copies == "separate" else ()):
            events.append(("copies", cl.enqueue_copy(queue, dest, source,
                                                     byte_count=elements * item,
                                                     src_offset=source_at * item,
                                                     dst_offset=dest_at * item)))
        queue.finish()
        if repeat < 10:
            continue  # warm-up
        times: dict[str, float] = {}
        for name, event in events:
            times[name] = times.get(name, 0.0) + (event.profile.end - event.profile.start) * 1e-3
        for name, value in times.items():
            parts[way].setdefault(name, []).append(value)
        sums[way].append(sum(times.values()))
        spans[way].append((max(event.profile.end for _, event in events)
                           - min(event.profile.start for _, event in events)) * 1e-3)
    for way in ways:
        print(f"{way}:")
        for name, values in parts[way].items():
            value = statistics.median(values)
            print(f"  {name:9s} {value:8.1f} us per period ({value / period:6.2f} us per step)")
        total, span = statistics.median(sums[way]), statistics.median(spans[way])
        print(f"  sum {total:8.1f} us; span (the period) {span:8.1f} us ({span / period:6.2f} "
              f"us per step); span - sum {span - total:6.1f} us")

if __name__ == "__main__":
    main()
