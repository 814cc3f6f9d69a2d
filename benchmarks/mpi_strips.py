"""Which kernel the strips of an overlapped MPI run should step with (docs/mpi.md, "Four
GPUs of one node"): the same run with the strips on each kernel named, one after the other
in one launch of the ranks, the interior on what ``auto`` takes. One rank per GPU:

    mpiexec -n 4 python3 benchmarks/mpi_strips.py [--size 16384] [--rows M] [--steps 20000]
                                                  [--strip-kernels auto,coalesced,seed]

Rank 0 prints, per strip kernel, the device time per step of the slowest rank (as the `per
step` line of `oclsci jacobi`), the exchange's parts and the outputs' agreement with the first
run's (bit for bit). Rows are made on each rank (no scatter), float32.
"""

from __future__ import annotations

import argparse

import numpy as np

from oclsci import mpi
from oclsci.jacobi.distributed import DistributedJacobi
from oclsci.jacobi.solver import choose_fitting_config
from oclsci.runtime.device import create_context


def rows_of(n: int):
    """Rows ``lo..hi-1`` of a reproducible right-hand side: row i from a generator seeded i."""
    def rows(lo: int, hi: int) -> np.ndarray:
        return np.stack([np.random.default_rng(i).random(n, dtype=np.float32)
                         for i in range(lo, hi)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16384, help="columns (and rows)")
    parser.add_argument("--rows", type=int, help="rows, if not --size")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--strip-kernels", default="auto,coalesced,seed")
    args = parser.parse_args()
    world = mpi.mpi_world()
    if world is None:
        raise SystemExit("run under mpiexec with at least two ranks")
    compute = create_context(local_rank=world.local_rank, local_ranks=world.local_ranks)
    m, n = args.rows or args.size, args.size
    first = None
    for name in args.strip_kernels.split(","):
        strip_config = None
        if name != "auto":
            strip_config = choose_fitting_config(compute, name, np.float32, (17, n))
        job = DistributedJacobi(world, compute, (m, n), rows_of(n),
                                    data_dtypes=("float32", None), strip_config=strip_config)
        job.start(0)
        result = job.run(args.steps, residual=False)
        x = job.gather()
        seconds = world.allreduce_max(result.device_seconds)
        phases = {phase: world.allreduce_max(value)
                  for phase, value in job.halo.phase_seconds.items()}
        waited = getattr(job.halo, "exposed_seconds", None)
        if world.is_root:
            same = "" if first is None else f"; bit-identical to the first: " \
                f"{np.array_equal(x, first)}"
            first = x if first is None else first
            print(f"strips {name}: {1e6 * seconds / args.steps:.3f} us per step; "
                  f"{job.describe()}; exchange parts (s, largest on a rank) "
                  f"{ {k: round(v, 4) for k, v in phases.items()} }; a device waited "
                  f"{waited if waited is None else round(waited, 4)} s{same}", flush=True)
        job.close()
        del job


if __name__ == "__main__":
    main()
