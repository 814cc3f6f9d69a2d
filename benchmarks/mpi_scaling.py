"""Strong and weak scaling of the distributed Jacobi solver (oclsci.mpi), one rank per device.

Run it under MPI with the largest number of ranks wanted; it times every P of --ranks on
sub-communicators of that world (ranks 0..P-1, the others wait):

    mpiexec -n 4 python benchmarks/mpi_scaling.py --strong 32768 --weak 16384 --ranks 1,2,4

Each rank builds its own rows of the right-hand side (no scatter from rank 0), so the timings
are those of the solve, after a warm-up of two exchange periods, the largest over ranks:
"wall s" is the wall time of ``oclsci.jacobi.run`` for --iterations steps (halo exchanges and
the final residual norm included); "dev s" is the span of the OpenCL events from the first
launch to the last (halo exchanges included: the device idles during them, but not the final
residual norm, which the solver computes partly on the host). "Gcell/s" is from "dev s".
Strong scaling: an N x N grid on P devices; efficiency T(1) / (P T(P)). Weak scaling:
(P N) x N, N x N per device; efficiency T(1) / T(P).
Prints a table and, with --json, writes every figure. Run it with oclsci importable (installed,
or ``PYTHONPATH=.`` from the checkout; pass the variable to the ranks).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time

import numpy as np

from oclsci import create_context, mpi
from oclsci.jacobi.distributed import DistributedJacobi


def make_rows(n: int, dtype: np.dtype):
    """rows(lo, hi) -> the right-hand side's rows lo..hi-1, a cheap function of (row, col)."""
    def rows(lo: int, hi: int) -> np.ndarray:
        r = (np.arange(lo, hi, dtype=np.int64) % 17).astype(dtype) - dtype.type(8)
        c = (np.arange(n, dtype=np.int64) % 13).astype(dtype)
        return r[:, None] - c[None, :]
    return rows


def measure(world: mpi.World, compute, shape, iterations: int, dtype, kernel: str,
            exchange_every: int | None) -> dict:
    """Time one configuration on ``world``; the figures (max over ranks) on every rank."""
    dtype = np.dtype(dtype)
    setup = time.perf_counter()
    job = DistributedJacobi(world, compute, shape, make_rows(shape[1], dtype), None,
                                dtype=dtype, kernel=kernel, exchange_every=exchange_every,
                                data_dtypes=(dtype.str, None))
    job.start(0)
    warm = 2 * job.period
    job.run(warm)
    compute.queue.finish()
    setup = time.perf_counter() - setup
    exchanges, exchange_seconds = job.halo.exchanges, job.halo.seconds
    world.comm.Barrier()
    started = time.perf_counter()
    result = job.run(warm + iterations)
    wall = time.perf_counter() - started
    figures = {
        "ranks": world.size, "m": shape[0], "n": shape[1], "dtype": dtype.name,
        "kernel_option": kernel, "kernel": job.config.describe(),
        "strip_kernel": (job.strip_config.describe()
                         if job.overlapped and job.strip_config != job.config else None),
        "iterations": iterations,
        "exchange_every": job.period, "halo_rows": job.decomposition.halo,
        "seconds": world.allreduce_max(wall),
        "device_seconds": world.allreduce_max(result.device_seconds),
        "exchange_seconds": world.allreduce_max(job.halo.seconds - exchange_seconds),
        "exchanges": job.halo.exchanges - exchanges,
        "halo_bytes_per_exchange": world.allreduce_max(
            job.decomposition.halo_bytes_per_exchange(world.rank, dtype.itemsize,
                                                      job.solver.row_stride)),
        "setup_seconds": world.allreduce_max(setup),
        "devices": world.comm.gather(f"{compute.spec} {compute.name}", root=0),
    }
    figures["gcells_per_s"] = shape[0] * shape[1] * iterations / figures["seconds"] / 1e9
    job.close()
    del job
    gc.collect()  # free the device buffers before the next configuration
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strong", type=int, default=0, help="N of the N x N strong-scaling grid")
    parser.add_argument("--weak", type=int, default=0, help="N of the N x N grid per rank")
    parser.add_argument("--ranks", default="", help="P values, e.g. 1,2,4 (default: 1 and all)")
    parser.add_argument("--iterations", type=int, default=480)
    parser.add_argument("--weak-iterations", type=int, default=0,
                        help="steps for weak scaling (default: --iterations)")
    parser.add_argument("--kernel", default="auto", help="kernels, comma-separated")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--exchange-every", type=int, default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args()

    os.environ.setdefault("OCLSCI_MPI", "1")
    from mpi4py import MPI  # starts MPI: only once the script runs (under mpiexec)

    world = mpi.World(MPI.COMM_WORLD)
    mpi.use_rank_cache_dirs(world.rank)
    compute = create_context(args.device, local_rank=world.local_rank)
    ranks = [int(v) for v in args.ranks.split(",") if v] or sorted({1, world.size})
    runs = []
    for kernel in args.kernel.split(","):
        for mode, size, steps in (("strong", args.strong, args.iterations),
                                  ("weak", args.weak, args.weak_iterations or args.iterations)):
            if not size:
                continue
            for p in ranks:
                sub = world.split(p)
                if sub is not None:
                    shape = (size, size) if mode == "strong" else (p * size, size)
                    figures = measure(sub, compute, shape, steps, args.dtype, kernel,
                                      args.exchange_every)
                    figures["mode"] = mode
                    if sub.is_root:
                        runs.append(figures)
                        print(json.dumps(figures), flush=True)
                    sub.comm.Free()
                world.comm.Barrier()
    if not world.is_root:
        return
    print(f"\n{'mode':6} {'kernel':24} {'P':>2} {'grid':>13} {'wall s':>7} {'eff':>6} "
          f"{'dev s':>7} {'eff':>6} {'Gcell/s':>8} {'exch s':>7} {'every':>5}")
    for run in runs:
        # The same --kernel on the fewest ranks (its configuration may differ with the slab).
        base = next(r for r in runs if r["mode"] == run["mode"]
                    and r["kernel_option"] == run["kernel_option"] and r["ranks"] == min(ranks))
        for key, name in (("seconds", "efficiency"), ("device_seconds", "device_efficiency")):
            scale = base["ranks"] / run["ranks"] if run["mode"] == "strong" else 1.0
            run[name] = scale * base[key] / run[key]
        cells = run["m"] * run["n"] * run["iterations"]
        print(f"{run['mode']:6} {run['kernel'][:24]:24} {run['ranks']:>2} "
              f"{run['m']:>6}x{run['n']:<6} {run['seconds']:7.3f} "
              f"{100 * run['efficiency']:5.1f}% {run['device_seconds']:7.3f} "
              f"{100 * run['device_efficiency']:5.1f}% {cells / run['device_seconds'] / 1e9:8.1f} "
              f"{run['exchange_seconds']:7.3f} {run['exchange_every']:>5}")
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(runs, stream, indent=1)


if __name__ == "__main__":
    main()
