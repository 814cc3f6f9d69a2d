"""Where ``streaming`` overtakes ``temporal``: both kernels' defaults on square grids, in both
precisions, one process (the measurement behind ``auto``'s threshold, docs/performance.md).

Run with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout), the GPU first
in PYOPENCL_CTX:

    OCLSCI_TUNE_CACHE=off python3 benchmarks/gpu_streaming.py
    OCLSCI_TUNE_CACHE=off python3 benchmarks/gpu_streaming.py --sizes 16384 --sweep

Timing and checks are the tuner's (``oclsci.jacobi.tuner.tune`` with a given list of
configurations): each configuration's result after 75 steps is compared bit for bit with the
plain coalesced kernel's on the device, then it is timed, the fastest again for longer.
``--sweep`` adds, at each size, ``streaming`` configurations around the default.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pyopencl as cl

from oclsci.jacobi.kernels import KernelConfig, device_default
from oclsci.jacobi.specs.streaming import STREAMING, check, halos, registers
from oclsci.jacobi.tuner import device_facts, predict_seconds_per_step, tune
from oclsci.runtime import programs
from oclsci.runtime.device import create_context

# The sweep's values of each parameter (``--only`` narrows them).
SWEEP = {"cols": (1, 2, 4), "local_w": (32, 64, 128, 256),
         "max_steps": (6, 8, 10, 11, 12, 14, 16), "seg_h": (256, 512), "skew": (1, 2),
         "rows": (1, 2, 3, 4), "rhs_in_regs": (False, True), "edge_levels": (1, 2, 4),
         "prefetch": (1, 2, 3, 4)}


def sweep(dtype: np.dtype, only: dict | None = None,
          max_registers: int = 200) -> list[KernelConfig]:
    """``streaming`` shapes around the defaults: columns and rows per work-item, work-group
    widths, steps per launch, segment heights, one or two rows between steps, B loaded or
    kept in registers, levels per local-memory access; strips of 128 to 512 columns whose
    tile is at least 60% of the strip, registers (the spec's estimate) within
    ``max_registers``."""
    values = dict(SWEEP, **(only or {}))
    found = []
    for combination in itertools.product(*values.values()):
        params = dict(zip(values, combination, strict=True))
        local_w, cols = params["local_w"], params["cols"]
        if check(params) or not 128 <= local_w * cols <= 512:
            continue
        if halos(params)[1] < 0.6 * local_w * cols:
            continue
        if registers(params, dtype.itemsize) <= max_registers:
            found.append(KernelConfig("streaming", params))
    return found


def register_report(compute, config: KernelConfig, dtype: np.dtype) -> str:
    """What NVIDIA's compiler says of the kernel's registers and spills (``-cl-nv-verbose``);
    empty on other platforms."""
    if "NVIDIA" not in compute.device.platform.name:
        return ""
    program = programs.build_program(compute, config.spec.template, ("-cl-nv-verbose",),
                                     **dict(config.template_params(), dtype=dtype))
    log = program.get_build_info(compute.device, cl.program_build_info.LOG)
    return "; ".join(line.split(":", 1)[-1].strip() for line in log.splitlines()
                     if "registers" in line or "spill" in line)


def narrowing(text: str) -> tuple[str, tuple]:
    """``KEY=V,V,...``: the sweep's values of parameter KEY (booleans: true/false or 1/0)."""
    key, _, values = text.partition("=")
    if key not in SWEEP:
        raise argparse.ArgumentTypeError(f"unknown parameter {key!r}: one of {', '.join(SWEEP)}")
    param = next(p for p in STREAMING.params if p.name == key)
    try:
        return key, tuple(param.parse(v) for v in values.split(","))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
    parser.add_argument("--sweep", action="store_true", help="also time shapes around the "
                        "default (thousands, the cost model's likeliest first: narrow them "
                        "with --only)")
    parser.add_argument("--only", action="append", type=narrowing, default=[],
                        metavar="KEY=V,V", help="the sweep's values of one parameter "
                        f"(repeatable; keys: {', '.join(SWEEP)})")
    parser.add_argument("--max-registers", type=int, default=200,
                        help="leave out shapes the spec estimates above this (default 200)")
    parser.add_argument("--budget", type=float, default=120.0,
                        help="seconds of tuning per size and dtype (default 120)")
    parser.add_argument("--registers", type=int, default=0, metavar="N",
                        help="print NVIDIA's register report of the N fastest")
    args = parser.parse_args()
    compute = create_context()
    print(f"device: {compute.device.name}; driver {compute.device.driver_version}")
    for dtype, shape in itertools.product((np.dtype(d) for d in args.dtypes), args.sizes):
        defaults = [device_default(compute, "temporal", dtype, shape),
                    device_default(compute, "streaming", dtype, shape)]
        configs = list(defaults)
        if args.sweep:
            # The cost model's order (the tuner's), in case the budget runs out.
            facts = device_facts(compute)
            shaped = sorted(sweep(dtype, dict(args.only), args.max_registers),
                            key=lambda c: predict_seconds_per_step(c, shape, dtype, facts))
            configs += [c for c in shaped if c not in configs and c.fits(compute, dtype)]
        report = tune(compute, shape=shape, dtype=dtype, budget=args.budget, configs=configs,
                      finalists=len(configs) if not args.sweep else 8)
        print(f"{shape[0]}x{shape[1]} {dtype.name}:")
        fastest = sorted((t for t in report.trials if t.ok), key=lambda t: t.seconds_per_step)
        groups = [("defaults", [next(t for t in report.trials if t.config == config)
                                for config in defaults])]
        if args.sweep:
            groups.append(("fastest", fastest[:10]))
            streaming = [t for t in fastest if t.config.name == "streaming"]
            for rows in sorted({t.config.params.get("rows", 1) for t in streaming}):
                with_rows = [t for t in streaming if t.config.params.get("rows", 1) == rows]
                groups.append((f"fastest streaming with rows={rows}", with_rows[:3]))
            untried = len(configs) - len(report.trials)
            wrong = [t for t in report.trials if not t.ok]
            print(f" {len(report.trials)} timed in {report.seconds:.0f} s, {untried} left "
                  f"untried; {len(wrong)} not ok" + "".join(f"\n  {t.config.describe()}: "
                                                          f"{t.status}" for t in wrong[:5]))
        for title, trials in groups:
            print(f" {title}:")
            for trial in trials:
                rate = (shape[0] * shape[1] / trial.seconds_per_step / 1e9 if trial.ok
                        else float("nan"))
                print(f"  {trial.config.describe()}: {trial.status}, "
                      f"{1e6 * trial.seconds_per_step:.2f} us per step, {rate:.1f} G cells/s")
        for trial in fastest[:args.registers]:
            print(f"  registers, {trial.config.describe()}: "
                  f"{register_report(compute, trial.config, dtype)}")


if __name__ == "__main__":
    main()
