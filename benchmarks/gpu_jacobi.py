"""Jacobi on one GPU, everything in one run: exactness, tuning, timings, anchors.

Run on the lent GPU machine (see /work/shared/gpu/README.md) as

    . .device/env.sh && python3 benchmarks/gpu_jacobi.py --out $OUT

It writes results.json, tuning.json (the tuning cache), log.txt and build logs under --out,
and ends with a summary table. Sections, each timed side by side in the same process:

1. device facts; device-to-device copy bandwidth (clEnqueueCopyBuffer, a float4 copy kernel,
   CuPy) and the launch cost of an empty kernel (PyOpenCL call vs ctypes, no event);
2. exactness: every kernel, several configurations, grids 1x1 .. 400x266, step counts that
   are not multiples of the steps per launch, float32 and float64, against NumPy;
3. tuning (oclsci.jacobi.tuning.search.tune) for 266x400 and 16384^2, float32 and float64;
4. the seed's case, 266x400 x 150000 steps: CuPy's raw kernel from the talk (the anchor),
   the talk's PyOpenCL loop (fewer steps, extrapolated), oclsci's seed kernel, oclsci's
   tuned kernel; results compared with NumPy's (precomputed on the CPU: .device/ref/);
5. 16384^2 x 1000 steps: the tuned coalesced (streaming) and temporal kernels against the
   12-bytes-per-cell streaming bound from the copy bandwidth measured in this run.

NumPy's 150000 steps take minutes: compute them once beforehand, where the checkout is, with
``python benchmarks/gpu_jacobi.py --make-references`` (writes .device/ref/, which the device
tool carries with ``carry [".whl", ".device"]``). ``--defaults`` skips tuning and the cache:
it times what ``--kernel auto`` runs on a fresh installation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pyopencl as cl  # noqa: E402

import oclsci  # noqa: E402
from oclsci.jacobi.picture import builtin_picture  # noqa: E402
from oclsci.jacobi.reference import jacobi_numpy, laplacian  # noqa: E402
from oclsci.jacobi.solver import JacobiSolver, run  # noqa: E402
from oclsci.jacobi.tuning import KernelConfig, cached_config, device_default  # noqa: E402
from oclsci.jacobi.tuning.search import _DeviceCompare, save_report, tune  # noqa: E402
from oclsci.runtime import programs  # noqa: E402
from oclsci.runtime.launch import Launch, raw_enqueue_enabled  # noqa: E402

warnings.simplefilter("ignore", cl.CompilerWarning)

T0 = time.perf_counter()
RESULTS: dict = {"sections": {}, "errors": {}}
OUT = Path(".")
LOG = None


def log(message: str) -> None:
    line = f"[{time.perf_counter() - T0:7.1f}s] {message}"
    print(line, flush=True)
    if LOG:
        LOG.write(line + "\n")
        LOG.flush()


def save() -> None:
    (OUT / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str))


def section(name: str, deadline: float):
    """Decorator: run a section unless past the deadline; record errors, never stop."""
    def wrap(function):
        def runner(*args, **kwargs):
            if time.perf_counter() - T0 > deadline:
                log(f"SKIPPED {name}: past {deadline:.0f} s")
                RESULTS["errors"][name] = "skipped (time)"
                return None
            log(f"== {name}")
            start = time.perf_counter()
            try:
                value = function(*args, **kwargs)
            except Exception as error:  # noqa: BLE001
                RESULTS["errors"][name] = traceback.format_exc()
                log(f"ERROR in {name}: {error!r}\n{traceback.format_exc()}")
                value = None
            RESULTS["sections"].setdefault(name, {})["seconds"] = time.perf_counter() - start
            save()
            return value
        return runner
    return wrap


def events_seconds(first, last) -> float:
    return (last.profile.end - first.profile.start) * 1e-9


# -- 1. device, bandwidth, launch cost ------------------------------------------------------

def device_facts(compute) -> dict:
    facts = compute.describe()
    try:
        facts["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
             "clocks.max.mem", "--format=csv,noheader"], capture_output=True, text=True,
            timeout=20).stdout.strip()
    except Exception as error:  # noqa: BLE001
        facts["nvidia_smi"] = repr(error)
    facts["raw_enqueue"] = raw_enqueue_enabled()
    facts["python"] = sys.version.split()[0]
    facts["numpy"] = np.__version__
    facts["pyopencl"] = cl.VERSION_TEXT
    return facts


COPY_KERNEL = """
__kernel void copy4(__global float4 *restrict dst, __global const float4 *restrict src)
{ const size_t i = get_global_id(0); dst[i] = src[i]; }
"""


def bandwidth(compute, gib: float = 1.0, repeats: int = 7) -> dict:
    ctx, queue = compute.context, compute.queue
    nbytes = int(gib * 2**30)
    src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1.5), 0, nbytes)
    cl.enqueue_fill_buffer(queue, dst, np.float32(0.0), 0, nbytes)
    times = []
    for _ in range(repeats + 1):
        event = cl.enqueue_copy(queue, dst, src)
        event.wait()
        times.append(events_seconds(event, event))
    copy_engine = 2 * nbytes / float(np.median(times[1:]))
    kernel = cl.Kernel(cl.Program(ctx, COPY_KERNEL).build(), "copy4")
    kernel.set_args(dst, src)
    times = []
    for _ in range(repeats + 1):
        event = cl.enqueue_nd_range_kernel(queue, kernel, (nbytes // 16,), (256,))
        event.wait()
        times.append(events_seconds(event, event))
    copy_kernel = 2 * nbytes / float(np.median(times[1:]))
    result = {"bytes": nbytes, "enqueue_copy_Bps": copy_engine, "copy_kernel_Bps": copy_kernel}
    try:
        import cupy as cp

        a = cp.ones(nbytes // 4, dtype=cp.float32)
        b = cp.empty_like(a)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(repeats + 1):
            start.record()
            cp.copyto(b, a)
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
        result["cupy_copy_Bps"] = 2 * nbytes / float(np.median(times[1:]))
        del a, b
        cp.get_default_memory_pool().free_all_blocks()
    except Exception as error:  # noqa: BLE001
        result["cupy_copy_error"] = repr(error)
    return result


def launch_cost(compute, launches: int = 20000) -> dict:
    ctx, queue = compute.context, compute.queue
    kernel = cl.Kernel(cl.Program(ctx, "__kernel void empty(__global float *x) { }").build(),
                       "empty")
    buffer = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
    kernel.set_args(buffer)
    launch = Launch(queue, kernel, (32,), (32,))
    result = {}
    for name, call in (("pyopencl_enqueue", launch.with_event), ("ctypes_no_event", launch.fast)):
        for _ in range(2):
            queue.finish()
            start = time.perf_counter()
            for _ in range(launches):
                call()
            queue.finish()
            result[name + "_us"] = 1e6 * (time.perf_counter() - start) / launches
    return result


# -- 2. exactness -------------------------------------------------------------------------------

def exactness_configs(compute) -> list[KernelConfig]:
    shape = (266, 400)
    configs = [KernelConfig("seed"),
               KernelConfig("coalesced", {"rows_per_item": 1, "vector": 1}, (32, 8)),
               KernelConfig("coalesced", {"rows_per_item": 3, "vector": 4}, (64, 4)),
               KernelConfig("coalesced", {"rows_per_item": 2, "vector": 2}, None),
               KernelConfig("temporal", {"rows": 4, "cols": 2, "local_w": 32, "local_h": 8,
                                         "max_steps": 6, "buffers": 2}),
               KernelConfig("temporal", {"rows": 2, "cols": 4, "local_w": 32, "local_h": 16,
                                         "max_steps": 12, "buffers": 1}),
               KernelConfig("temporal", {"rows": 8, "cols": 1, "local_w": 64, "local_h": 4,
                                         "max_steps": 5, "buffers": 2}),
               KernelConfig("bands", {"band_h": 16, "band_w": 0, "max_steps": 4,
                                      "workers": 64})]
    for name in ("coalesced", "blocked", "temporal"):
        for dtype in (np.float32, np.float64):
            for size in (shape, (16384, 16384)):
                config = device_default(compute, name, dtype, size)
                if config not in configs:
                    configs.append(config)
    return configs


def exactness(compute, extra: list[KernelConfig]) -> dict:
    rng = np.random.default_rng(7)
    configs = exactness_configs(compute) + [c for c in extra if c is not None]
    shapes = [(1, 1), (3, 1000), (1021, 37), (37, 1021), (266, 400)]
    steps_list = [1, 7, 37]
    checked, failures = 0, []
    for dtype in (np.float32, np.float64):
        # Compile in threads first (NVIDIA's compiler is slow, one at a time).
        from concurrent.futures import ThreadPoolExecutor

        usable = [c for c in configs if c.fits(compute, dtype)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda c, d=dtype: programs.build_program(
                compute, f"jacobi/{c.name}", (), **dict(c.template_params(), dtype=d)),
                usable))
        for shape in shapes:
            rhs = (rng.standard_normal(shape) * 100).astype(dtype)
            references = {s: jacobi_numpy(rhs, s, dtype=dtype) for s in steps_list}
            for config in usable:
                solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
                done = 0
                for steps in steps_list:
                    solver.advance(steps - done)
                    done = steps
                    got = solver.read()
                    checked += 1
                    if not np.array_equal(got, references[steps]):
                        bad = int(np.count_nonzero(got != references[steps]))
                        failures.append(f"{config.describe()} {np.dtype(dtype).name} "
                                        f"{shape} {steps} steps: {bad} cells differ")
    log(f"exactness: {checked} comparisons, {len(failures)} failures")
    for failure in failures[:20]:
        log("  MISMATCH " + failure)
    return {"comparisons": checked, "failures": failures,
            "configs": [c.describe() for c in configs]}


# -- 3. tuning ----------------------------------------------------------------------------------

def tuning(compute, shape, dtype, budget, kernels) -> dict:
    report = tune(compute, shape, dtype, budget=budget, kernels=kernels,
                  log=lambda message: None)
    path = save_report(report)
    trials = sorted(report.trials, key=lambda t: t.seconds_per_step)
    log(f"tuned {shape} {np.dtype(dtype).name}: {len(report.trials)} trials in "
        f"{report.seconds:.1f} s; saved to {path}")
    for name, trial in report.best_by_kernel().items():
        log(f"  best {name}: {trial.config.describe()} {1e6 * trial.seconds_per_step:.3f} us/step")
    wrong = [t for t in report.trials if t.status.startswith("WRONG")]
    failed = [t for t in report.trials if t.status.startswith("failed")]
    for t in wrong[:5] + failed[:5]:
        log(f"  {t.status}: {t.config.describe()}")
    return {"key": report.key, "seconds": report.seconds,
            "best": {name: {"config": t.config.to_json(), "us_per_step": 1e6 * t.seconds_per_step}
                     for name, t in report.best_by_kernel().items()},
            "trials": [{"config": t.config.describe(), "us_per_step": 1e6 * t.seconds_per_step,
                        "predicted_us": 1e6 * t.predicted, "status": t.status} for t in trials]}


# -- 4. the seed's case -------------------------------------------------------------------------

CUPY_SEED = r'''
extern "C" __global__ void laplace_gpu(float *newBuff, float *buff, const int *blur, int m, int n) {
  int i = threadIdx.x+ blockIdx.x * blockDim.x;
  int j = threadIdx.y+ blockIdx.y * blockDim.y;
  if ((i >= 1) && (i < (m+1)) &&
      (j >= 1) && (j < (n+1))) {
      newBuff[i * (n+2) + j ] = 0.25 *( buff[(i-1) * (n+2) + j   ] + buff[(i+1) * (n+2) + j] +
                                        buff[i     * (n+2) + j-1 ] + buff[i   * (n+2) + j+1]
                                      - blur[(i-1) *   (n) + j-1]);
  }
}
'''


def cupy_seed(rhs: np.ndarray, iterations: int) -> tuple[float, float, np.ndarray]:
    """The talk's "GPU brut" code: returns (event seconds, wall seconds, X interior)."""
    import cupy as cp

    kern = cp.RawKernel(CUPY_SEED, "laplace_gpu")
    blur = rhs
    m, n = blur.shape
    x = np.zeros((m + 2, n + 2), dtype="float32")
    x[1:-1, 1:-1] = np.float32(blur)
    x_d, x2_d = map(cp.asarray, [x, x])
    blur_d = cp.asarray(blur, dtype="int32")
    blocks = 32, 32
    grid = tuple((v[0] + 2 - 1) // v[1] + 1 for v in zip((m, n), blocks))  # noqa: B905
    for _ in range(10):  # warm-up (module load), then restart from X0
        kern(grid, blocks, (x2_d, x_d, blur_d, m, n))
    x_d, x2_d = map(cp.asarray, [x, x])
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    wall = time.perf_counter()
    start.record()
    for _ in range(iterations):
        kern(grid, blocks, (x2_d, x_d, blur_d, m, n))
        x_d, x2_d = x2_d, x_d
    end.record()
    end.synchronize()
    wall = time.perf_counter() - wall
    seconds = cp.cuda.get_elapsed_time(start, end) * 1e-3
    return seconds, wall, cp.asnumpy(x_d)[1:-1, 1:-1]


def seed_loop(compute, rhs: np.ndarray, iterations: int) -> float:
    """The talk's PyOpenCL loop as written (kernel retrieved at every step): wall seconds."""
    m, n = rhs.shape
    ctx, queue = compute.context, compute.queue
    prg = cl.Program(ctx, """
__kernel void incr(__global float *newBuff, __global const float *buff,
                   __global const float *blur, int m, int n)
{
  int i = get_global_id(0); int j = get_global_id(1);
  if ((i >= 1) && (i < (m+1)) && (j >= 1) && (j < (n+1))) {
    newBuff[i * (n+2) + j ] = 0.25 *( buff[(i-1) * (n+2) + j  ] + buff[(i+1) * (n+2) +     j] +
                                      buff[i     * (n+2) + j-1] + buff[i   * (n+2) + j+    1]
                                    - blur[i     * (n+2) + j  ]);
  }
}""").build()
    x = np.zeros((m + 2, n + 2), dtype="float32")
    x[1:-1, 1:-1] = rhs
    mf = cl.mem_flags
    x_d, x2_d, b_d = (cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x)
                      for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prg.incr(queue, x.shape, None, x2_d, x_d, b_d, np.int32(m), np.int32(n))
        queue.finish()
        start = time.perf_counter()
        for _ in range(iterations):
            prg.incr(queue, x.shape, None, x2_d, x_d, b_d, np.int32(m), np.int32(n))
            x_d, x2_d = x2_d, x_d
        queue.finish()
    return time.perf_counter() - start


def tune_cli(size: str, dtype: str, budget: float, kernels: tuple[str, ...]) -> dict:
    """`oclsci tune` itself, as a user runs it (the cache is $OCLSCI_TUNE_CACHE)."""
    command = [sys.executable, "-m", "oclsci", "tune", "--size", size, "--dtype", dtype,
               "--budget", str(budget)] + [f"--kernel={k}" for k in kernels]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=budget * 4 + 120)
    log("$ oclsci tune " + " ".join(command[4:]))
    for line in result.stdout.strip().splitlines():
        log("  " + line)
    if result.returncode:
        log("  stderr: " + result.stderr[-2000:])
    return {"command": " ".join(["oclsci"] + command[3:]), "returncode": result.returncode,
            "stdout": result.stdout, "seconds": time.perf_counter() - start}


def queue_experiment(compute, iterations: int) -> dict:
    """The tuned small-grid kernel on a queue without profiling, beside the usual one."""
    rhs = laplacian(builtin_picture()).astype(np.float32)
    config = cached_config(compute, np.float32, rhs.shape) or device_default(
        compute, "temporal", np.float32, rhs.shape)
    out = {"config": config.describe()}
    profiling_queue = compute.queue
    try:
        for label, queue in (("profiling", profiling_queue),
                             ("plain", cl.CommandQueue(compute.context)),
                             ("profiling_again", profiling_queue)):
            compute.queue = queue
            solver = JacobiSolver(compute, rhs, config=config)
            solver.advance(iterations // 10)
            queue.finish()
            walls = []
            for _ in range(3):
                start = time.perf_counter()
                solver.advance(iterations)
                queue.finish()
                walls.append(time.perf_counter() - start)
            out[label + "_wall_s"] = min(walls)
            log(f"queue experiment {label}: {min(walls):.4f} s for {iterations} steps")
    finally:
        compute.queue = profiling_queue
    return out


def timed_run(compute, rhs, dtype, config, iterations, repeats=3) -> dict:
    """Fresh solver, `run` for the iterations, best of repeats; result of the last run."""
    walls, devices = [], []
    x = None
    for _ in range(repeats):
        solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
        solver.advance(2 * solver.steps_per_launch)  # warm-up launches, then restart
        compute.queue.finish()
        solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
        compute.queue.finish()
        result = run(solver, iterations)
        walls.append(result.wall_seconds)
        devices.append(result.device_seconds)
        x = solver
    return {"config": config.describe(), "wall_s": min(walls), "device_s": min(devices),
            "walls": walls, "solver": x}


def seed_case(compute, iterations: int) -> dict:
    ref_dir = HERE.parent / ".device" / "ref"
    rhs64 = laplacian(builtin_picture())
    out: dict = {"shape": list(rhs64.shape), "iterations": iterations}
    # The anchor: CuPy's raw kernel from the talk.
    try:
        seconds, wall, x = cupy_seed(rhs64, iterations)
        ref = _reference(ref_dir, np.float32, iterations, rhs64)
        out["cupy_raw"] = {"event_s": seconds, "wall_s": wall,
                           "equal_numpy": None if ref is None else bool(np.array_equal(x, ref))}
        log(f"CuPy raw (talk's kernel): {seconds:.3f} s (events), {wall:.3f} s wall, "
            f"equal to NumPy: {out['cupy_raw']['equal_numpy']}")
    except Exception as error:  # noqa: BLE001
        out["cupy_raw"] = {"error": repr(error)}
        log(f"CuPy raw failed: {error!r}")
    loop_steps = 20000
    wall = seed_loop(compute, rhs64.astype(np.float32), loop_steps)
    out["seed_pyopencl_loop"] = {"steps": loop_steps, "wall_s": wall,
                                 "extrapolated_s": wall * iterations / loop_steps}
    log(f"talk's PyOpenCL loop: {wall:.3f} s for {loop_steps} steps -> "
        f"{wall * iterations / loop_steps:.2f} s for {iterations}")
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        rhs = rhs64.astype(dtype)
        ref = _reference(ref_dir, dtype, iterations, rhs64)
        configs = {"tuned": cached_config(compute, dtype, rhs.shape),
                   "temporal_default": device_default(compute, "temporal", dtype, rhs.shape)}
        if dtype == np.float32:
            configs["seed_kernel"] = KernelConfig("seed")
            configs["coalesced_tuned"] = cached_config(compute, dtype, rhs.shape, "coalesced")
        for label, config in configs.items():
            if config is None:
                continue
            repeats = 3 if config.steps_per_launch > 1 else 1
            timing = timed_run(compute, rhs, dtype, config, iterations, repeats)
            solver = timing.pop("solver")
            x = solver.read()
            timing["equal_numpy"] = None if ref is None else bool(np.array_equal(x, ref))
            out[f"{label}_{name}"] = timing
            log(f"{label} {name}: {timing['config']}: {timing['wall_s']:.4f} s wall, "
                f"{timing['device_s']:.4f} s events; equal to NumPy: {timing['equal_numpy']}")
    return out


def make_references(iterations: int) -> None:
    """NumPy's result of the seed's case, float32 and float64, into .device/ref/."""
    ref_dir = HERE.parent / ".device" / "ref"
    ref_dir.mkdir(parents=True, exist_ok=True)
    rhs64 = laplacian(builtin_picture())
    for dtype in (np.float32, np.float64):
        start = time.perf_counter()
        x = jacobi_numpy(rhs64.astype(dtype), iterations, dtype=dtype)
        path = ref_dir / f"jacobi_266x400_{iterations}_{np.dtype(dtype).name}.npy"
        np.save(path, x)
        print(f"{path}: {time.perf_counter() - start:.1f} s")


def _reference(ref_dir: Path, dtype, iterations: int, rhs64: np.ndarray):
    path = ref_dir / f"jacobi_266x400_{iterations}_{np.dtype(dtype).name}.npy"
    if path.is_file():
        return np.load(path)
    if iterations <= 20000:
        return jacobi_numpy(rhs64.astype(dtype), iterations, dtype=dtype)
    log(f"no NumPy reference {path}; results unchecked")
    return None


# -- 5. large grids -----------------------------------------------------------------------------

def large_case(compute, size: int, iterations: int, bw: dict) -> dict:
    out: dict = {"size": size, "iterations": iterations}
    rng = np.random.default_rng(size)
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        rhs = (rng.random((size, size), dtype=np.float32) - np.float32(0.5)).astype(dtype)
        configs = {"coalesced": cached_config(compute, dtype, rhs.shape, "coalesced")
                   or device_default(compute, "coalesced", dtype, rhs.shape),
                   "temporal": cached_config(compute, dtype, rhs.shape, "temporal")
                   or device_default(compute, "temporal", dtype, rhs.shape)}
        for label in ("coalesced", "temporal"):
            default = device_default(compute, label, dtype, rhs.shape)
            if default != configs[label]:
                configs[label + "_default"] = default
        solvers = {}
        for label, config in configs.items():
            solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
            solver.advance(solver.steps_per_launch * 2)  # warm-up
            walls, devices = [], []
            for _ in range(2):
                # Back to X0 (B inside the zero ring: the padded rhs buffer itself).
                for buffer in solver.x_buffers:
                    cl.enqueue_copy(compute.queue, buffer, solver.rhs_buffer)
                solver.current, solver.iteration = 0, 0
                compute.queue.finish()
                result = run(solver, iterations)
                walls.append(result.wall_seconds)
                devices.append(result.device_seconds)
            cells = size * size * iterations
            best = min(devices)
            rate = cells / best
            bound = bw["enqueue_copy_Bps"] / (3 * np.dtype(dtype).itemsize)
            entry = {"config": config.describe(), "device_s": best, "wall_s": min(walls),
                     "cell_updates_per_s": rate, "streaming_bound": bound,
                     "fraction_of_bound": rate / bound,
                     "bound_from_copy_kernel":
                         bw["copy_kernel_Bps"] / (3 * np.dtype(dtype).itemsize)}
            out[f"{label}_{name}"] = entry
            solvers[label] = solver
            log(f"{size}^2 {name} {label}: {config.describe()}: {best:.4f} s events, "
                f"{rate / 1e9:.1f} G cell updates/s = {rate / bound:.2f} x streaming bound "
                f"({bound / 1e9:.0f} G/s)")
        for label in [k for k in solvers if k.endswith("_default")]:
            del solvers[label]
        compare = _DeviceCompare(solvers["coalesced"])
        differ = compare.differences(solvers["coalesced"].x_buffer, solvers["temporal"].x_buffer)
        out[f"temporal_vs_coalesced_differences_{name}"] = differ
        log(f"{size}^2 {name}: temporal vs coalesced after {iterations} steps: "
            f"{differ} cells differ")
        del solvers, compare
    return out


def large_numpy_check(compute, size: int = 4096, steps: int = 5) -> dict:
    """Tuned large-grid kernels against NumPy on a 4096^2 grid (NumPy is fast enough there)."""
    out = {}
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        rhs = (rng.standard_normal((size, size)) * 100).astype(dtype)
        ref = jacobi_numpy(rhs, steps, dtype=dtype)
        for label in ("coalesced", "temporal"):
            config = cached_config(compute, dtype, (16384, 16384), label) or device_default(
                compute, label, dtype, rhs.shape)
            solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
            solver.advance(steps)
            ok = bool(np.array_equal(solver.read(), ref))
            out[f"{label}_{np.dtype(dtype).name}"] = {"config": config.describe(), "equal": ok}
            log(f"{size}^2 {steps} steps {np.dtype(dtype).name} {config.describe()}: "
                f"equal to NumPy: {ok}")
    return out


def build_logs(compute) -> dict:
    """NVIDIA's ptxas report (registers, spills) for the tuned kernels."""
    out = {}
    for dtype in (np.float32, np.float64):
        for shape in ((266, 400), (16384, 16384)):
            for kernel in ("temporal", "coalesced"):
                config = cached_config(compute, dtype, shape, kernel) or device_default(
                    compute, kernel, dtype, shape)
                source = programs.render(f"jacobi/{kernel}",
                                         **dict(config.template_params(), dtype=np.dtype(dtype)))
                try:
                    program = cl.Program(compute.context, source).build(
                        options=["-cl-nv-verbose"])
                    text = program.get_build_info(compute.device, cl.program_build_info.LOG)
                except Exception as error:  # noqa: BLE001
                    text = repr(error)
                key = f"{kernel} {np.dtype(dtype).name} {shape[0]}x{shape[1]} {config.describe()}"
                out[key] = text.strip()[-1500:]
    (OUT / "build_logs.txt").write_text("\n\n".join(f"## {k}\n{v}" for k, v in out.items()))
    return {k: v.splitlines()[-3:] for k, v in out.items()}


def summary() -> None:
    s = RESULTS["sections"]
    lines = ["", "SUMMARY (" + RESULTS.get("device", {}).get("name", "?") + ")"]
    bw = s.get("bandwidth", {}).get("value") or {}
    if bw:
        lines.append(f"copy bandwidth: enqueue_copy {bw['enqueue_copy_Bps'] / 1e12:.3f} TB/s, "
                     f"copy kernel {bw['copy_kernel_Bps'] / 1e12:.3f} TB/s, CuPy "
                     f"{bw.get('cupy_copy_Bps', float('nan')) / 1e12:.3f} TB/s (read+write)")
    lc = s.get("launch", {}).get("value") or {}
    if lc:
        lines.append(f"empty launch: PyOpenCL {lc['pyopencl_enqueue_us']:.2f} us, ctypes no event "
                     f"{lc['ctypes_no_event_us']:.2f} us")
    ex = s.get("exactness", {}).get("value") or {}
    if ex:
        lines.append(f"exactness vs NumPy: {ex['comparisons']} comparisons, "
                     f"{len(ex['failures'])} failures")
    seed = s.get("seed_case", {}).get("value") or {}
    for key, value in seed.items():
        if isinstance(value, dict):
            t = value.get("wall_s", value.get("event_s"))
            lines.append(f"400x266 x150000 {key}: {value.get('config', '')} wall {t} "
                         f"events {value.get('device_s', value.get('event_s'))} "
                         f"equal {value.get('equal_numpy')}")
    large = s.get("large", {}).get("value") or {}
    for key, value in large.items():
        if isinstance(value, dict):
            rate = value["cell_updates_per_s"] / 1e9
            lines.append(f"16384^2 {key}: {value['config']} {rate:.1f} "
                         f"G/s = {value['fraction_of_bound']:.3f} x bound")
        elif key.startswith("temporal_vs"):
            lines.append(f"16384^2 {key}: {value}")
    for key in sorted(s):
        if key.startswith("tune"):
            best = (s[key].get("value") or {}).get("best", {})
            for name, b in best.items():
                lines.append(f"{key} best {name}: {b['us_per_step']:.3f} us/step "
                             f"{KernelConfig.from_json(b['config']).describe()}")
    lines.append("errors: " + ", ".join(RESULTS["errors"]) if RESULTS["errors"] else "errors: none")
    for line in lines:
        log(line)


def main() -> None:
    global OUT, LOG
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "gpu-out"))
    parser.add_argument("--deadline", type=float, default=500.0,
                        help="seconds after which no new section starts")
    parser.add_argument("--budget-scale", type=float, default=1.0)
    parser.add_argument("--iterations", type=int, default=150000)
    parser.add_argument("--large", type=int, default=16384)
    parser.add_argument("--large-iterations", type=int, default=1000)
    parser.add_argument("--skip", default="", help="comma-separated sections to skip")
    parser.add_argument("--defaults", action="store_true",
                        help="no tuning, no cache: time the defaults that --kernel auto uses")
    parser.add_argument("--make-references", action="store_true",
                        help="compute NumPy's results for --iterations into .device/ref, exit")
    args = parser.parse_args()
    if args.make_references:
        make_references(args.iterations)
        return
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    LOG = open(OUT / "log.txt", "a")
    os.environ["OCLSCI_TUNE_CACHE"] = "off" if args.defaults else str(OUT / "tuning.json")
    skip = set(filter(None, args.skip.split(",")))
    if args.defaults:
        skip |= {"tune_cli_small_float32", "tune_small_float64", "tune_large_float32",
                 "tune_large_float64"}
    compute = oclsci.create_context()
    RESULTS["device"] = device_facts(compute)
    log(f"device: {RESULTS['device']}")
    d = args.deadline
    scale = args.budget_scale

    def run_section(name, function, *fargs, deadline=d):
        if name in skip:
            return None
        value = section(name, deadline)(function)(*fargs)
        RESULTS["sections"].setdefault(name, {})["value"] = value
        save()
        return value

    bw = run_section("bandwidth", bandwidth, compute)
    run_section("launch", launch_cost, compute)
    run_section("exactness", exactness, compute, [])
    small, large = (266, 400), (args.large, args.large)
    run_section("tune_cli_small_float32", tune_cli, "266x400", "float32", 40 * scale,
                ("temporal", "coalesced", "blocked"))
    run_section("tune_small_float64", tuning, compute, small, np.float64, 20 * scale,
                ("temporal", "coalesced"))
    run_section("tune_large_float32", tuning, compute, large, np.float32, 45 * scale,
                ("temporal", "coalesced"))
    run_section("tune_large_float64", tuning, compute, large, np.float64, 35 * scale,
                ("temporal", "coalesced"))
    run_section("seed_case", seed_case, compute, args.iterations, deadline=d + 40)
    if bw:
        run_section("large", large_case, compute, args.large, args.large_iterations, bw,
                    deadline=d + 50)
    run_section("large_numpy_check", large_numpy_check, compute, deadline=d + 60)
    run_section("queue_experiment", queue_experiment, compute, args.iterations, deadline=d + 60)
    run_section("build_logs", build_logs, compute, deadline=d + 60)
    summary()
    save()


if __name__ == "__main__":
    main()
