"""Time configurations of the 3-D 7-point heat stencil (float32) on one device, each with a
digest of its result and, on NVIDIA's driver, the registers and spills its build reports:

    OCLSCI_TUNE_CACHE=off python3 benchmarks/stencil_variants.py [--size 512] [--steps 300]
        [--repeats 3] [--tag NAME] [KERNEL[:NAME=VALUE,...] ...]

A line per configuration (``auto`` when none is given): the tag, us per step (best of the
repeats, each a fresh solver after a warm-up that builds every launch), G cell updates/s,
the first 12 hex digits of the result's SHA-1 (equal digests: equal bits), the configuration
and ptxas's report (``-cl-nv-verbose``). To compare two versions of a template, run the
script from each checkout with that checkout first on the path (``PYTHONPATH=.``), the same
configurations and ``--tag``s apart.
``--size 24 --steps 12 --repeats 1`` checks it on a CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import time
import warnings

import numpy as np
import pyopencl as cl

from oclsci.runtime import programs
from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil, StencilSolver
from oclsci.stencil.kernels import parse_param_values
from oclsci.stencil.solver import program

HEAT = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
        " + u[0, 0, 1] - 6 * u)")


def parse_variant(text: str) -> tuple[str, dict | None]:
    """``KERNEL:NAME=VALUE,...`` as the kernel and its parameters (None: its defaults)."""
    kernel, _, pairs = text.partition(":")
    if not pairs:
        return kernel, None
    return kernel, parse_param_values(kernel, dict(pair.split("=", 1)
                                                   for pair in pairs.split(",")))


def register_report(compute, solver: StencilSolver) -> str:
    """ptxas's lines on registers and spills for the solver's kernel (NVIDIA only)."""
    if "NVIDIA" not in compute.platform.name:
        return ""
    template, options, params = program(solver.problem, solver.dtype, solver.config)
    built = cl.Program(compute.context, programs.render(template, **params)).build(
        options=[*options, "-cl-nv-verbose"])
    log = built.get_build_info(compute.device, cl.program_build_info.LOG)
    return " | ".join(line.strip() for line in log.splitlines()
                      if "registers" in line or "spill" in line)


def best_seconds(make, steps: int, repeats: int) -> tuple[float, StencilSolver]:
    """Best wall time of ``steps`` steps over ``repeats`` fresh solvers; the last solver."""
    best, solver = float("inf"), None
    for _ in range(repeats):
        del solver
        solver = make()
        solver.compute.queue.finish()
        start = time.perf_counter()
        solver.advance(steps)
        solver.compute.queue.finish()
        best = min(best, time.perf_counter() - start)
    return best, solver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", default=["auto"])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tag", default="")
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore", cl.CompilerWarning)
    compute = create_context(args.device, quiet=True)
    u0 = np.random.default_rng(37).uniform(0, 1, (args.size,) * 3).astype(np.float32)
    problem = Stencil(HEAT, params={"k": 0.1}).problem(u0, args.steps)
    for text in args.variants:
        kernel, params = parse_variant(text)

        def make(kernel=kernel, params=params):
            return StencilSolver(compute, problem, kernel=kernel, kernel_params=params)
        warm = make()
        warm.advance(warm.steps_per_launch + args.steps % warm.steps_per_launch)
        warm.compute.queue.finish()
        registers = register_report(compute, warm)
        del warm
        seconds, solver = best_seconds(make, args.steps, args.repeats)
        digest = hashlib.sha1(solver.read().tobytes()).hexdigest()[:12]
        rate = args.size ** 3 * args.steps / seconds / 1e9
        print(f"{args.tag} {1e6 * seconds / args.steps:.2f} us/step {rate:.1f} G {digest} "
              f"{solver.config.describe()} {registers}".strip(), flush=True)


if __name__ == "__main__":
    main()
