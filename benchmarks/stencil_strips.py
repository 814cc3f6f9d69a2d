"""What an overlapped 3-D stencil rank's strip costs per step with each kernel configuration,
beside its interior's and the whole grid's time per step: the 7-point heat stencil (float32),
planes of SIZE x SIZE, one strip as a rank runs it (r S owned planes between r S ghost
planes on each side, its launches writing the planes the period needs:
oclsci.stencil.overlap). One process, one device, no MPI:

    OCLSCI_TUNE_CACHE=off python3 benchmarks/stencil_strips.py [--size 512] [--period S]
                                                               [--ranks 2] [--limit 40]

(``--size 24 --limit 3`` checks it on a CPU.) The period defaults to one launch of what
``auto`` runs on the whole grid. Lines: the configuration ``auto`` gives the strips (what a
rank runs: one segment), then the tuning space of ``column`` and ``stream`` whose steps per
launch divide the period and ``step``'s configurations, fastest first; each time is the host
clock over periods of launches (oclsci.mpi.slabplan.strip_step_us), as the measured exchange
plan times strips.
"""

from __future__ import annotations

import argparse

import numpy as np

from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil
from oclsci.stencil.kernels import StencilConfig, choose, configurations
from oclsci.stencil.solver import NeededLayers, stencil_geometry
from oclsci.stencil.tuner import candidates, kernel_rate, sample_problem, strip_us

HEAT = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
        " + u[0, 0, 1] - 6 * u)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--period", type=int, default=None)
    parser.add_argument("--ranks", type=int, default=2, help="the interior's share: a slab "
                        "of SIZE planes less a strip per neighbour (a middle rank's 2 if > 2)")
    parser.add_argument("--limit", type=int, default=40, help="configurations of the space")
    args = parser.parse_args()
    compute = create_context()
    dtype, n, radius = np.dtype(np.float32), args.size, 1
    stencil = Stencil(HEAT, params={"k": 0.1})
    skeleton = sample_problem(stencil, (8, 8, 8), dtype)
    whole_config = choose(compute, "auto", stencil_geometry(skeleton.expression, (n, n, n),
                                                            dtype), skeleton.expression,
                          dtype)[0]
    period = args.period or whole_config.steps_per_launch
    strip_shape = (3 * radius * period, n, n)
    geo = stencil_geometry(skeleton.expression, strip_shape, dtype)
    needed = NeededLayers(radius * period, 2 * radius * period, period)
    strips = 1 if args.ranks <= 2 else 2
    interior_planes = n - strips * radius * period
    interior_config = choose(compute, "auto", stencil_geometry(
        skeleton.expression, (interior_planes, n, n), dtype), skeleton.expression, dtype)[0]
    whole = n ** 3 / kernel_rate(compute, skeleton, whole_config, (n, n, n)) * 1e6
    interior = interior_planes * n * n / kernel_rate(compute, skeleton, interior_config,
                                                     (interior_planes, n, n)) * 1e6
    print(f"{compute.device.name}: 3-D 7-point heat, {n}^3 float32 a rank, period {period}, "
          f"{strips} strip(s) of {strip_shape[0]} planes (writing {needed.first}.."
          f"{needed.stop - 1})")
    print(f"whole {n}^3: {whole:8.1f} us/step  {whole_config.describe()}")
    print(f"interior {interior_planes} planes: {interior:8.1f} us/step  "
          f"{interior_config.describe()}")
    auto = [StencilConfig(c.name, {**c.params, "seg": strip_shape[0]}) if "seg" in c.params
            else c for c in choose(compute, "auto", geo, skeleton.expression, dtype)]
    space = [config for config in candidates(compute.facts.kernel_facts(), geo,
                                             ["column", "stream"])
             if period % config.steps_per_launch == 0][:args.limit]
    space += configurations(compute.facts.kernel_facts(), "step", geo)
    timed = []
    for config in [auto[0]] + [c for c in space if c != auto[0]]:
        try:
            us = strip_us(compute, skeleton, [config], strip_shape, needed)
        except Exception as error:  # a configuration the device refuses: say so, go on
            print(f"  refused {config.describe()}: {str(error).splitlines()[0]}")
            continue
        if config == auto[0]:
            step = interior + strips * us
            print(f"strip, auto: {us:8.1f} us/step  {config.describe()}")
            print(f"a rank's step, interior and strips one after the other: {step:.1f} us "
                  f"(weak scaling at most {100 * whole / step:.1f}%)")
        timed.append((us, config))
    print("fastest strips:")
    for us, config in sorted(timed, key=lambda item: item[0])[:15]:
        print(f"  {us:8.1f} us/step  {config.describe()}")


if __name__ == "__main__":
    main()
