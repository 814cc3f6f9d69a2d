"""User stencils on CPU OpenCL devices, side by side with NumPy slicing and Devito, one run.

    python benchmarks/stencil_cpu.py [--steps 20] [--rounds 2] [--dtype float32]
                                     [--kernels auto] [--devices SPEC[,SPEC...]]
                                     [--size2d 2048] [--size3d 256] [--threads 2]
                                     [--require-devito]

Times, on the same grids (the 2-D 5-point and 3-D 7-point heat updates), each contender in
turn, round after round (round 1: all of them, round 2: all again, ...), and prints
milliseconds per step (best and median round), the speed-up over NumPy and over Devito (their
best time over the contender's), and the load average, since other work on the machine shows
in CPU timings:

- NumPy slicing: the update on a padded array, the operations in the stencil's order
  (one thread).
- Devito (when importable; ``--require-devito`` makes its absence an error): the same update
  as a Devito ``Operator`` in C with OpenMP (``DEVITO_LANGUAGE=openmp``, ``--threads``
  threads), compiled and run once outside the timing, timed around ``op.apply``. Its grid is
  the padded one (n + 2 cells a side) with a ring of zeros that it never writes (the equation
  updates ``grid.interior`` only), so that cells beyond the grid read 0 as in oclsci; the
  equation is ``u.forward = u + k * (sum of the neighbours - 4 u)`` (``- 6 u`` in 3-D).
  Devito rearranges the arithmetic (``(1 - 4k) u + k * sum``, in its own order, with
  ``-ffast-math``), so its result is compared with NumPy's by the largest absolute difference.
- oclsci: ``StencilSolver`` with each of ``--kernels`` (``auto`` is what ``Stencil.run`` takes;
  a tuned configuration in the tuning cache counts: set ``OCLSCI_TUNE_CACHE=off`` for the
  defaults) on each of ``--devices`` (for example ``portable,intel``: PoCL and Intel's
  runtime), built and warmed up outside the timing; its result must equal
  ``Stencil.reference`` bit for bit.

Run it with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout); Devito 4.8
(``pip install 'devito==4.8.*'``) needs a C compiler.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
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


def numpy_contender(u0: np.ndarray, steps: int, k: float):
    """NumPy slicing: a function timing one run (padded ping-pong arrays made outside)."""
    dtype = u0.dtype.type
    step, constant = (numpy_step_2d, dtype(4)) if u0.ndim == 2 else (numpy_step_3d, dtype(6))

    def run() -> tuple[float, np.ndarray]:
        u = np.pad(u0, 1)
        new = u.copy()
        start = time.perf_counter()
        for _ in range(steps):
            step(new, u, dtype(k), constant)
            u, new = new, u
        return time.perf_counter() - start, u[(slice(1, -1),) * u0.ndim].copy()
    return run


def load_devito(threads: int, required: bool):
    """The ``devito`` module set for C + OpenMP on ``threads`` threads, or None (with a note)
    when it is not installed and not ``required``."""
    os.environ["DEVITO_LANGUAGE"] = "openmp"
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("DEVITO_LOGGING", "WARNING")
    try:
        import devito
    except ImportError:
        if required:
            raise
        print("devito: not importable, left out (pip install 'devito==4.8.*')")
        return None
    return devito


def devito_contender(devito, u0: np.ndarray, steps: int, k: float, threads: int):
    """Devito: the update as an Operator on the grid padded with a ring of zeros, compiled
    and run once here; returns a function timing one run."""
    grid = devito.Grid(shape=tuple(s + 2 for s in u0.shape), dtype=u0.dtype.type)
    u = devito.TimeFunction(name="u", grid=grid, time_order=1, space_order=1)
    t, axes = grid.stepping_dim, grid.dimensions
    neighbours = 0
    for axis in axes:
        for side in (-1, 1):
            neighbours += u[(t, *(a + side if a is axis else a for a in axes))]
    update = u + float(u0.dtype.type(k)) * (neighbours - 2 * u0.ndim * u)
    op = devito.Operator([devito.Eq(u.forward, update, subdomain=grid.interior)])
    interior = (slice(1, -1),) * u0.ndim

    def run(count: int = steps) -> tuple[float, np.ndarray]:
        u.data[:] = 0
        u.data[0][interior] = u0
        start = time.perf_counter()
        op.apply(time_m=0, time_M=count - 1, nthreads=threads)
        return time.perf_counter() - start, np.array(u.data[count % 2][interior])
    run(2)  # compile, load, allocate
    return run


def oclsci_contender(compute, stencil: Stencil, u0: np.ndarray, steps: int, kernel: str):
    """oclsci: ``kernel`` with its defaults for the device, built and warmed up here;
    returns a function timing one run (and naming the configuration)."""
    problem = stencil.problem(u0, steps)
    warm = StencilSolver(compute, problem, kernel=kernel)
    warm.advance(2 * warm.steps_per_launch + 1)
    compute.queue.finish()

    def run() -> tuple[float, np.ndarray]:
        solver = StencilSolver(compute, problem, kernel=kernel)
        compute.queue.finish()
        start = time.perf_counter()
        solver.advance(steps)
        compute.queue.finish()
        run.config = solver.config.describe()
        return time.perf_counter() - start, solver.read()
    run.config = warm.config.describe()
    return run


def contenders(args, case, devito, computes) -> list[tuple[str, object]]:
    """(label, timing function) of every contender for one case, all built and warmed up."""
    _, text, k, u0 = case
    found = [("numpy slicing", numpy_contender(u0, args.steps, k))]
    if devito is not None:
        found.append((f"devito {args.threads} threads",
                      devito_contender(devito, u0, args.steps, k, args.threads)))
    stencil = Stencil(text, params={"k": k})
    for spec, compute in computes:
        for kernel in args.kernels.split(","):
            found.append((f"oclsci {kernel} [{spec}]",
                          oclsci_contender(compute, stencil, u0, args.steps, kernel)))
    return found


def check(label: str, result: np.ndarray, want: np.ndarray) -> str:
    """Devito: the largest absolute difference from the reference; the others: bit-exact."""
    if label.startswith("devito"):
        return f"max |diff| {np.max(np.abs(result.astype(np.float64) - want)):.1e}"
    return "bit-exact" if np.array_equal(result, want) else "DIFFERS"


def measure(found, rounds: int, want: np.ndarray) -> dict[str, tuple[list[float], set[str]]]:
    """Every contender once per round, in turn; its seconds per round and its checks."""
    times = {label: ([], set()) for label, _ in found}
    for _ in range(rounds):
        for label, run in found:
            seconds, result = run()
            times[label][0].append(seconds)
            times[label][1].add(check(label, result, want))
    return times


def report(title: str, found, times, steps: int) -> None:
    """One line per contender: ms/step (best, median), speed-up over NumPy and Devito."""
    print(f"{title}:")
    print(f"  {'contender':28s} {'best':>9s} {'median':>9s}  {'vs numpy':>8s} {'vs devito':>9s}"
          f"  result")
    best = {label: min(seconds) / steps for label, (seconds, _) in times.items()}
    devito = next((label for label in best if label.startswith("devito")), None)
    for label, run in found:
        seconds, checks = times[label]
        ms, median = best[label] * 1e3, statistics.median(seconds) / steps * 1e3
        versus = f"{best[devito] / best[label]:8.2f}x" if devito else f"{'-':>9s}"
        print(f"  {label:28s} {ms:9.3f} {median:9.3f}  {best['numpy slicing'] / best[label]:7.2f}x"
              f" {versus}  {', '.join(sorted(checks))}  {getattr(run, 'config', '')}".rstrip())


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--kernels", default="auto", help="comma-separated, e.g. auto,step")
    parser.add_argument("--devices", default=None,
                        help="comma-separated device SPECs, e.g. portable,intel")
    parser.add_argument("--size2d", type=int, default=2048)
    parser.add_argument("--size3d", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2, help="Devito's OpenMP threads")
    parser.add_argument("--require-devito", action="store_true")
    return parser.parse_args()


def describe_setup(args, devito, computes) -> None:
    """What runs: the steps, rounds, load average, devices and versions."""
    print(f"{args.steps} steps, {args.rounds} rounds (best and median shown); load average "
          f"{' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}")
    if devito is not None:
        print(f"devito {devito.__version__}: language {devito.configuration['language']}, "
              f"compiler {devito.configuration['compiler'].cc} "
              f"{devito.configuration['compiler'].version}, {args.threads} threads")
    for spec, compute in computes:
        print(f"[{spec}] {compute.platform.name} {compute.platform.version}: {compute.name}, "
              f"driver {compute.device.driver_version}")


def main() -> None:
    args = parse_args()
    devito = load_devito(args.threads, args.require_devito)
    specs = args.devices.split(",") if args.devices else [None]
    computes = [(spec or "default", create_context(spec, quiet=True)) for spec in specs]
    describe_setup(args, devito, computes)
    rng = np.random.default_rng(37)
    for title, text, k, shape in [("2-D 5-point", HEAT_2D, 0.2, (args.size2d,) * 2),
                                  ("3-D 7-point", HEAT_3D, 0.1, (args.size3d,) * 3)]:
        u0 = rng.uniform(-1, 1, shape).astype(args.dtype)
        want = Stencil(text, params={"k": k}).reference(u0, args.steps)
        found = contenders(args, (title, text, k, u0), devito, computes)
        times = measure(found, args.rounds, want)
        report(f"{title} {'x'.join(map(str, shape))} {args.dtype}", found, times, args.steps)
        print(f"  load average now {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
