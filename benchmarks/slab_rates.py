"""How the ``streaming`` kernel's rate depends on the grid's height and the segment height:
the rate of one rank's slab (docs/mpi.md, "Four GPUs of one node"). One process, one device:

    OCLSCI_TUNE_CACHE=off python3 benchmarks/slab_rates.py [--shapes 16384x16384,4079x16384]
                                                          [--auto-only]
                                                          [--variant trim_fill=false]

For each shape: the configuration ``auto`` runs, then the same with other segment heights
(``seg_h``): powers of two and the heights that cut the grid into k equal segments. Each line
gives the work-groups of a launch, the waves they make on the device's compute units (the
spec's estimate of resident groups per unit) and the rate in G cell updates per second
(the tuner's timing: best of two runs of at least ``--seconds``). Each ``--variant`` adds a
line: auto's configuration with those parameter values (the spec's kinds: true/false).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from oclsci.jacobi.kernels import KERNELS, KernelConfig
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.specs.streaming import halos, resident_groups
from oclsci.jacobi.tuner import device_facts, time_per_step
from oclsci.runtime.device import create_context


def variant_params(kernel: str, text: str) -> dict:
    """``NAME=VALUE,..`` as values of the kinds ``kernel``'s parameters declare."""
    params = {param.name: param for param in KERNELS[kernel].params}
    pairs = (item.split("=", 1) for item in text.split(","))
    return {name: params[name].parse(value) for name, value in pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="16384x16384,8175x16384,4079x16384,4130x16384")
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--auto-only", action="store_true",
                        help="time only the configuration auto runs (and the variants)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE,..",
                        help="also time auto's configuration with these parameter values")
    args = parser.parse_args()
    compute = create_context()
    facts = device_facts(compute)
    print(f"{compute.device.name}: {facts['cus']} compute units")
    rng = np.random.default_rng(0)
    for text in args.shapes.split(","):
        m, n = (int(part) for part in text.split("x"))
        rhs = rng.random((m, n), dtype=np.float32)
        solver = JacobiSolver(compute, rhs, dtype=np.float32, kernel="auto")
        base = solver.config
        print(f"\n{m}x{n}: auto = {base.describe()}")
        seconds = time_per_step(solver, args.seconds)
        print(f"auto: {m * n / seconds / 1e9:7.1f} G cell/s", flush=True)
        for text in args.variant:
            changed = variant_params(base.name, text)
            solver.reconfigure(KernelConfig(base.name, dict(base.values(), **changed),
                                            base.local_size))
            seconds = time_per_step(solver, args.seconds)
            print(f"auto with {text}: {m * n / seconds / 1e9:7.1f} G cell/s", flush=True)
        if args.auto_only or base.name != "streaming":
            continue
        params = base.values()
        strips = math.ceil((n + 1) / halos(params)[1])
        per_cu = resident_groups(params, 4, facts)
        capacity = facts["cus"] * per_cu

        def waves(seg_h: int, m: int = m, strips: int = strips,
                  capacity: int = capacity) -> float:
            return strips * math.ceil(m / seg_h) / capacity
        # Powers of two, and the equal cuts that fill all but the last tenth of a wave.
        heights = {base.param("seg_h")} | {1 << k for k in range(6, 12)}
        heights |= {h for h in (math.ceil(m / k) for k in range(1, 129))
                    if waves(h) % 1 == 0 or waves(h) % 1 > 0.9}
        for seg_h in sorted(h for h in heights if 64 <= h <= min(m, 4096)):
            config = KernelConfig("streaming", dict(params, seg_h=seg_h), base.local_size)
            solver.reconfigure(config)
            seconds = time_per_step(solver, args.seconds)
            groups = strips * math.ceil(m / seg_h)
            mark = " (auto)" if seg_h == base.param("seg_h") else ""
            print(f"seg_h {seg_h:5d}: {groups:5d} groups, {waves(seg_h):5.2f} waves, "
                  f"{m * n / seconds / 1e9:7.1f} G cell/s{mark}", flush=True)
        del solver


if __name__ == "__main__":
    main()
