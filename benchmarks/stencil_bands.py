"""A user stencil's grid in bands of rows (planes in 3-D) on queues of their own against the
whole grid on one queue (:mod:`oclsci.mpi.concurrent`, as ``oclsci jacobi`` runs its large
grids on GPUs): the rate of each band count, the bits compared. The stencil command does not
run bands yet; this measures what they would gain.

    OCLSCI_TUNE_CACHE=off python3 benchmarks/stencil_bands.py [--heat 512] [--jacobi 16384]
                                                              [--bands 3,4,6] [--steps 600]

Cases: the 3-D 7-point heat update on HEAT^3 and the seed's Jacobi as a stencil on JACOBI^2,
float32, ``--kernel auto``'s configuration for the whole grid in every band. Each line: us
per step (host clock around ``--steps`` steps after a warm-up launch, best of two) and
whether the field equals the whole grid's bit for bit.
"""

from __future__ import annotations

import argparse

import numpy as np
from queue_bands import seconds_per_step  # this folder's: the same timing as Jacobi's bands

from oclsci.mpi.concurrent import ConcurrentBands
from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil
from oclsci.stencil.overlap import StencilBands
from oclsci.stencil.solver import StencilSolver

HEAT = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] "
        "+ u[0, 0, 1] - 6 * u)")
JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"


def banded(compute, problem, config, bands: int) -> ConcurrentBands:
    """The problem's grid in ``bands`` bands, each running ``config``."""
    radius = problem.expression.radius
    grid = ConcurrentBands(compute, problem.shape[0], int(np.prod(problem.shape[1:])),
                           StencilBands(problem, config), bands=bands,
                           steps_per_launch=config.steps_per_launch, reach=radius, fixed=0,
                           ring=radius)
    return grid


def read(grid) -> np.ndarray:
    """The banded field: each band's own layers."""
    return np.concatenate([solver.read()[slab.first - slab.lo:slab.stop - slab.lo]
                           for slab, solver in zip(grid.decomposition.slabs, grid.solvers,
                                                   strict=True)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heat", type=int, default=512)
    parser.add_argument("--jacobi", type=int, default=16384)
    parser.add_argument("--bands", default="3,4,6")
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args()
    compute = create_context()
    rng = np.random.default_rng(0)
    cases = []
    if args.heat:
        u0 = rng.random((args.heat,) * 3, dtype=np.float32)
        cases.append((f"3-D heat {args.heat}^3", Stencil(HEAT, params={"k": 0.1}), u0, {}))
    if args.jacobi:
        b = rng.random((args.jacobi,) * 2, dtype=np.float32)
        cases.append((f"Jacobi as a stencil {args.jacobi}^2", Stencil(JACOBI, fields=["b"]), b,
                      {"b": b}))
    print(f"{compute.device.name}, float32, {args.steps} steps")
    for name, stencil, u0, fields in cases:
        problem = stencil.problem(u0, 1, fields=fields)
        whole = StencilSolver(compute, problem)
        base = seconds_per_step(whole, args.steps)
        want, config = whole.read(), whole.config
        del whole
        print(f"\n{name}: {config.describe()}")
        print(f"whole grid, one queue: {base * 1e6:8.1f} us/step")
        for bands in (int(part) for part in args.bands.split(",")):
            grid = banded(compute, problem, config, bands)
            seconds = seconds_per_step(grid, args.steps)
            same = np.array_equal(read(grid).view(np.uint8), want.view(np.uint8))
            del grid
            print(f"{bands} bands, {bands} queues: {seconds * 1e6:8.1f} us/step "
                  f"({base / seconds - 1:+.1%}), bit-identical: {same}", flush=True)


if __name__ == "__main__":
    main()
