"""A distributed Jacobi solve: scatter, gather, and the slabs of ``oclsci jacobi`` runs.

Every cell goes through the same arithmetic as on one device, so results are bit-identical to
the one-device run for any number of ranks (see :mod:`oclsci.mpi.slabs` and docs/mpi.md).
:class:`SlabGrid` lays the grid of :func:`oclsci.jacobi.driver.run_job` over the ranks of a
world.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from oclsci.errors import Interrupted
from oclsci.jacobi.job import Problem, Start, stop_error
from oclsci.jacobi.overlap import OverlappedJacobi, rows_written
from oclsci.jacobi.runner import JacobiResult, run
from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config
from oclsci.kernelspec.registry import cache_key
from oclsci.mpi.overlap import OverlappedSlab
from oclsci.mpi.slabplan import (
    ModelGrid,
    Workload,
    agreed_plan,
    measured_plan,
    plan_words,
    strip_step_us,
)
from oclsci.mpi.slabplan import kernel_rate as slab_kernel_rate
from oclsci.mpi.slabs import Decomposition, SlabHalo, exchange_period
from oclsci.mpi.subslabs import agreed_overlap, sub_slabs
from oclsci.mpi.world import TAG_GATHER, TAG_SCATTER, World, _agreed

# --------------------------------------------------------------------------------------------
# A distributed Jacobi solve


RowSource = Callable[[int, int], np.ndarray]


def scatter_rows(world: World, decomposition: Decomposition, array: np.ndarray | None,
                 shape_dtype: tuple[tuple[int, int], str]) -> np.ndarray:
    """Rank 0's global ``array`` -> this rank's rows ``lo..hi-1`` (owned and ghost rows)."""
    (m, n), dtype = shape_dtype
    slab = decomposition.slabs[world.rank]
    if world.is_root:
        array = np.ascontiguousarray(array, dtype=np.dtype(dtype))  # as the others expect
        for other in decomposition.slabs[1:]:
            world.send_array(array[other.lo:other.hi], other.rank, TAG_SCATTER)
        return array[slab.lo:slab.hi].copy()
    out = np.empty((slab.local_m, n), dtype=np.dtype(dtype))
    return world.recv_array(out, 0, TAG_SCATTER)


def gather_rows(world: World, decomposition: Decomposition, owned: np.ndarray) -> np.ndarray | None:
    """Every rank's owned rows -> the global array on rank 0 (None on the others)."""
    if not world.is_root:
        world.send_array(owned, 0, TAG_GATHER)
        return None
    full = np.empty((decomposition.m, decomposition.n), dtype=owned.dtype)
    slab = decomposition.slabs[0]
    full[slab.first:slab.stop] = owned
    for other in decomposition.slabs[1:]:
        world.recv_array(full[other.first:other.stop], other.rank, TAG_GATHER)
    return full


class DistributedJacobi:
    """This rank's part of a Jacobi solve over ``world``: a slab solver and its halo.

    Collective. ``rhs`` and ``x0`` are each either the global array on rank 0 (scattered from
    there; other ranks pass None) or a function ``rows(start, stop)`` that every rank calls
    to make its own rows (benchmarks build grids that way, without a scatter). ``kernel``
    and ``config`` as for :class:`~oclsci.jacobi.JacobiSolver`; rank 0's configuration is
    used on every rank, so all ranks advance the same steps per launch. When the exchange
    overlaps the interior's steps and ``kernel`` is ``auto`` (no ``config``), the interior
    runs what ``auto`` means for a middle rank's interior and the edge strips what it means
    for theirs (on a GPU: ``temporal`` for strips of a few rows, where ``streaming``'s extra
    advances at the top and bottom of each launch would outweigh them); ``strip_config``
    names the strips' configuration instead (default: the interior's).
    """

    def __init__(self, world: World, compute: Any, shape: tuple[int, int], rhs: Any,
                 x0: Any = None, *, dtype: Any = np.float32, kernel: str = "auto",
                 config: Any = None, exchange_every: int | None = None,
                 data_dtypes: tuple[str, str | None] | None = None,
                 strip_config: Any = None):
        self.world = world
        self.compute = compute
        self.m, self.n = (int(v) for v in shape)
        self.dtype = np.dtype(dtype)
        # A plan from the measured constants (oclsci tune --mpi), else the fixed rules.
        measured = agreed_plan(world, compute, exchange_every, lambda constants:
                               self._measured_plan(constants, kernel, config, strip_config))
        self.plan = measured[0] if measured else None
        if measured:
            _, config, strip_config = measured
            exchange_every, overlap = self.plan.period, self.plan.overlapped
        else:
            # One choice for all ranks (the summary's collectives depend on it): overlap
            # only if every rank wants it.
            overlap = agreed_overlap(world, compute)
        if config is None:
            config, chosen_strips = world.bcast(world.agree(
                lambda: self._choose(kernel, overlap, exchange_every) if world.is_root
                else None))
            strip_config = strip_config or chosen_strips
        strip_config = strip_config or config
        self.config, self.strip_config = config, strip_config
        # Exchanges at a multiple of both configurations' steps per launch.
        self.period = world.agree(exchange_period, math.lcm(
            config.steps_per_launch, strip_config.steps_per_launch), exchange_every)
        self.decomposition = world.agree(Decomposition.build, self.m, self.n, world.size,
                                         self.period)
        self.slab = self.decomposition.slabs[world.rank]
        # The dtypes the rows travel in; by default the solver's, and no x0 where rank 0
        # has none (the other ranks pass None either way).
        rhs_dtype, x0_dtype = data_dtypes or world.bcast(
            (str(self.dtype), None if x0 is None else str(self.dtype)) if world.is_root
            else None)
        rhs_rows = self._rows(rhs, rhs_dtype)
        x0_rows = None if x0 is None and x0_dtype is None else self._rows(x0, x0_dtype)

        pieces = sub_slabs(self.decomposition) if overlap else None
        if pieces is not None:
            self.solver = world.agree(lambda: OverlappedJacobi(
                world, compute, self.slab, pieces, rhs_rows, x0_rows, dtype=self.dtype,
                config=config, strip_config=strip_config, period=self.period))
            self.halo = self.solver
        else:
            self.solver = world.agree(lambda: JacobiSolver(compute, rhs_rows, x0=x0_rows,
                                                           dtype=self.dtype, config=config))
            self.halo = SlabHalo(world, self.decomposition, self.period)

    def _choose(self, kernel: str, overlap: bool, exchange_every: int | None) -> tuple:
        """Rank 0's configurations: what ``kernel`` means for a slab's shape; when the slabs
        overlap and ``kernel`` is ``auto``, what it means for the interior of a middle rank
        and (when it differs, else None) for a strip, each a grid of its own, at the period
        both give. If slabs that thick do not fit strips and an interior, the slab's."""
        rows = max(1, self.m // self.world.size)
        config = choose_fitting_config(self.compute, kernel, self.dtype, (rows, self.n))
        if not overlap or kernel != "auto":
            return config, None
        period = exchange_period(config.steps_per_launch, exchange_every)
        for _ in range(3):  # the strips' height depends on the period, the period on them
            interior, strips = (choose_fitting_config(self.compute, kernel, self.dtype, shape)
                                for shape in ((max(1, rows - 2 * (period + 1)), self.n),
                                              (period + 1, self.n)))
            chosen = exchange_period(math.lcm(interior.steps_per_launch,
                                              strips.steps_per_launch), exchange_every)
            if chosen == period:
                break
            period = chosen
        if sub_slabs(Decomposition.build(self.m, self.n, self.world.size, chosen)) is None:
            return config, None
        return interior, (None if strips == interior else strips)

    def _measured_plan(self, constants: Any, kernel: str, config: Any,
                       strip_config: Any) -> tuple | None:
        """Rank 0's plan from measured ``constants`` (:mod:`oclsci.mpi.slabplan`) and its
        configurations, (plan, config, strip_config); None when the slabs hold no plan that
        the kernels' steps per launch allow."""
        parts = self.world.size
        grid = ModelGrid(self.m, self.n, (self.n + 2) * self.dtype.itemsize, parts)
        work = Workload(
            choose=lambda overlapped, period: self._choose(kernel, overlapped, period),
            steps=lambda chosen: chosen.steps_per_launch,
            rate=lambda interior, rows: kernel_rate(self.compute, interior, self.dtype,
                                                    (rows, self.n)),
            slabs=lambda period: Decomposition.build(self.m, self.n, parts, period),
            strip_us=lambda strip, period: strip_us(self.compute, strip, self.dtype, self.n,
                                                    period))
        given = (config, strip_config) if config is not None else None
        return measured_plan(constants, grid, work, given)

    @property
    def overlapped(self) -> bool:
        """True when the exchange runs behind the interior's steps (sub-slabs, on every
        rank), False for whole slabs."""
        return isinstance(self.solver, OverlappedSlab)

    def _rows(self, source: Any, dtype: str) -> np.ndarray:
        if callable(source):
            return np.asarray(source(self.slab.lo, self.slab.hi))
        return scatter_rows(self.world, self.decomposition, source, ((self.m, self.n), dtype))

    def start(self, iteration: int = 0) -> None:
        """Set the iteration count and fill the ghost and fixed rows (collective)."""
        self.solver.iteration = int(iteration)
        self.halo.exchange(self.solver)

    def owned(self) -> np.ndarray:
        """This rank's owned rows of the current iterate (m_owned x n)."""
        first, _ = self.slab.owned_local
        return self.solver.read_rows(first, self.slab.rows)[:, 1:self.n + 1].copy()

    def gather(self) -> np.ndarray | None:
        """The global iterate on rank 0, None on the others (collective)."""
        return gather_rows(self.world, self.decomposition, self.owned())

    def run(self, iterations: int, **options: Any) -> Any:
        """:func:`oclsci.jacobi.run` with this rank's halo (collective)."""
        return run(self.solver, iterations, halo=self.halo, **options)

    def close(self) -> None:
        """Free the shared memory of this rank's exchanges on its node (collective: every
        rank, after its last run and gather). Without it that memory lasts until MPI
        finalises, one window per solve: close each solve of a script that makes many."""
        self.halo.close()

    def describe(self) -> str:
        """One line on the decomposition, for summaries."""
        sizes = sorted({slab.rows for slab in self.decomposition.slabs})
        rows = "-".join(str(v) for v in (sizes[0], sizes[-1])) if len(sizes) > 1 \
            else str(sizes[0])
        transport = getattr(self.halo, "transport", None)
        if self.overlapped:
            overlap = f" ({self.solver.describe()} on rank 0)"
        else:
            overlap = f" ({transport.describe()} on rank 0)" if transport else ""
        return (f"{self.world.size} ranks, 1-D slabs of {rows} rows{overlap}, "
                f"{self.decomposition.halo} ghost rows per side, exchange every {self.period} "
                f"steps; {plan_words(self.plan)}")


def kernel_rate(compute: Any, config: Any, dtype: Any, shape: tuple[int, int]) -> float:
    """Cells per second of ``config`` on a grid of ``shape``: the tuning cache's timing of its
    kernel for that size class, else a short run (:func:`oclsci.mpi.slabplan.kernel_rate`)."""
    return slab_kernel_rate(
        compute, cache_key(compute, dtype, shape), config.name,
        lambda: JacobiSolver(compute, np.zeros(shape, dtype), dtype=dtype, config=config),
        math.prod(shape))


def strip_us(compute: Any, config: Any, dtype: Any, n: int, period: int) -> float:
    """One strip's time per step at ``period`` (:func:`oclsci.mpi.slabplan.strip_step_us`): its
    S + 1 owned rows between S ghost rows a side, on ``config``, writing only the owned rows
    where one launch makes the period (as :class:`~oclsci.jacobi.overlap.JacobiPieces` does)."""
    def make_solver() -> JacobiSolver:
        return JacobiSolver(compute, np.zeros((3 * period + 1, n), dtype), dtype=dtype,
                            config=config,
                            rows_read=rows_written(config, period, (period, 2 * period + 1)))
    return strip_step_us(compute, make_solver, period)


# --------------------------------------------------------------------------------------------
# ``oclsci jacobi`` on several ranks


class SlabGrid:
    """The grid of a :class:`~oclsci.jacobi.driver.JacobiRun` in slabs of rows over the ranks
    of ``world`` (its :class:`~oclsci.jacobi.driver.GridLayout` under MPI).

    Rank 0 reads the input, scatters the rows, and at the end gathers the result and writes
    the outputs; ``--tol`` and stop signals are decided over all ranks.
    """

    def __init__(self, world: World):
        self.world = world

    def build(self, compute: Any, problem: Problem | None, start: Start,
              kernel: str) -> DistributedJacobi:
        """This rank's slab solver, its rows scattered from rank 0, ghost rows filled."""
        root = self.world.is_root
        distributed = DistributedJacobi(
            self.world, compute, start.shape, problem.rhs if root else None,
            problem.x0 if root else None, dtype=start.dtype, kernel=kernel,
            data_dtypes=(start.rhs_dtype, start.x0_dtype))
        distributed.start(start.iteration)
        return distributed

    def totals(self, result: JacobiResult,
               solve: DistributedJacobi) -> tuple[JacobiResult, str | None]:
        """The slowest rank's times, and a line on the slabs and exchanges (collective)."""
        device_seconds = self.world.allreduce_max(result.device_seconds)
        wall_seconds = self.world.allreduce_max(result.wall_seconds)
        exchange_seconds = self.world.allreduce_max(solve.halo.seconds)
        phases = ", ".join(f"{phase} {self.world.allreduce_max(seconds):.4f}"
                           for phase, seconds in solve.halo.phase_seconds.items())
        distribution = (f"{solve.describe()}; {solve.halo.exchanges} exchanges, "
                        f"{exchange_seconds:.4f} s at most on a rank ({phases}, each the "
                        f"largest on a rank)")
        if solve.overlapped:  # on every rank or none
            distribution += "; " + solve.halo.waits_summary()
        return dataclasses.replace(result, device_seconds=device_seconds,
                                   wall_seconds=wall_seconds), distribution

    def stopped(self, error: Interrupted, iteration: int, checkpoint: str | None) -> NoReturn:
        """Every rank saw the same stop request (the signal's number agreed): rank 0 reports
        it, the others exit with the same code, silently."""
        error = stop_error(error, iteration, checkpoint)
        if self.world.is_root:
            raise _agreed(error) from None
        raise _agreed(SystemExit(error.exit_code)) from None
