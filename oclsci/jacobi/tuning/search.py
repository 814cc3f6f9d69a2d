"""A short search for the fastest exact Jacobi kernel configuration on a device.

:func:`tune` builds candidate configurations of each kernel (:func:`candidates`, ranked by a
rough cost model so that a short budget goes to likely winners), checks each one bit for bit
against a plain reference kernel on the device, times it, re-times the best few, and returns
a :class:`TuneReport`; :func:`save_report` puts the winners in the tuning cache that
``--kernel auto`` reads (:mod:`oclsci.jacobi.tuning`). Command line: ``oclsci tune``.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError, KernelBuildError
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.tuning.cache import cache_key, make_entry, save_entry
from oclsci.jacobi.tuning.defaults import device_default
from oclsci.jacobi.tuning.space import KERNELS, KernelConfig, round_up
from oclsci.runtime import programs

# Steps of the exactness check: over two launches of the deepest kernel, and a remainder.
CHECK_STEPS = 75
REFERENCE = KernelConfig("coalesced", {"rows_per_item": 1, "vector": 1})


@dataclass
class Trial:
    """One candidate's outcome: seconds per step, or why it was dropped."""

    config: KernelConfig
    seconds_per_step: float = math.inf
    status: str = "not run"
    predicted: float = math.nan

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class TuneReport:
    """What :func:`tune` found."""

    key: str
    shape: tuple[int, int]
    dtype: np.dtype
    trials: list[Trial] = field(default_factory=list)
    seconds: float = 0.0

    def best_by_kernel(self) -> dict[str, Trial]:
        """The fastest exact trial of each kernel."""
        best: dict[str, Trial] = {}
        for trial in self.trials:
            if trial.ok and (trial.config.name not in best
                             or trial.seconds_per_step < best[trial.config.name].seconds_per_step):
                best[trial.config.name] = trial
        return best

    @property
    def best(self) -> Trial | None:
        """The fastest exact trial."""
        ranked = sorted(self.best_by_kernel().values(), key=lambda t: t.seconds_per_step)
        return ranked[0] if ranked else None


# -- candidates -------------------------------------------------------------------------------

def _device_facts(compute: Any) -> dict:
    device = compute.device
    return {"cus": int(device.max_compute_units), "max_wg": int(device.max_work_group_size),
            "local_mem": int(device.local_mem_size), "is_cpu": bool(compute.is_cpu)}


def predict_seconds_per_step(config: KernelConfig, shape: tuple[int, int], dtype: Any,
                             facts: dict) -> float:
    """A rough cost model, used only to decide which candidates to time first."""
    m, n = shape
    cells = m * n
    itemsize = np.dtype(dtype).itemsize
    cus = facts["cus"]
    if facts["is_cpu"]:
        launch, stream_rate, cache_rate = 20e-6, 3e8 * cus * 4 / itemsize, 2e9 * cus
        if config.name == "bands":
            layout = config.bands_layout(m, n)
            k = config.param("max_steps")
            band_w = config.param("band_w") or n
            halo = ((config.param("band_h") + k) * (band_w + k)) / (config.param("band_h")
                                                                   * band_w)
            ws = 2 * layout["scratch_half"] * itemsize
            rate = cache_rate if ws <= 512 * 1024 else stream_rate * 2
            waves = math.ceil(layout["tiles"] / min(cus, layout["workers"])) / (
                layout["tiles"] / min(cus, layout["workers"]))
            return launch / k + cells * halo * waves / rate
        return launch + cells / stream_rate * (2 if config.name == "seed" else 1)
    launch_host, launch_gpu = 6e-6, 3e-6
    bandwidth = 3.0e12
    if config.name in ("seed", "coalesced"):
        vector = config.param("vector") if config.name == "coalesced" else 1
        rows = config.param("rows_per_item") if config.name == "coalesced" else 1
        penalty = 4.0 if config.name == "seed" else (1.0 + 0.15 / vector + 0.1 / rows)
        return max(launch_host, launch_gpu + cells * 3 * itemsize * penalty / bandwidth)
    if config.name == "temporal":
        k = config.param("max_steps")
        tile_w, tile_h = config.temporal_tile()
        span = (tile_w + 2 * k) * (tile_h + 2 * k)
        groups = math.ceil(n / tile_w) * math.ceil(m / tile_h)
        wg = config.work_group_size()
        regs = 3 * config.param("rows") * config.param("cols") + 24
        per_cu = max(1, min(2048 // wg, 65536 // (wg * regs),
                            (3 * facts["local_mem"]) // max(1, config.local_mem_bytes(dtype))))
        waves = math.ceil(groups / (cus * per_cu))
        # Cells a multiprocessor updates per second, shared by its resident groups; a
        # barrier per step costs about as much as 64 cells.
        rate = (16e9 if itemsize == 4 else 8e9) * (0.5 + 0.5 * min(1.0, wg / 256))
        concurrent = min(per_cu, math.ceil(groups / cus))
        step = waves * concurrent * (span + 64 * (3 - config.param("buffers"))) / rate
        traffic = groups * span * 2 * itemsize / bandwidth
        return max(launch_host, launch_gpu + k * step + traffic) / k
    if config.name == "blocked":
        k = config.param("halo_width")
        span = ((config.param("tile_w") + 2 * k) * (config.param("tile_h") + 2 * k))
        groups = math.ceil(n / config.param("tile_w")) * math.ceil(m / config.param("tile_h"))
        rate = 6e9 if itemsize == 4 else 3e9
        step = math.ceil(groups / (2 * cus)) * 2 * span / rate
        return max(launch_host, launch_gpu + k * step) / k
    return 1.0


def _temporal_candidates(shape, dtype, facts) -> list[KernelConfig]:
    m, n = shape
    itemsize = np.dtype(dtype).itemsize
    found = []
    for cols, rows, local_w, local_h, steps in itertools.product(
            (1, 2, 4), (2, 4, 8), (32, 64), (2, 4, 8, 16, 32), (2, 4, 6, 8, 12, 16, 24, 32)):
        block = rows * cols
        if not 4 <= block <= (32 if itemsize == 4 else 16):
            continue
        wg = local_w * local_h
        if not 64 <= wg <= facts["max_wg"]:
            continue
        span_w, span_h = local_w * cols, local_h * rows
        tile_w, tile_h = span_w - 2 * steps, span_h - 2 * steps
        if tile_w < 1 or tile_h < 1 or tile_w * tile_h < 0.2 * span_w * span_h:
            continue
        # Tiles much larger than the grid waste work.
        if tile_w > 2 * n + 32 or tile_h > 2 * m + 32:
            continue
        for buffers in (2, 1):
            config = KernelConfig("temporal", {"rows": rows, "cols": cols, "local_w": local_w,
                                               "local_h": local_h, "max_steps": steps,
                                               "buffers": buffers})
            if config.local_mem_bytes(dtype) <= facts["local_mem"]:
                found.append(config)
                break
    return found


def _coalesced_candidates(shape, dtype, facts) -> list[KernelConfig]:
    found = []
    shapes = [(32, 4), (32, 8), (64, 4), (128, 2), (256, 1), (64, 8), (128, 4), (32, 16),
              (64, 2), (128, 1)]
    if facts["is_cpu"]:
        shapes = [None]
    for vector, rows, local in itertools.product((4, 2, 1), (1, 2, 4, 8), shapes):
        if local and local[0] * local[1] > facts["max_wg"]:
            continue
        found.append(KernelConfig("coalesced", {"rows_per_item": rows, "vector": vector},
                                  local))
    return found


def _bands_candidates(shape, dtype, facts) -> list[KernelConfig]:
    m, n = shape
    cus = facts["cus"]
    found = []
    widths = [0] if n <= 1024 else [256, 512, 1024, 0]
    for steps, band_w, bands_per_worker in itertools.product(
            (1, 2, 4, 8, 16, 32), widths, (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)):
        tiles_h = cus * bands_per_worker
        band_h = math.ceil(m / tiles_h)
        if band_h < 1 or (band_h == 1 and bands_per_worker > 1 and tiles_h > m):
            continue
        config = KernelConfig("bands", {"band_h": band_h, "band_w": band_w,
                                        "max_steps": steps, "workers": cus})
        if config not in found:
            found.append(config)
    return found


def _blocked_candidates(shape, dtype, facts) -> list[KernelConfig]:
    found = []
    itemsize = np.dtype(dtype).itemsize
    for tile, halo, local in itertools.product((16, 32, 64), (4, 8, 16), ((32, 8), (16, 16),
                                                                         (32, 16), (64, 4))):
        span = (tile + 2 * halo) ** 2
        rhs_local = 3 * span * itemsize <= facts["local_mem"]
        config = KernelConfig("blocked", {"tile_w": tile, "tile_h": tile, "halo_width": halo,
                                          "local_w": local[0], "local_h": local[1],
                                          "rhs_in_local": rhs_local})
        if (2 * span * itemsize <= facts["local_mem"]
                and local[0] * local[1] <= facts["max_wg"]):
            found.append(config)
    return found


GENERATORS = {"coalesced": _coalesced_candidates, "temporal": _temporal_candidates,
              "bands": _bands_candidates, "blocked": _blocked_candidates}


def default_kernels(compute: Any) -> tuple[str, ...]:
    """The kernels worth tuning on this device type."""
    return ("bands", "coalesced") if compute.is_cpu else ("temporal", "coalesced")


def candidates(compute: Any, shape: tuple[int, int], dtype: Any,
               kernels: tuple[str, ...] | None = None) -> list[KernelConfig]:
    """Candidate configurations, most promising first, kernels interleaved.

    Each kernel's list starts with its default configuration, then follows the cost model.
    """
    facts = _device_facts(compute)
    kernels = kernels or default_kernels(compute)
    lists = []
    for name in kernels:
        if name not in GENERATORS and name not in KERNELS:
            raise InputError(f"unknown kernel {name!r}; choose among {', '.join(KERNELS)}")
        found = GENERATORS[name](shape, dtype, facts) if name in GENERATORS else []
        found.sort(key=lambda c: predict_seconds_per_step(c, shape, dtype, facts))
        default = device_default(compute, name, dtype, shape)
        ordered = [default] + [c for c in found if c != default]
        lists.append([c for c in ordered if c.fits(compute, dtype)])
    merged = []
    for group in itertools.zip_longest(*lists):
        merged.extend(c for c in group if c is not None)
    return merged


# -- measuring ---------------------------------------------------------------------------------

def _seconds(solver: JacobiSolver, steps: int) -> float:
    queue = solver.compute.queue
    queue.finish()
    start = time.perf_counter()
    solver.advance(steps)
    queue.finish()
    return time.perf_counter() - start


def time_per_step(solver: JacobiSolver, min_seconds: float, repeats: int = 2,
                  max_steps: int = 10_000_000) -> float:
    """Seconds per step (best of ``repeats``), over runs of at least ``min_seconds``.

    Step counts are whole launches, so that no remainder launch is timed.
    """
    per_launch = solver.steps_per_launch
    steps = per_launch * 2
    _seconds(solver, steps)  # warm-up
    elapsed = _seconds(solver, steps)
    while elapsed < min_seconds / 4 and steps < max_steps:
        grow = max(2.0, min(64.0, (min_seconds / 4) / max(elapsed, 1e-7)))
        steps = round_up(int(steps * grow), per_launch)
        elapsed = _seconds(solver, steps)
    steps = round_up(max(steps, int(steps * min_seconds / max(elapsed, 1e-9))), per_launch)
    steps = min(steps, round_up(max_steps, per_launch))
    return min(_seconds(solver, steps) for _ in range(repeats)) / steps


class _DeviceCompare:
    """Bit-exact comparison of two padded grids on the device."""

    def __init__(self, solver: JacobiSolver):
        self.solver = solver
        compute = solver.compute
        self.kernel = programs.get_kernel(compute, "jacobi/compare", dtype=solver.dtype)
        self.count = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE, 4)
        self.groups = 4 * int(compute.device.max_compute_units)

    def differences(self, a: Any, b: Any) -> int:
        solver, queue = self.solver, self.solver.compute.queue
        zero = np.zeros(1, np.uint32)
        cl.enqueue_copy(queue, self.count, zero)
        self.kernel.set_args(a, b, np.int32(solver.m), np.int32(solver.n),
                             np.int32(solver.row_stride), self.count)
        cl.enqueue_nd_range_kernel(queue, self.kernel, (self.groups * 64,), (64,))
        cl.enqueue_copy(queue, zero, self.count)
        return int(zero[0])


def _copy(queue: Any, dst: Any, src: Any) -> None:
    cl.enqueue_copy(queue, dst, src)


def tune(compute: Any, shape: tuple[int, int] = (266, 400), dtype: Any = np.float32,
         budget: float = 30.0, kernels: tuple[str, ...] | None = None,
         rhs: np.ndarray | None = None, log: Callable[[str], None] | None = None,
         finalists: int = 3, configs: list[KernelConfig] | None = None,
         min_seconds: float | None = None) -> TuneReport:
    """Search, within about ``budget`` seconds, the fastest exact configuration.

    Every candidate must give, after :data:`CHECK_STEPS` steps, the same bits as the plain
    coalesced kernel (itself checked against NumPy by the test suite); the ``finalists``
    fastest are timed again, longer.
    """
    start = time.perf_counter()
    deadline = start + budget
    dtype = compute.check_dtype(dtype)
    m, n = (int(v) for v in shape)
    if m < 1 or n < 1:
        raise InputError(f"grid size must be at least 1x1, got {m}x{n}")
    log = log or (lambda message: None)
    if rhs is None:
        rhs = np.random.default_rng(12345).integers(-255, 256, size=(m, n)).astype(dtype)
    report = TuneReport(cache_key(compute, dtype, (m, n)), (m, n), dtype)
    configs = list(configs) if configs is not None else candidates(compute, (m, n), dtype,
                                                                   kernels)
    facts = _device_facts(compute)
    if min_seconds is None:
        min_seconds = 0.15 if compute.is_cpu else 0.04

    solver = JacobiSolver(compute, rhs, dtype=dtype, config=REFERENCE)
    queue, context = compute.queue, compute.context
    nbytes = (m + 2) * solver.row_stride * dtype.itemsize
    pristine = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    reference = cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    _copy(queue, pristine, solver.x_buffers[0])
    solver.advance(CHECK_STEPS)
    _copy(queue, reference, solver.x_buffer)
    compare = _DeviceCompare(solver)

    def reset() -> None:
        for buffer in solver.x_buffers:
            _copy(queue, buffer, pristine)
        solver.current, solver.iteration = 0, 0

    # Compile ahead in threads on GPUs (their compilers are slow, and the device idles).
    pool = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) \
        if not compute.is_cpu and len(configs) > 1 else None
    futures: dict = {}

    def prebuild(upto: int) -> None:
        if pool is None:
            return
        for config in configs[:upto]:
            if config not in futures:
                futures[config] = pool.submit(
                    programs.build_program, compute, f"jacobi/{config.name}", (),
                    **dict(config.template_params(), dtype=dtype))

    try:
        for index, config in enumerate(configs):
            if time.perf_counter() > deadline and report.trials:
                break
            prebuild(index + 16)
            trial = Trial(config, predicted=predict_seconds_per_step(config, (m, n), dtype,
                                                                     facts))
            report.trials.append(trial)
            try:
                if config in futures:
                    futures[config].result()
                solver.reconfigure(config)
                reset()
                solver.advance(CHECK_STEPS)
                wrong = compare.differences(solver.x_buffer, reference)
                if wrong:
                    trial.status = f"WRONG: {wrong} cells differ"
                    log(f"  {config.describe()}: {trial.status}")
                    continue
                trial.seconds_per_step = time_per_step(solver, min_seconds)
                trial.status = "ok"
                log(f"  {config.describe()}: {1e6 * trial.seconds_per_step:.3f} us/step")
            except (KernelBuildError, InputError, cl.Error) as error:
                trial.status = f"failed: {str(error).splitlines()[0][:120]}"
                log(f"  {config.describe()}: {trial.status}")
        # The finalists again, longer: the screening runs are short and noisy.
        ok = sorted((t for t in report.trials if t.ok), key=lambda t: t.seconds_per_step)
        chosen = ok[:finalists]
        for trial in report.best_by_kernel().values():
            if trial not in chosen:
                chosen.append(trial)
        for trial in chosen:
            solver.reconfigure(trial.config)
            trial.seconds_per_step = min(trial.seconds_per_step,
                                         time_per_step(solver, 3 * min_seconds, repeats=3))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    report.seconds = time.perf_counter() - start
    return report


def save_report(report: TuneReport) -> Any:
    """Store the report's winners in the tuning cache; return the cache's path."""
    best = report.best
    if best is None:
        raise InputError("no candidate configuration ran correctly; nothing to save")
    kernels = {name: (trial.config, trial.seconds_per_step)
               for name, trial in report.best_by_kernel().items()}
    entry = make_entry(best.config, kernels, report.shape, best.seconds_per_step)
    return save_entry(report.key, entry)
