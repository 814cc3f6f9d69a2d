"""User stencils on a GPU against their targets (issue 37), in one run, as a Markdown table.

Run with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout), the GPU first
in PYOPENCL_CTX or named with ``--device``:

    python3 benchmarks/gpu_stencil.py [--tune 20] [--json OUT.json]

1. The seed's Jacobi written as a stencil (``0.25 * (u[-1, 0] + ... - b)``, kernel ``auto``)
   beside ``oclsci jacobi --kernel auto`` on 16384^2 float32: the same steps from the same
   start must give the same bits; the target is >= 90% of Jacobi's speed.
2. The 3-D 7-point heat update on 512^3 float32 with each stencil kernel and ``auto``, against
   the one-step streaming bound (the device-to-device copy rate measured here, over 8 bytes
   per cell update: u read and written once) -- the target is >= 1.5x -- and against a
   hand-written CuPy RawKernel (built with ``--fmad=false``, so that it rounds as the
   expression says) and the same update written with CuPy array slicing, each checked bit for
   bit against oclsci's ``step`` (and ``step`` against NumPy for two steps). CuPy's rows are
   left out, with a note, where CuPy is missing.

``--variant column:prefetch=true,max_steps=3`` adds a row to the 3-D case: that kernel with
those parameters (the others at their defaults), timed the same way.

``--tune SECONDS`` first searches, for each grid, Jacobi's and the stencils' kernels
(``oclsci tune``) into a temporary tuning cache, so that both sides' ``auto`` run tuned
configurations; without it ``auto`` means whatever the tuning cache holds (run with
``OCLSCI_TUNE_CACHE=off`` for a fresh installation's defaults). The default run takes about a
minute on an H200, two more with ``--tune 20``. ``--quick`` (small grids, few steps) or
``--size2d``/``--size3d``/``--steps`` check the script anywhere, PoCL included.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings

import numpy as np
import pyopencl as cl

from oclsci.bench.runner import measure_copy_bandwidth
from oclsci.jacobi import tuner as jacobi_tuner
from oclsci.jacobi.runner import whole_grid_solver
from oclsci.kernelspec.search import save_report
from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil, StencilSolver
from oclsci.stencil import tuner as stencil_tuner
from oclsci.stencil.kernels import KERNELS, parse_param_values
from oclsci.stencil.solver import geometry

warnings.simplefilter("ignore", cl.CompilerWarning)

JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"
HEAT_3D = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
           " + u[0, 0, 1] - 6 * u)")
K = 0.1
BYTES_PER_UPDATE = 8  # the one-step streaming bound: u read and written once, float32
CUPY_HEAT = r'''
extern "C" __global__ void heat7(float* __restrict__ out, const float* __restrict__ in,
                                 const float k, const int nz, const int ny, const int nx) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  const long sy = nx + 2, sz = (long)(ny + 2) * (nx + 2);
  const long at = (z + 1) * sz + (y + 1) * sy + x + 1;
  const float c = in[at];
  out[at] = c + k * ((((((in[at - sz] + in[at + sz]) + in[at - sy]) + in[at + sy])
                       + in[at - 1]) + in[at + 1]) - 6.0f * c);
}
'''


def best_seconds(make, steps: int, repeats: int) -> tuple[float, np.ndarray, str]:
    """Best wall time of ``steps`` steps over ``repeats`` fresh oclsci solvers from ``make()``
    (after a warm-up that builds every launch), the last result and the configuration."""
    def finish(solver) -> None:  # every queue of a grid in bands (oclsci jacobi's)
        getattr(solver, "finish", solver.compute.queue.finish)()

    warm = make()
    warm.advance(warm.steps_per_launch + steps % warm.steps_per_launch)
    finish(warm)
    del warm
    best = float("inf")
    for _ in range(repeats):
        solver = make()
        finish(solver)
        start = time.perf_counter()
        solver.advance(steps)
        finish(solver)
        best = min(best, time.perf_counter() - start)
        result, config = solver.read(), solver.config.describe()
        del solver
    return best, result, config


def cupy_rows(u0: np.ndarray, steps: int, repeats: int) -> tuple[list, str | None]:
    """(name, seconds, result, how) for the RawKernel and slicing, or a note without CuPy."""
    try:
        import cupy as cp
    except ImportError:
        return [], "CuPy is not installed: its rows are left out"
    nz, ny, nx = u0.shape
    k, six = np.float32(K), np.float32(6)
    kernel = cp.RawKernel(CUPY_HEAT, "heat7", options=("--fmad=false",))
    block = (32, 8, 2)
    grid = tuple(-(-size // b) for size, b in zip((nx, ny, nz), block, strict=True))
    inner = (slice(1, -1),) * 3

    def raw(a, b):
        kernel(grid, block, (b, a, k, np.int32(nz), np.int32(ny), np.int32(nx)))

    def slicing(a, b):
        c = a[inner]
        b[inner] = c + k * ((((((a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1])
                                + a[1:-1, :-2, 1:-1]) + a[1:-1, 2:, 1:-1])
                              + a[1:-1, 1:-1, :-2]) + a[1:-1, 1:-1, 2:]) - six * c)

    rows = []
    for name, step, how in [("cupy-raw", raw, "CuPy RawKernel, blocks 32x8x2, --fmad=false"),
                            ("cupy-slicing", slicing, "CuPy array slicing")]:
        best = float("inf")
        for attempt in range(repeats + 1):  # the first builds
            a = cp.asarray(np.pad(u0, 1))
            b = a.copy()
            cp.cuda.Stream.null.synchronize()
            start = time.perf_counter()
            for _ in range(steps if attempt else 2):
                step(a, b)
                a, b = b, a
            cp.cuda.Stream.null.synchronize()
            if attempt:
                best = min(best, time.perf_counter() - start)
        rows.append((name, best, cp.asnumpy(a[inner]), how))
        del a, b
        cp.get_default_memory_pool().free_all_blocks()
    return rows, None


def tune_all(compute, jacobi: Stencil, heat: Stencil, rhs_shape, heat_shape, seconds: float):
    """Tune Jacobi's kernels and both stencils into the (temporary) tuning cache."""
    save_report(jacobi_tuner.tune(compute, rhs_shape, np.float32, budget=seconds))
    for stencil, shape in ((jacobi, rhs_shape), (heat, heat_shape)):
        save_report(stencil_tuner.tune(compute, stencil, shape, np.float32, budget=seconds))


def parse_variant(text: str) -> tuple[str, dict]:
    """``KERNEL:NAME=VALUE,...`` as the kernel and its parameters (through the CLI's parser)."""
    kernel, _, pairs = text.partition(":")
    texts = dict(pair.split("=", 1) for pair in pairs.split(",") if pair)
    return kernel, parse_param_values(kernel, texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--size2d", type=int, default=16384, help="Jacobi's grid side")
    parser.add_argument("--size3d", type=int, default=512, help="the 3-D heat grid's side")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tune", type=float, default=0.0, metavar="SECONDS",
                        help="tune each grid's kernels first, this long each (0: no)")
    parser.add_argument("--quick", action="store_true",
                        help="small grids and few steps (a check of the script)")
    parser.add_argument("--variant", action="append", default=[], metavar="KERNEL:NAME=VALUE,..",
                        help="an extra row of the 3-D case: a kernel with these parameters "
                             "(e.g. column:prefetch=true,max_steps=3; repeat for several)")
    parser.add_argument("--json", default=None, metavar="PATH")
    args = parser.parse_args()
    if args.quick:
        args.size2d, args.size3d, args.steps = 96, 24, 20
        args.tune = min(args.tune, 1.0)
    if args.tune > 0:
        os.environ["OCLSCI_TUNE_CACHE"] = os.path.join(tempfile.mkdtemp(), "tuning.json")
    compute = create_context(args.device, quiet=True)
    jacobi = Stencil(JACOBI, fields=["b"])
    heat = Stencil(HEAT_3D, params={"k": K})
    n, side, steps = args.size2d, args.size3d, args.steps
    if args.tune > 0:
        tune_all(compute, jacobi, heat, (n, n), (side,) * 3, args.tune)
    copy_rate = measure_copy_bandwidth(compute, quick=args.quick)["gb_per_s"] * 1e9
    rng = np.random.default_rng(37)
    lines = [f"## User stencils on {compute.name} ({compute.platform.name.strip()})", "",
             f"- device copy rate {copy_rate / 1e9:.0f} GB/s (read + written); "
             f"{steps} steps, best of {args.repeats}; tuning: "
             + (f"{args.tune:g} s per grid" if args.tune > 0 else "the cache as found"), ""]
    record: dict = {"device": compute.name, "copy_gb_per_s": copy_rate / 1e9, "steps": steps,
                    "rows": []}

    # 1. Jacobi as a stencil against oclsci jacobi's auto.
    rhs = rng.random((n, n), dtype=np.float32) - np.float32(0.5)
    problem = jacobi.problem(rhs, steps, fields={"b": rhs})
    j_time, j_result, j_config = best_seconds(
        lambda: whole_grid_solver(compute, rhs, kernel="auto", rhs_checked=True), steps,
        args.repeats)
    s_time, s_result, s_config = best_seconds(
        lambda: StencilSolver(compute, problem, kernel="auto"), steps, args.repeats)
    same = np.array_equal(j_result, s_result)
    del j_result, s_result
    lines += [f"### The seed's Jacobi, {n}x{n} float32", "",
              "| variant | configuration | ms/step | G cell updates/s | vs `oclsci jacobi` | "
              "same bits |", "|---|---|---|---|---|---|"]
    for name, seconds, config in [("oclsci jacobi --kernel auto", j_time, j_config),
                                  ("stencil (auto)", s_time, s_config)]:
        rate = n * n * steps / seconds
        lines.append(f"| {name} | `{config}` | {1e3 * seconds / steps:.4f} | {rate / 1e9:.1f} | "
                     f"{j_time / seconds:.0%} | {'yes' if same else '**NO**'} |")
        record["rows"].append({"case": "jacobi", "variant": name, "config": config,
                               "seconds": seconds, "same_bits": bool(same)})
    lines += ["", f"Target: the stencil at >= 90% of `oclsci jacobi`: "
              f"{'met' if j_time / s_time >= 0.9 and same else 'NOT met'} "
              f"({j_time / s_time:.0%}).", ""]

    # 2. 3-D 7-point heat: each kernel, the streaming bound, CuPy.
    u0 = rng.uniform(0, 1, (side,) * 3).astype(np.float32)
    problem = heat.problem(u0, steps)
    check = heat.problem(u0, 2)
    two = StencilSolver(compute, check, kernel="step")
    two.advance(2)
    step_exact = np.array_equal(two.read(), heat.reference(u0, 2))
    del two
    bound = copy_rate / BYTES_PER_UPDATE
    rows, reference = [], None
    geo = geometry(problem, np.dtype(np.float32))
    runs = [(k, None) for k, spec in KERNELS.items() if spec.handles(geo) is None]
    runs += [("auto", None)] + [parse_variant(text) for text in args.variant]
    for kernel, params in runs:
        seconds, result, config = best_seconds(
            lambda kernel=kernel, params=params: StencilSolver(
                compute, problem, kernel=kernel, kernel_params=params), steps, args.repeats)
        reference = result if reference is None else reference
        name = kernel if params is None else f"{kernel} (variant)"
        rows.append((name, seconds, np.array_equal(result, reference), f"`{config}`"))
        del result
    extra, note = cupy_rows(u0, steps, args.repeats)
    rows += [(name, seconds, np.array_equal(result, reference), how)
             for name, seconds, result, how in extra]
    cells = float(side) ** 3
    lines += [f"### 3-D 7-point heat, {side}^3 float32", "",
              f"One-step streaming bound: {bound / 1e9:.1f} G cell updates/s (copy rate / "
              f"{BYTES_PER_UPDATE} bytes). `step` equals NumPy after 2 steps: "
              f"{'yes' if step_exact else '**NO**'}.", "",
              "| variant | configuration | ms/step | G cell updates/s | x streaming bound | "
              "same bits as `step` |", "|---|---|---|---|---|---|"]
    for name, seconds, same, how in rows:
        rate = cells * steps / seconds
        lines.append(f"| {name} | {how} | {1e3 * seconds / steps:.4f} | {rate / 1e9:.1f} | "
                     f"{rate / bound:.2f}x | {'yes' if same else '**NO**'} |")
        record["rows"].append({"case": "heat3d", "variant": name, "config": how,
                               "seconds": seconds, "same_bits": bool(same)})
    auto = next(seconds for name, seconds, _, _ in rows if name == "auto")
    verdicts = [f">= 1.5x the bound: {'met' if cells * steps / auto >= 1.5 * bound else 'NOT met'}"]
    verdicts += [f"faster than {name}: {'met' if auto < seconds else 'NOT met'}"
                 for name, seconds, _, _ in extra]
    lines += ["", "Targets (`auto`): " + "; ".join(verdicts) + "."]
    if note:
        lines.append(f"\n{note}.")
    print("\n".join(lines))
    if args.json:
        record["markdown"] = "\n".join(lines)
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(record, stream, indent=1)


if __name__ == "__main__":
    main()
