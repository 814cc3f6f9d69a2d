"""Where ``streaming`` overtakes ``temporal``: both kernels' defaults on square grids, in both
precisions, one process (the measurement behind ``auto``'s threshold, docs/performance.md).

Run with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout), the GPU first
in PYOPENCL_CTX:

    OCLSCI_TUNE_CACHE=off python3 benchmarks/gpu_streaming.py
    OCLSCI_TUNE_CACHE=off python3 benchmarks/gpu_streaming.py --sizes 16384 --sweep

Timing and checks are the tuner's (``oclsci.jacobi.tuning.search.tune`` with a given list of
configurations): each configuration's result after 75 steps is compared bit for bit with the
plain coalesced kernel's on the device, then it is timed, the fastest again for longer.
``--sweep`` adds, at each size, ``streaming`` configurations around the default.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from oclsci.jacobi.tuning import KernelConfig, device_default
from oclsci.jacobi.tuning.search import tune
from oclsci.runtime.device import create_context


def sweep() -> list[KernelConfig]:
    """``streaming`` shapes near the defaults: columns per work-item, work-group widths,
    steps per launch, segment heights, one or two rows between steps."""
    found = []
    for cols, local_w, steps, seg_h, skew in itertools.product(
            (2, 4), (64, 128, 256), (6, 8, 10, 12, 14, 16), (256, 384, 512), (1, 2)):
        if (skew + 2) * steps * cols > 160 or not 128 <= local_w * cols <= 512:
            continue
        found.append(KernelConfig("streaming", {"cols": cols, "local_w": local_w,
                                                "max_steps": steps, "seg_h": seg_h,
                                                "skew": skew}))
    return found


def grid_shape(text: str) -> tuple[int, int]:
    """``N`` or ``MxN`` as (rows, columns)."""
    rows, _, cols = text.partition("x")
    return int(rows), int(cols or rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=grid_shape,
                        default=[(s, s) for s in (1024, 1448, 2048, 2896, 4096, 8192, 16384)],
                        help="grids: N (N x N) or MxN")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--sweep", action="store_true", help="also time shapes near the "
                        "default (about 100 more configurations per size and dtype)")
    args = parser.parse_args()
    compute = create_context()
    print(f"device: {compute.device.name}; driver {compute.device.driver_version}")
    for dtype, shape in itertools.product((np.dtype(d) for d in args.dtypes), args.sizes):
        defaults = [device_default(compute, "temporal", dtype, shape),
                    device_default(compute, "streaming", dtype, shape)]
        configs = list(defaults)
        configs += [c for c in sweep() if args.sweep and c not in configs
                    and c.fits(compute, dtype)]
        report = tune(compute, shape=shape, dtype=dtype, budget=120.0, configs=configs,
                      finalists=len(configs) if not args.sweep else 8)
        print(f"{shape[0]}x{shape[1]} {dtype.name}:")
        fastest = sorted((t for t in report.trials if t.ok), key=lambda t: t.seconds_per_step)
        groups = [("defaults", [next(t for t in report.trials if t.config == config)
                                for config in defaults])]
        if args.sweep:
            groups.append(("fastest", fastest[:10]))
        for title, trials in groups:
            print(f" {title}:")
            for trial in trials:
                rate = (shape[0] * shape[1] / trial.seconds_per_step / 1e9 if trial.ok
                        else float("nan"))
                print(f"  {trial.config.describe()}: {trial.status}, "
                      f"{1e6 * trial.seconds_per_step:.2f} us per step, {rate:.1f} G cells/s")


if __name__ == "__main__":
    main()
