"""Jacobi on a CPU OpenCL device (PoCL), side by side with the seed's NumPy code, one run.

    python benchmarks/cpu_jacobi.py [--size 266x400] [--iterations 3000] [--dtype float32]
                                    [--tune SECONDS] [--device SPEC] [--rounds 3]

Each round times, one after the other on the same grid: the seed's NumPy loop, then oclsci's
seed, coalesced and bands kernels (the bands kernel with its default configuration, and the
tuned one when --tune is given). Every result is compared with NumPy's, bit for bit. Prints
microseconds per iteration (best round) and the speed-up over NumPy, with the load average,
since other work on the machine shows in CPU timings. Run it with oclsci importable (installed,
or ``PYTHONPATH=.`` from the checkout).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pyopencl as cl

import oclsci
from oclsci.jacobi.kernels import KernelConfig, device_default
from oclsci.jacobi.picture import builtin_picture
from oclsci.jacobi.reference import jacobi_step, laplacian
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.tuner import save_report, tune

warnings.simplefilter("ignore", cl.CompilerWarning)


def numpy_seconds(rhs: np.ndarray, iterations: int) -> tuple[float, np.ndarray]:
    """The seed's loop (``jacobi_cpu_mat``), padded arrays prepared outside the timing."""
    m, n = rhs.shape
    x = np.zeros((m + 2, n + 2), dtype=rhs.dtype)
    x[1:-1, 1:-1] = rhs
    x_next = x.copy()
    start = time.perf_counter()
    for _ in range(iterations):
        jacobi_step(x_next, x, rhs)
        x, x_next = x_next, x
    return time.perf_counter() - start, x[1:-1, 1:-1].copy()


def opencl_seconds(compute, rhs, config, iterations) -> tuple[float, np.ndarray]:
    solver = JacobiSolver(compute, rhs, dtype=rhs.dtype, config=config)
    solver.advance(2 * solver.steps_per_launch)  # warm-up: first launch builds PoCL's code
    compute.queue.finish()
    solver = JacobiSolver(compute, rhs, dtype=rhs.dtype, config=config)
    compute.queue.finish()
    start = time.perf_counter()
    solver.advance(iterations)
    compute.queue.finish()
    return time.perf_counter() - start, solver.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="266x400")
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--tune", type=float, default=0.0, help="tuning budget (s); 0: none")
    parser.add_argument("--device", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    m, n = (int(v) for v in args.size.lower().split("x"))
    dtype = np.dtype(args.dtype)
    compute = oclsci.create_context(args.device)
    if (m, n) == (266, 400):
        rhs = laplacian(builtin_picture()).astype(dtype)
    else:
        rhs = np.random.default_rng(0).integers(-255, 256, (m, n)).astype(dtype)
    variants = {"seed": KernelConfig("seed"),
                "coalesced": device_default(compute, "coalesced", dtype, (m, n)),
                "bands (default)": device_default(compute, "bands", dtype, (m, n))}
    if args.tune > 0:
        report = tune(compute, (m, n), dtype, budget=args.tune, kernels=("bands", "coalesced"))
        save_report(report)
        variants["tuned"] = report.best.config
    print(f"device: {compute.name} ({compute.platform.name.strip()}), "
          f"{compute.device.max_compute_units} compute units; grid {m}x{n} {dtype.name}, "
          f"{args.iterations} iterations, {args.rounds} rounds, best round kept")
    best = {"numpy": np.inf, **{name: np.inf for name in variants}}
    exact = {name: True for name in variants}
    for _ in range(args.rounds):
        seconds, reference = numpy_seconds(rhs, args.iterations)
        best["numpy"] = min(best["numpy"], seconds)
        for name, config in variants.items():
            seconds, got = opencl_seconds(compute, rhs, config, args.iterations)
            best[name] = min(best[name], seconds)
            exact[name] &= bool(np.array_equal(got, reference))
    load = os.getloadavg()
    print(f"load average during the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"(on {os.cpu_count()} CPUs)")
    print("| variant | configuration | us/iteration | speed-up vs NumPy | equal to NumPy |")
    print("|---|---|---:|---:|---|")
    base = best["numpy"]
    print(f"| NumPy (seed code) | | {1e6 * base / args.iterations:.1f} | 1.0 | reference |")
    for name, config in variants.items():
        print(f"| {name} | {config.describe()} | {1e6 * best[name] / args.iterations:.1f} | "
              f"{base / best[name]:.1f} | {'yes' if exact[name] else 'NO'} |")


if __name__ == "__main__":
    main()
