"""A short search for the fastest exact Jacobi kernel configuration on a device.

:func:`tune` builds candidate configurations of each kernel (:func:`candidates`, ranked by a
rough cost model so that a short budget goes to likely winners), checks each one bit for bit
against a plain reference kernel on the device, times it, re-times the best few, and returns
a :class:`TuneReport`; :func:`save_report` puts the winners in the tuning cache that
``--kernel auto`` reads (:func:`oclsci.jacobi.kernels.choose_config`). Command line:
``oclsci tune`` (no other command loads this module).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError, KernelBuildError, first_line
from oclsci.jacobi import kernels as registry
from oclsci.jacobi.kernels import KernelConfig, device_default
from oclsci.jacobi.solver import JacobiSolver
from oclsci.kernelspec.registry import cache_key
from oclsci.kernelspec.search import (
    FINAL_FACTOR,
    FINAL_REPEATS,
    SearchBudget,
    Trial,
    TuneReport,
    interleave,
    save_report,
    time_per_step,
)
from oclsci.runtime import programs
from oclsci.runtime.reduction import GroupReduction

__all__ = ["CHECK_STEPS", "REFERENCE", "SearchBudget", "Trial", "TuneReport", "candidates",
           "save_report", "time_per_step", "tune"]

# Steps of the exactness check: over two launches of the deepest kernel, and a remainder.
CHECK_STEPS = 75
REFERENCE = KernelConfig("coalesced", {"rows_per_item": 1, "vector": 1})
# Work-items per group of the exactness check's count (a power of two).
COMPARE_GROUP_SIZE = 64


# -- candidates -------------------------------------------------------------------------------

def device_facts(compute: Any) -> dict:
    """What the specs' candidates and cost models read of a device (see oclsci.jacobi.specs)."""
    return compute.facts.kernel_facts()


def predict_seconds_per_step(config: KernelConfig, shape: tuple[int, int], dtype: Any,
                             facts: dict) -> float:
    """A rough cost model (the kernel's spec), used only to decide which candidates to time
    first."""
    return config.spec.cost(config.values(), config.local_size, shape,
                            np.dtype(dtype).itemsize, facts)


def _generated(name: str, shape: tuple[int, int], dtype: Any,
               facts: dict) -> list[KernelConfig]:
    """The tuning space of kernel ``name`` (its spec's candidates)."""
    spec = registry.get(name)
    if spec.candidates is None:
        return []
    return [KernelConfig(name, params, local)
            for params, local in spec.candidates(shape, np.dtype(dtype), facts)]


# Kernel -> candidate generator (shape, dtype, facts), for the kernels with a tuning space.
GENERATORS = {name: functools.partial(_generated, name) for name in registry.tunable()}


def default_kernels(compute: Any) -> tuple[str, ...]:
    """The kernels worth tuning on this device type."""
    return registry.tuned_by_default(compute.is_cpu)


def candidates(compute: Any, shape: tuple[int, int], dtype: Any,
               kernels: tuple[str, ...] | None = None) -> list[KernelConfig]:
    """Candidate configurations, most promising first, kernels interleaved.

    Each kernel's list starts with its default configuration, then follows the cost model.
    """
    facts = device_facts(compute)
    names = kernels or default_kernels(compute)
    lists = []
    for name in names:
        found = _generated(name, shape, dtype, facts)
        found.sort(key=lambda c: predict_seconds_per_step(c, shape, dtype, facts))
        default = device_default(compute, name, dtype, shape)
        ordered = [default] + [c for c in found if c != default]
        lists.append([c for c in ordered if c.fits(compute, dtype)])
    return interleave(lists)


# -- measuring ---------------------------------------------------------------------------------

class _DeviceCompare:
    """Bit-exact comparison of two padded grids on the device."""

    def __init__(self, solver: JacobiSolver):
        self.solver = solver
        kernel = programs.get_kernel(solver.compute, "jacobi/compare", dtype=solver.dtype,
                                     group_size=COMPARE_GROUP_SIZE)
        self.count = GroupReduction(solver.compute, kernel, group_size=COMPARE_GROUP_SIZE,
                                    arg_types=(None, None, np.int32, np.int32, np.int32),
                                    result_dtype=np.uint32)

    def differences(self, a: Any, b: Any) -> int:
        solver = self.solver
        return int(self.count(a, b, solver.m, solver.n, solver.row_stride,
                              items=solver.m * solver.n))


def _copy(queue: Any, dst: Any, src: Any) -> None:
    cl.enqueue_copy(queue, dst, src)


def tune(compute: Any, shape: tuple[int, int] = (266, 400), dtype: Any = np.float32,
         budget: float = 30.0, kernels: tuple[str, ...] | None = None,
         rhs: np.ndarray | None = None, log: Callable[[str], None] | None = None,
         finalists: int = 3, configs: list[KernelConfig] | None = None,
         min_seconds: float | None = None,
         clock: Callable[[], float] = time.perf_counter) -> TuneReport:
    """Search, within about ``budget`` seconds, the fastest exact configuration.

    Every candidate must give, after :data:`CHECK_STEPS` steps, the same bits as the plain
    coalesced kernel (itself checked against NumPy by the test suite); the ``finalists``
    fastest (and the fastest of each kernel) are timed again, longer. The budget covers the
    whole search (:class:`SearchBudget`, on ``clock``): the reference's set-up, each
    candidate's build, check and timing, and the re-timing. It is exceeded only by a first
    candidate slower than the budget, and on GPUs by the builds under way at its end (ahead,
    in threads), which are waited for.
    """
    spent = SearchBudget(budget, clock)
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
    facts = device_facts(compute)
    if min_seconds is None:
        min_seconds = 0.15 if compute.is_cpu else 0.04
    # The re-timing: at most the finalists and the best of each other kernel.
    most = min(len(configs), finalists + len({config.name for config in configs}) - 1)
    spent.keep(most * (FINAL_REPEATS + 1) * FINAL_FACTOR * min_seconds)

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
                    programs.build_program, compute, config.spec.template, (),
                    **dict(config.template_params(), dtype=dtype))

    try:
        for index, config in enumerate(configs):
            if not spent.screen_next(len(report.trials)):
                break
            started = spent.clock()
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
                trial.status = f"failed: {first_line(error)[:120]}"
                log(f"  {config.describe()}: {trial.status}")
            finally:
                spent.screened(started)
        # The finalists again, longer: the screening runs are short and noisy. Within what
        # is left of the budget: shorter runs, or none (the screening's timings stand).
        ok = sorted((t for t in report.trials if t.ok), key=lambda t: t.seconds_per_step)
        chosen = ok[:finalists]
        for trial in report.best_by_kernel().values():
            if trial not in chosen:
                chosen.append(trial)
        final = spent.final_seconds(len(chosen), FINAL_FACTOR * min_seconds)
        for trial in chosen if final > 0 else ():
            solver.reconfigure(trial.config)
            trial.seconds_per_step = min(trial.seconds_per_step,
                                         time_per_step(solver, final, repeats=FINAL_REPEATS))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    report.seconds = spent.elapsed()
    return report

