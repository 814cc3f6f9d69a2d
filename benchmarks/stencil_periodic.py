"""What periodic boundaries cost on a device: the same stencil with a fixed boundary value and
with ``boundary="periodic"`` (oclsci.stencil.periodic: ghost cells refreshed every S steps),
S one launch of the kernel (the default) and two, one process, ``--kernel auto``:

    OCLSCI_TUNE_CACHE=off python3 benchmarks/stencil_periodic.py [--size3d 512]
                                                                  [--size2d 16384] [--steps 600]
                                                                  [--parts]

(``--size3d 24 --size2d 64 --steps 12`` checks it on a CPU.) Cases: the 3-D 7-point heat
stencil (k = 0.1) on SIZE3D^3 and the seed's Jacobi as a stencil (a right-hand side b) on
SIZE2D^2, float32. Each line: microseconds per step (the host clock over STEPS steps that
follow STEPS others on the same grid, as the command's `per step` line) and the kernel; the
periodic runs' fields must be bit-identical whatever S (else the script exits 1).
``--parts`` adds, per case, a launch's time on the grid with its ghost cells and on the
plain grid, and a refresh's (its wrap launches, each also alone), over 100 repeats after
one.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil, periodic
from oclsci.stencil.runner import run_steps
from oclsci.stencil.solver import StencilSolver

HEAT = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
        " + u[0, 0, 1] - 6 * u)")
JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"


def timed(compute, stencil, u0, fields, steps, period=None) -> dict:
    """``us`` per step, the ``field`` after twice ``steps`` steps, the ``kernel``, and with
    periodic boundaries the ``period`` and the boundary's ``line``: a first run of ``steps``
    builds the kernels and touches the buffers, the next one on the same grid is timed."""
    problem = stencil.problem(u0, 2 * steps, fields=fields)
    if problem.periodic:
        halo = periodic.PeriodicGrid(compute, problem, period=period)
        solver, levels = halo.solver, halo
    else:
        solver = levels = StencilSolver(compute, problem)
        halo = None
    run_steps(solver, steps, halo=halo)
    compute.queue.finish()
    watch = compute.stopwatch()
    run_steps(solver, 2 * steps, halo=halo)
    seconds = watch.stop()
    return {"us": seconds / steps * 1e6, "field": levels.read(),
            "kernel": solver.config.describe(),
            "period": halo.steps_between_exchanges if halo else 0,
            "line": halo.describe() if halo else ""}


def parts(compute, stencil, u0, fields) -> None:
    """Print a launch's time with and without the ghost cells, and a refresh's."""
    def clock(action, repeats=100) -> float:
        action()
        compute.queue.finish()
        watch = compute.stopwatch()
        for _ in range(repeats):
            action()
        return watch.stop() / repeats * 1e6

    wrapped = stencil.problem(u0, 1, fields=fields)
    grid = periodic.PeriodicGrid(compute, wrapped)
    plain = StencilSolver(compute, dataclasses.replace(wrapped, periodic=False))
    steps = grid.solver.steps_per_launch
    print(f"  a launch ({steps} steps): with the ghost cells "
          f"{clock(lambda: grid.solver.advance(steps)):.1f} us, without "
          f"{clock(lambda: plain.advance(steps)):.1f} us")
    print(f"  a refresh: {clock(lambda: grid.exchange(grid.solver)):.1f} us; its launches "
          + ", ".join(f"{clock(launch.fast):.1f}" for launch in grid._refreshes) + " us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size3d", type=int, default=512)
    parser.add_argument("--size2d", type=int, default=16384)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--parts", action="store_true", help="time a launch and a refresh")
    args = parser.parse_args()
    compute = create_context()
    rng = np.random.default_rng(0)
    n3, n2 = args.size3d, args.size2d
    cases = [
        (f"3-D heat {n3}^3", HEAT, {"k": 0.1}, rng.random((n3, n3, n3), dtype=np.float32), {}),
        (f"2-D Jacobi {n2}^2", JACOBI, {}, rng.random((n2, n2), dtype=np.float32),
         {"b": rng.random((n2, n2), dtype=np.float32)}),
    ]
    print(f"{compute.device.name}: {args.steps} steps a run, float32, --kernel auto")
    same = True
    for name, text, params, u0, fields in cases:
        fixed = timed(compute, Stencil(text, params=params, fields=list(fields)), u0, fields,
                      args.steps)
        print(f"{name}, boundary 0: {fixed['us']:9.2f} us/step  {fixed['kernel']}")
        wrapped = Stencil(text, params=params, fields=list(fields), boundary="periodic")
        first = timed(compute, wrapped, u0, fields, args.steps)  # S: one launch
        second = timed(compute, wrapped, u0, fields, args.steps, 2 * first["period"])
        for run, words in ((first, "one launch, the default"), (second, "two launches")):
            print(f"{name}, periodic, S = {words}: {run['us']:9.2f} us/step "
                  f"({run['us'] / fixed['us']:.3f}x)  {run['line']}")
        same &= bool(np.array_equal(first["field"], second["field"]))
        if args.parts:
            parts(compute, wrapped, u0, fields)
    print("periodic fields bit-identical whatever S:", same)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
