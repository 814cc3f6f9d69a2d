"""Where one exchange period of an overlapped MPI rank goes on its device, without MPI: a
middle rank's sub-slabs (two strips and the interior, as oclsci.mpi.overlap cuts them) step
one period each, then the rows between them are copied, on one queue, as a rank does it
(docs/mpi.md, "Four GPUs of one node"). The copies alternate between periods: one
``clEnqueueCopyBuffer`` per copy (as before), then all of them in one launch of the copy
kernel (oclsci.mpi.rowcopy, as a rank does now). One process, one device:

    python3 benchmarks/period_parts.py [--size 16384] [--ranks 4] [--periods 200]
                                       [--strip-kernel NAME] [--strips-write all]

(``--size 256 --periods 5`` checks it on a CPU in seconds.) Prints the device time per period
of each part (profiling events), and per way of copying their sum and the span from the first
part's start to the last one's end (the difference: the device idle between commands).
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
    args = parser.parse_args()
    compute = create_context()
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
    solvers = {}
    for index in mine:
        piece = decomposition.slabs[index]
        rhs = rng.random((piece.hi - piece.lo, n), dtype=dtype)
        config = strip_config if index in strips else interior_config
        owned = (piece.first - piece.lo, piece.stop - piece.lo)
        solvers[index] = JacobiSolver(compute, rhs, dtype=dtype, config=config,
                                      rows_read=owned if index in strips
                                      and args.strips_write == "owned"
                                      and config.steps_per_launch == period else None)
    copies = [(source, dest, first, stop) for source, dest, first, stop
              in decomposition.transfers() if source in solvers and dest in solvers]
    order = sorted(mine, key=lambda index: (index not in strips, index))
    stride = next(iter(solvers.values())).row_stride
    item = np.dtype(dtype).itemsize
    copier = RowCopier(compute, dtype)
    count = sum(len(solvers[dest].x_buffers) for _, dest, _, _ in copies)
    print(f"{compute.device.name}: rank {rank} of {args.ranks} on {n}^2, period {period}; "
          f"pieces {[decomposition.slabs[i].rows for i in order]} rows; interior "
          f"{interior_config.describe()}; strips {strip_config.describe()}, writing "
          f"{args.strips_write} rows")
    separate, fused = f"{count} copies", "copy kernel"
    parts: dict[str, list[float]] = {}
    sums: dict[str, list[float]] = {separate: [], fused: []}
    spans: dict[str, list[float]] = {separate: [], fused: []}
    for repeat in range(2 * (args.periods + 5)):
        way = (separate, fused)[repeat % 2]
        events = []
        for index in order:
            name = "strip" if index in strips else "interior"
            events.append((name, solvers[index].advance(period)))
        table = [(solvers[source].x_buffer, decomposition.slabs[source].local(first) * stride,
                  buffer, decomposition.slabs[dest].local(first) * stride,
                  (stop - first) * stride)
                 for source, dest, first, stop in copies for buffer in solvers[dest].x_buffers]
        if way == fused:
            event = copier.enqueue(queue, table)
            if event is not None:
                events.append((way, event))
        for source, source_at, dest, dest_at, elements in table if way == separate else ():
            events.append((way, cl.enqueue_copy(queue, dest, source,
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
            parts.setdefault(name, []).append(value)
        sums[way].append(sum(times.values()))
        spans[way].append((events[-1][1].profile.end - events[0][1].profile.start) * 1e-3)
    for name, values in parts.items():
        value = statistics.median(values)
        print(f"{name:11s} {value:8.1f} us per period ({value / period:6.2f} us per step)")
    for way in (separate, fused):
        total, span = statistics.median(sums[way]), statistics.median(spans[way])
        print(f"with {way + ':':12s} sum {total:8.1f} us; span {span:8.1f} us "
              f"({span / period:6.2f} us per step); idle between commands {span - total:6.1f} us")

if __name__ == "__main__":
    main()
