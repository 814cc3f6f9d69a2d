"""Where one exchange period of an overlapped MPI rank goes on its device, without MPI: a
middle rank's sub-slabs (two strips and the interior, as oclsci.mpi.overlap cuts them) step
one period each, then the rows between them are copied, on one queue, as a rank does it
(docs/mpi.md, "Four GPUs of one node"). One process, one device:

    python3 benchmarks/period_parts.py [--size 16384] [--ranks 4] [--periods 200]
                                       [--strip-kernel NAME]

Prints the device time per period of each part (profiling events), their sum, and the span
from the first part's start to the last one's end (the difference: the device idle between
commands).
"""

from __future__ import annotations

import argparse
import math
import statistics

import numpy as np
import pyopencl as cl

from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config
from oclsci.mpi.slabs import Decomposition, exchange_period
from oclsci.mpi.subslabs import sub_slabs
from oclsci.runtime.device import create_context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16384)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--periods", type=int, default=200)
    parser.add_argument("--strip-kernel", default="auto",
                        help="the strips' kernel (default: what auto means for them)")
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
        solvers[index] = JacobiSolver(compute, rhs, dtype=dtype,
                                      config=strip_config if index in strips
                                      else interior_config)
    copies = [(source, dest, first, stop) for source, dest, first, stop
              in decomposition.transfers() if source in solvers and dest in solvers]
    order = sorted(mine, key=lambda index: (index not in strips, index))
    stride = next(iter(solvers.values())).row_stride
    item = np.dtype(dtype).itemsize
    print(f"{compute.device.name}: rank {rank} of {args.ranks} on {n}^2, period {period}; "
          f"pieces {[decomposition.slabs[i].rows for i in order]} rows; interior "
          f"{interior_config.describe()}; strips {strip_config.describe()}")
    parts: dict[str, list[float]] = {}
    spans = []
    for repeat in range(args.periods + 5):
        events = []
        for index in order:
            name = "strip" if index in strips else "interior"
            events.append((name, solvers[index].advance(period)))
        for source, dest, first, stop in copies:
            for buffer in solvers[dest].x_buffers:
                offset = decomposition.slabs[dest].local(first) * stride * item
                events.append(("copies", cl.enqueue_copy(
                    queue, buffer, solvers[source].x_buffer,
                    byte_count=(stop - first) * stride * item,
                    src_offset=decomposition.slabs[source].local(first) * stride * item,
                    dst_offset=offset)))
        queue.finish()
        if repeat < 5:
            continue  # warm-up
        sums: dict[str, float] = {}
        for name, event in events:
            sums[name] = sums.get(name, 0.0) + (event.profile.end - event.profile.start) * 1e-3
        for name, value in sums.items():
            parts.setdefault(name, []).append(value)
        spans.append((events[-1][1].profile.end - events[0][1].profile.start) * 1e-3)
    total = 0.0
    for name, values in parts.items():
        value = statistics.median(values)
        total += value
        print(f"{name:9s} {value:8.1f} us per period ({value / period:6.2f} us per step)")
    span = statistics.median(spans)
    print(f"sum       {total:8.1f} us; span {span:8.1f} us ({span / period:6.2f} us per step); "
          f"idle between commands {span - total:6.1f} us")


if __name__ == "__main__":
    main()
