"""A short search for the fastest exact configuration of a user's stencil on a device.

:func:`tune` makes each kernel's candidates (its defaults for the device, then its spec's
tuning space ordered by the spec's cost model, kernels interleaved so that a short budget
tries each one's most promising), checks each one bit for bit against the one-step kernel
``step`` on the device, times it, re-times the fastest few, and returns a
:class:`~oclsci.kernelspec.search.TuneReport`; :func:`~oclsci.kernelspec.search.save_report`
puts the winners in the tuning cache under :func:`oclsci.stencil.kernels.tuning_key` (device,
dtype, size class and the stencil's structure), where ``kernel="auto"`` finds them. The
budget, the timing and the cache are :mod:`oclsci.kernelspec`'s, as for Jacobi's search.
Command line: ``oclsci tune --stencil EXPR``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError, InvalidArgumentError, KernelBuildError, first_line
from oclsci.kernelspec.search import (
    FINAL_FACTOR,
    FINAL_REPEATS,
    SearchBudget,
    Trial,
    TuneReport,
    interleave,
    time_per_step,
)
from oclsci.runtime import programs
from oclsci.stencil import kernels as registry
from oclsci.stencil.kernels import StencilConfig, tuning_key
from oclsci.stencil.problem import Problem
from oclsci.stencil.solver import (
    NeededLayers,
    StencilSolver,
    geometry,
    program,
    stencil_geometry,
)
from oclsci.stencil.specs import Geometry

__all__ = ["CHECK_STEPS", "DEFAULT_SHAPES", "REFERENCE", "candidates", "default_shape",
           "sample_problem", "tune"]

# Grids searched when none is given, by dimension.
DEFAULT_SHAPES = {2: (2048, 2048), 3: (256, 256, 256)}
# Steps of the exactness check: two launches of the deepest candidate (16 steps) and a
# remainder launch.
CHECK_STEPS = 35
REFERENCE = StencilConfig("step", {"gpu_groups": 0})


def check_shape(stencil: Any, shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` as a tuple, refused in one line unless a grid of the stencil's dimension."""
    shape = tuple(int(size) for size in shape)
    dims = stencil.expression.dims
    if dims is not None and len(shape) != dims:
        raise InvalidArgumentError(f"the stencil is {dims}-D; the grid to tune for has "
                                   f"{len(shape)} sizes ({'x'.join(map(str, shape))})")
    if len(shape) not in (2, 3) or min(shape) < 1:
        raise InvalidArgumentError(f"a grid to tune for needs 2 or 3 sizes of at least 1, "
                                   f"got {'x'.join(map(str, shape))}")
    return shape


def sample_problem(stencil: Any, shape: Sequence[int], dtype: Any) -> Problem:
    """The problem a search runs: u in [0, 1), read-only fields in [0, 0.1) (their values
    change no kernel's speed), the stencil's parameters; CHECK_STEPS steps; a fixed boundary
    (periodic runs launch the same kernels on a grid with ghost cells)."""
    shape = check_shape(stencil, shape)
    rng = np.random.default_rng(37)
    fields = {name: rng.uniform(0, 0.1, shape) for name in stencil.expression.fields}
    problem = stencil.problem(rng.uniform(0, 1, shape), CHECK_STEPS, fields=fields,
                              dtype=dtype)
    return replace(problem, periodic=False)


def default_shape(stencil: Any) -> tuple[int, ...]:
    """The grid searched when none is given: :data:`DEFAULT_SHAPES` for the stencil's
    dimension (2-D when its offsets do not say)."""
    return DEFAULT_SHAPES[stencil.expression.dims or 2]


def default_kernels(facts: dict) -> tuple[str, ...]:
    """The kernels worth searching on this device kind (``step`` among them: it suits both)."""
    return registry.REGISTRY.suited("cpu" if facts["is_cpu"] else "gpu")


def candidates(facts: dict, geo: Geometry,
               kernels: Sequence[str] | None = None) -> list[StencilConfig]:
    """Candidate configurations that fit the device, most promising first, kernels
    interleaved: each kernel's defaults for the device, then its tuning space by cost."""
    lists = []
    for name in kernels or default_kernels(facts):
        spec = registry.get(name)
        space = [spec.resolve(p) for p in spec.candidates(facts, geo)] if spec.candidates else []
        if spec.cost is not None:
            space.sort(key=lambda p, spec=spec: spec.cost(p, geo, facts))
        found, seen = [], set()
        for params in [spec.resolve(p) for p in spec.defaults(facts, geo)] + space:
            key = tuple(sorted(params.items()))
            if key not in seen and spec.problem(params, geo, facts) is None:
                seen.add(key)
                found.append(StencilConfig(name, params))
        lists.append(found)
    return interleave(lists)


def _predicted(config: StencilConfig, geo: Geometry, facts: dict) -> float:
    cost = config.spec.cost
    return cost(config.params, geo, facts) if cost else float("nan")


def _solver(compute: Any, problem: Problem, config: StencilConfig) -> StencilSolver:
    return StencilSolver(compute, problem, kernel=config.name, kernel_params=config.params)


def kernel_rate(compute: Any, skeleton: Problem, config: StencilConfig,
                shape: tuple[int, ...]) -> float:
    """Cells per second of ``config`` for ``skeleton``'s stencil (its arrays aside) on a grid
    of ``shape``: the tuning cache's timing of its kernel, else a short run on zeros
    (:func:`oclsci.mpi.slabplan.kernel_rate`; MPI runs' measured exchange plan)."""
    from oclsci.mpi.slabplan import kernel_rate as slab_kernel_rate  # MPI plans only

    def zeros() -> np.ndarray:
        return np.zeros(shape, skeleton.dtype)

    def make_solver() -> StencilSolver:
        uses_prev = skeleton.expression.uses_prev
        problem = replace(skeleton, u0=zeros(), prev0=zeros() if uses_prev else None,
                          fields={name: zeros() for name in skeleton.expression.fields})
        return StencilSolver(compute, problem, candidates=[config])

    geo = stencil_geometry(skeleton.expression, shape, skeleton.dtype)
    return slab_kernel_rate(compute, tuning_key(compute, skeleton.expression, geo,
                                                skeleton.dtype),
                            config.name, make_solver, int(np.prod(shape)))


def strip_us(compute: Any, skeleton: Problem, candidates: list, shape: tuple[int, ...],
             needed: NeededLayers) -> float:
    """One overlapped strip's time per step (:func:`oclsci.mpi.slabplan.strip_step_us`):
    ``skeleton``'s stencil on zeros of ``shape`` (its owned and ghost layers) with the first
    of ``candidates`` that builds, writing the ``needed`` layers as a rank's strip does."""
    from oclsci.mpi.slabplan import strip_step_us  # MPI plans only

    def make_solver() -> StencilSolver:
        zeros = np.zeros(shape, skeleton.dtype)
        problem = replace(skeleton, u0=zeros,
                          prev0=zeros if skeleton.expression.uses_prev else None,
                          fields={name: zeros for name in skeleton.expression.fields})
        return StencilSolver(compute, problem, candidates=candidates, needed=needed)
    return strip_step_us(compute, make_solver, needed.period)


def differing_cells(a: np.ndarray, b: np.ndarray) -> int:
    """Cells whose bits differ (NaNs included)."""
    unsigned = np.uint32 if a.dtype.itemsize == 4 else np.uint64
    return int(np.count_nonzero(a.view(unsigned) != b.view(unsigned)))


def tune(compute: Any, stencil: Any, shape: Sequence[int], dtype: Any = np.float32,
         budget: float = 30.0, kernels: Sequence[str] | None = None,
         log: Callable[[str], None] | None = None, finalists: int = 3,
         configs: list[StencilConfig] | None = None, min_seconds: float | None = None,
         clock: Callable[[], float] = time.perf_counter) -> TuneReport:
    """Search, within about ``budget`` seconds of ``clock``
    (:class:`~oclsci.kernelspec.search.SearchBudget`), the fastest exact configuration of
    ``stencil`` (a :class:`~oclsci.stencil.Stencil`) on a grid of ``shape``.

    Every candidate (``configs``, else :func:`candidates` of ``kernels``) must give, after
    :data:`CHECK_STEPS` steps, the bits of :data:`REFERENCE` on the device; each is timed over
    runs of ``min_seconds`` (0.15 s on CPUs, 0.04 s on GPUs), and the ``finalists`` fastest
    and the fastest of each kernel again, longer, with what the budget has left. On GPUs the
    next candidates' programs build ahead in threads."""
    for name in kernels or ():
        registry.get(name)
    spent = SearchBudget(budget, clock)
    problem = sample_problem(stencil, shape, compute.check_dtype(np.dtype(dtype)))
    dtype = problem.dtype
    geo = geometry(problem, dtype)
    facts = compute.facts.kernel_facts()
    report = TuneReport(tuning_key(compute, problem.expression, geo, dtype), problem.shape,
                        dtype)
    log = log or (lambda message: None)
    configs = list(configs) if configs is not None else candidates(facts, geo, kernels)
    if min_seconds is None:
        min_seconds = 0.15 if compute.is_cpu else 0.04
    most = min(len(configs), finalists + len({config.name for config in configs}) - 1)
    spent.keep(most * (FINAL_REPEATS + 1) * FINAL_FACTOR * min_seconds)

    reference_solver = _solver(compute, problem, REFERENCE)
    reference_solver.advance(CHECK_STEPS)
    reference = reference_solver.read()
    del reference_solver  # its buffers: the candidates' now

    pool = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) \
        if not compute.is_cpu and len(configs) > 1 else None
    futures: dict = {}

    def prebuild(upto: int) -> None:
        for config in configs[:upto] if pool is not None else ():
            key = config.describe()
            if key not in futures:
                template, options, params = program(problem, dtype, config)
                futures[key] = pool.submit(programs.build_program, compute, template,
                                           options, **params)

    try:
        for index, config in enumerate(configs):
            if not spent.screen_next(len(report.trials)):
                break
            started = spent.clock()
            prebuild(index + 16)
            trial = Trial(config, predicted=_predicted(config, geo, facts))
            report.trials.append(trial)
            solver = None
            try:
                if config.describe() in futures:
                    futures[config.describe()].result()
                solver = _solver(compute, problem, config)
                solver.advance(CHECK_STEPS)
                wrong = differing_cells(solver.read(), reference)
                if wrong:
                    trial.status = f"WRONG: {wrong} cells differ"
                else:
                    trial.seconds_per_step = time_per_step(solver, min_seconds)
                    trial.status = "ok"
            except (KernelBuildError, InputError, cl.Error) as error:
                trial.status = f"failed: {first_line(error)[:120]}"
            finally:
                solver = None  # its buffers: the next candidate's
                spent.screened(started)
            log(f"  {config.describe()}: " + (f"{1e6 * trial.seconds_per_step:.3f} us/step"
                                               if trial.ok else trial.status))
        retime(compute, problem, report, spent, finalists, min_seconds)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    report.seconds = spent.elapsed()
    return report


def retime(compute: Any, problem: Problem, report: TuneReport, spent: SearchBudget,
           finalists: int, min_seconds: float) -> None:
    """Time the ``finalists`` fastest trials and the fastest of each kernel again, longer,
    within what is left of the budget (none when nothing is: the screening's timings
    stand); each keeps its better time."""
    ok = sorted((t for t in report.trials if t.ok), key=lambda t: t.seconds_per_step)
    chosen = ok[:finalists]
    chosen += [t for t in report.best_by_kernel().values() if t not in chosen]
    final = spent.final_seconds(len(chosen), FINAL_FACTOR * min_seconds)
    for trial in chosen if final > 0 else ():
        solver = _solver(compute, problem, trial.config)
        trial.seconds_per_step = min(trial.seconds_per_step,
                                     time_per_step(solver, final, repeats=FINAL_REPEATS))
        del solver
