"""One grid in bands of rows on queues of their own against the whole grid on one queue
(oclsci/jacobi/concurrent.py): the rate of each band count, the bits compared.

    OCLSCI_TUNE_CACHE=off python3 benchmarks/queue_bands.py [--shapes 16384x16384,8158x16384]
                                                            [--bands 2,3,4,6,8] [--dtype float64]
                                                            [--steps 3200]

For each shape: the whole grid (``--kernel auto``'s configuration, on one queue), then the same
configuration in each number of bands; each line gives microseconds per step and G cell
updates per second (host clock around ``--steps`` steps after a warm-up, best of two), and
whether the result equals the whole grid's bit for bit. ``auto`` is marked: the count that
``oclsci jacobi`` takes there (:func:`oclsci.jacobi.runner.queue_bands`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from oclsci.jacobi.concurrent import ConcurrentJacobi
from oclsci.jacobi.runner import queue_bands
from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config
from oclsci.runtime.device import create_context


def seconds_per_step(solver, steps: int) -> float:
    """Best of two host-timed runs of ``steps`` steps, after a warm-up launch."""
    finish = getattr(solver, "finish", solver.compute.queue.finish)
    solver.advance(solver.steps_per_launch)
    finish()
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        solver.advance(steps)
        finish()
        best = min(best, time.perf_counter() - start)
    return best / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="16384x16384,8158x16384,4062x16384")
    parser.add_argument("--bands", default="2,3,4,5,6,8")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--steps", type=int, default=3200)
    args = parser.parse_args()
    compute = create_context()
    dtype = np.dtype(args.dtype)
    print(f"{compute.device.name}, {dtype.name}, {args.steps} steps")
    rng = np.random.default_rng(0)
    for text in args.shapes.split(","):
        m, n = (int(part) for part in text.split("x"))
        rhs = rng.random((m, n)).astype(dtype)
        config = choose_fitting_config(compute, "auto", dtype, (m, n))
        auto = queue_bands(compute, config, (m, n), environ={})
        print(f"\n{m}x{n}: {config.describe()}")
        whole = JacobiSolver(compute, rhs, dtype=dtype, config=config, rhs_checked=True)
        base = seconds_per_step(whole, args.steps)
        want = whole.read()
        del whole
        print(f"whole grid, one queue:   {base * 1e6:8.1f} us/step "
              f"{m * n / base / 1e9:7.1f} G cell/s" + (" (auto)" if auto == 1 else ""))
        for bands in (int(part) for part in args.bands.split(",")):
            solver = ConcurrentJacobi(compute, rhs, dtype=dtype, config=config, bands=bands)
            seconds = seconds_per_step(solver, args.steps)
            same = np.array_equal(solver.read().view(np.uint8), want.view(np.uint8))
            del solver
            print(f"{bands} bands, {bands} queues: {seconds * 1e6:8.1f} us/step "
                  f"{m * n / seconds / 1e9:7.1f} G cell/s ({base / seconds - 1:+.1%}), "
                  f"bit-identical: {same}" + (" (auto)" if auto == bands else ""), flush=True)


if __name__ == "__main__":
    main()
