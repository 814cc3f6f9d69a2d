"""A workload's exchange plan from the measured constants (:mod:`oclsci.mpi.plan`), the part
that Jacobi's slabs and a stencil's share: the slowest rank's :class:`~oclsci.mpi.plan.Run`
from the grid and the interior kernel's rate, the model's choice, and the configurations
that run it, checked against the slabs they make.

The workload tells what differs through callables: its configurations for a kind of slab
and a period, their steps per launch, the interior kernel's rate on a slab of some rows, and
the ranks' slabs at a period. Its "row" is the model's: Jacobi's row, or ``r`` layers of a
stencil of radius ``r`` (a period of S steps then exchanges about S + 1 of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from oclsci.kernelspec.registry import cache_disabled, load_cache
from oclsci.mpi.constants import run_constants
from oclsci.mpi.plan import Constants, Plan, Run, candidate_periods, choose_plan
from oclsci.mpi.slabs import Decomposition, exchange_period
from oclsci.mpi.subslabs import sub_slabs

# Launches of the short run that measures a kernel's rate when the tuning cache has none.
RATE_LAUNCHES = 3


@dataclass(frozen=True)
class ModelGrid:
    """The grid as the model sees it: ``rows`` along the cut over ``parts`` ranks, each row
    ``columns`` cells and ``row_bytes`` (padded) per level; ``levels`` that travel, and the
    buffers that a received row is written into when overlapped (``receive_buffers``)."""

    rows: int
    columns: int
    row_bytes: int
    parts: int
    levels: int = 1
    receive_buffers: int = 2


@dataclass(frozen=True)
class Workload:
    """What the plan asks of a workload. ``choose(overlapped, period)``: its (interior,
    strip) configurations for such slabs at that period (None: the fixed rules'); the strip's
    may be None (the interior's). ``steps(config)``: steps per launch. ``rate(interior,
    rows)``: the interior configuration's cells per second on a slab of ``rows`` model rows.
    ``slabs(period)``: the ranks' slabs when exchanging every ``period`` steps.
    ``strip_us(strip, period)``: one strip's device time per step at that period, as a rank
    runs it (None: not timed; the model then costs it from its cells)."""

    choose: Callable[[bool, int | None], tuple[Any, Any]]
    steps: Callable[[Any], int]
    rate: Callable[[Any, int], float]
    slabs: Callable[[int], Decomposition]
    strip_us: Callable[[Any, int], float] | None = None


def measured_plan(constants: Constants, grid: ModelGrid, work: Workload,
                  configs: tuple[Any, Any] | None = None) -> tuple[Plan, Any, Any] | None:
    """(plan, interior, strip configurations) that the model finds fastest for ``grid`` on
    ``constants``; ``configs``: given configurations, kept (else ``work.choose``'s for the
    plan's slabs). None when the slabs hold no plan that the kernels' steps per launch allow.
    The slowest rank is a middle one (a strip on each side) from three ranks on."""
    rows, strips = -(-grid.rows // grid.parts), (2 if grid.parts > 2 else 1)
    interior, strip = configs or work.choose(True, None)
    interior_steps, strip_steps = work.steps(interior), work.steps(strip or interior)
    guess = exchange_period(math.lcm(interior_steps, strip_steps))
    rate = work.rate(interior, max(1, rows - strips * (guess + 1)))
    run = Run(rows, grid.columns, strips, grid.row_bytes, rate,
              steps_per_launch=interior_steps, strip_steps_per_launch=strip_steps,
              levels=grid.levels, remote=grid.parts > constants.ranks_per_node,
              receive_buffers=grid.receive_buffers)
    if work.strip_us is not None:
        # The strips' own kernel on their few rows: its time per step at each period.
        periods = candidate_periods(math.lcm(interior_steps, strip_steps), rows, strips, True)
        timed = {}
        for period in periods:
            chosen = configs or work.choose(True, period)
            timed[period] = work.strip_us(chosen[1] or chosen[0], period)
        run = replace(run, strip_step_us=timed)
    plan = choose_plan(constants, run)
    if plan is None:
        return None
    if configs is None:  # the configurations for the plan's slabs
        interior, strip = work.choose(plan.overlapped, plan.period)
    steps = math.lcm(work.steps(interior), work.steps(strip or interior))
    fits = plan.period % steps == 0 and (
        not plan.overlapped or sub_slabs(work.slabs(plan.period)) is not None)
    return (plan, interior, strip) if fits else None


def agreed_plan(world: Any, compute: Any, exchange_every: int | None,
                find: Callable[[Constants], Any]) -> Any:
    """What ``find(constants)`` returns on rank 0, on every rank (collective): a workload's
    measured plan where ``oclsci tune --mpi`` cached this node's constants; None where none
    are cached, a variable overrides the plan, or ``exchange_every`` is given."""
    constants = run_constants(world, compute) if exchange_every is None else None
    return world.bcast(world.agree(
        lambda: find(constants) if world.is_root and constants is not None else None))


def strip_step_us(compute: Any, make_solver: Callable[[], Any], period: int) -> float:
    """Microseconds per step of ``make_solver()`` (a strip's solver, as a rank makes it)
    over :data:`RATE_LAUNCHES` periods of ``period`` steps, after one."""
    solver = make_solver()
    solver.advance(period)  # warm-up
    compute.queue.finish()
    watch = compute.stopwatch()  # host clock: the launches' gaps count, as in a run
    for _ in range(RATE_LAUNCHES):
        solver.advance(period)
    watch.stop()
    return watch.wall_seconds * 1e6 / (RATE_LAUNCHES * period)


def kernel_rate(compute: Any, key: str, name: str, make_solver: Callable[[], Any],
                cells: int) -> float:
    """Cells per second of kernel ``name``: the tuning cache's timing of it under ``key``
    (the cells of the entry's shape per step), else a short run of :data:`RATE_LAUNCHES`
    launches of ``make_solver()`` (its ``advance`` and ``steps_per_launch``) over ``cells``."""
    entry = load_cache().get(key) if not cache_disabled() else None
    try:
        timed = entry["kernels"][name]
        return math.prod(entry["shape"]) / (float(timed["us_per_step"]) * 1e-6)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        pass
    solver = make_solver()
    steps = RATE_LAUNCHES * solver.steps_per_launch
    solver.advance(solver.steps_per_launch)  # warm-up
    watch = compute.stopwatch()
    solver.advance(steps)
    return cells * steps / max(watch.stop(), 1e-9)


def plan_words(plan: Plan | None) -> str:
    """The summary's words on the plan: the measured one, or the fixed rules."""
    return f"plan: {plan.describe() if plan else 'fixed rules'}"
