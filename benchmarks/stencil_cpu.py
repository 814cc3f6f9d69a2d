"""User stencils on a CPU OpenCL device (PoCL), side by side with NumPy slicing, one run.

    python benchmarks/stencil_cpu.py [--steps 20] [--rounds 2] [--dtype float32]
                                     [--kernels step,tiled,stream] [--device SPEC]
                                     [--size2d 2048] [--size3d 256]

Times, on the same grids: the update written with NumPy array slicing (a padded array, the
operations in the stencil's order), then each oclsci stencil kernel with its defaults for the
device (``oclsci.stencil``, built and warmed up outside the timing). Every result is compared
with NumPy's, bit for bit. Prints milliseconds per step (best round) and the speed-up over
NumPy, with the load average, since other work on the machine shows in CPU timings. Run it
with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pyopencl as cl

from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil, StencilSolver

warnings.simplefilter("ignore", cl.CompilerWarning)

HEAT_2D = "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
HEAT_3D = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
           " + u[0, 0, 1] - 6 * u)")


def numpy_step_2d(new: np.ndarray, u: np.ndarray, k, four) -> None:
    """One 5-point step on padded arrays, in the stencil's order."""
    c = u[1:-1, 1:-1]
    new[1:-1, 1:-1] = c + k * ((((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2]) + u[1:-1, 2:])
                               - four * c)


def numpy_step_3d(new: np.ndarray, u: np.ndarray, k, six) -> None:
    """One 7-point step on padded arrays, in the stencil's order."""
    c = u[1:-1, 1:-1, 1:-1]
    new[1:-1, 1:-1, 1:-1] = c + k * ((((((u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1])
                                        + u[1:-1, :-2, 1:-1]) + u[1:-1, 2:, 1:-1])
                                      + u[1:-1, 1:-1, :-2]) + u[1:-1, 1:-1, 2:]) - six * c)


def numpy_seconds(u0: np.ndarray, steps: int, k: float) -> tuple[float, np.ndarray]:
    """NumPy slicing: padded ping-pong arrays prepared outside the timing."""
    dtype = u0.dtype.type
    u = np.pad(u0, 1)
    new = u.copy()
    step, constant = (numpy_step_2d, dtype(4)) if u0.ndim == 2 else (numpy_step_3d, dtype(6))
    start = time.perf_counter()
    for _ in range(steps):
        step(new, u, dtype(k), constant)
        u, new = new, u
    return time.perf_counter() - start, u[(slice(1, -1),) * u0.ndim].copy()


def kernel_seconds(compute, stencil: Stencil, u0: np.ndarray, steps: int,
                   kernel: str) -> tuple[float, np.ndarray, str]:
    """One run of ``steps`` steps with ``kernel``'s defaults, after a warm-up run."""
    problem = stencil.problem(u0, steps)
    warm = StencilSolver(compute, problem, kernel=kernel)
    warm.advance(2 * warm.steps_per_launch + 1)
    compute.queue.finish()
    solver = StencilSolver(compute, problem, kernel=kernel)
    compute.queue.finish()
    start = time.perf_counter()
    solver.advance(steps)
    compute.queue.finish()
    return time.perf_counter() - start, solver.read(), solver.config.describe()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--kernels", default="step,tiled,stream")
    parser.add_argument("--device", default=None)
    parser.add_argument("--size2d", type=int, default=2048)
    parser.add_argument("--size3d", type=int, default=256)
    args = parser.parse_args()
    compute = create_context(args.device, quiet=True)
    print(f"device: {compute.name}; {args.steps} steps, best of {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(37)
    cases = [("2-D 5-point", HEAT_2D, 0.2, (args.size2d,) * 2),
             ("3-D 7-point", HEAT_3D, 0.1, (args.size3d,) * 3)]
    for title, text, k, shape in cases:
        stencil = Stencil(text, params={"k": k})
        u0 = rng.uniform(-1, 1, shape).astype(args.dtype)
        want = stencil.reference(u0, args.steps)
        best, got = min(numpy_seconds(u0, args.steps, k) for _ in range(args.rounds))
        assert np.array_equal(got, want), "NumPy slicing differs from the reference"
        per_step = best / args.steps
        print(f"{title} {'x'.join(map(str, shape))} {args.dtype}:")
        print(f"  numpy slicing   {per_step * 1e3:9.2f} ms/step")
        for kernel in args.kernels.split(","):
            runs = [kernel_seconds(compute, stencil, u0, args.steps, kernel)
                    for _ in range(args.rounds)]
            seconds, result, config = min(runs, key=lambda run: run[0])
            exact = "bit-exact" if np.array_equal(result, want) else "DIFFERS"
            ms = seconds / args.steps * 1e3
            print(f"  {kernel:15s} {ms:9.2f} ms/step  {per_step * 1e3 / ms:5.2f}x numpy  "
                  f"{exact}  {config}")


if __name__ == "__main__":
    main()
