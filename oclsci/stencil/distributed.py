"""A stencil over MPI ranks: slabs of layers along the slowest axis (rows in 2-D, planes in
3-D), ghost layers exchanged as Jacobi's (:mod:`oclsci.mpi.slabs`), bit-identical to one
device.

Each rank runs the one-device solver on its slab: its owned layers and ``H = r S`` ghost
layers on each side (``r`` the stencil's radius, ``S`` the steps between exchanges), inside
the usual ring of ``r`` layers holding the boundary value (zero in the read-only fields). A
value that is wrong beyond the slab (the ring's, where the grid goes on) reaches ``r`` layers
further in each step, so after ``S`` steps only the ghost layers are wrong, and an exchange
makes them right again: every owned cell goes through the same operations as on one device,
whichever kernel runs. Ghost layers deeper than a neighbour's slab come from the ranks
beyond it. u.prev's ghost layers travel with u's.

Where the ranks want it (``OCLSCI_MPI_OVERLAP``, on GPUs by default) and the slabs are thick
enough, each slab is cut into strips of ``H`` layers facing the neighbours and an interior,
and the exchange runs behind the interior's steps (:mod:`oclsci.mpi.overlap`, as Jacobi's;
:class:`oclsci.stencil.overlap.StencilPieces` makes the pieces' solvers).

Rank 0 reads the inputs and scatters each rank's layers (u, u.prev, the fields), and gathers
the owned layers for checkpoints and the result. ``oclsci stencil`` runs this under
``mpiexec`` (:class:`SlabLayout`, the layout of :class:`oclsci.stencil.driver.StencilRun`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NoReturn

import numpy as np

from oclsci.checkpoints import stop_error
from oclsci.errors import Interrupted
from oclsci.mpi.overlap import OverlappedSlab
from oclsci.mpi.slabplan import ModelGrid, Workload, agreed_plan, measured_plan, plan_words
from oclsci.mpi.slabs import DEFAULT_MIN_EXCHANGE_STEPS, Decomposition, SlabHalo, exchange_period
from oclsci.mpi.subslabs import agreed_overlap, sub_slabs
from oclsci.mpi.world import TAG_GATHER, TAG_SCATTER, World, _agreed
from oclsci.stencil.kernels import StencilConfig, choose
from oclsci.stencil.overlap import StencilPieces
from oclsci.stencil.periodic import PeriodicGrid
from oclsci.stencil.problem import Problem
from oclsci.stencil.solver import NeededLayers, StencilSolver, padded_layout, stencil_geometry
from oclsci.stencil.tuner import kernel_rate, strip_us

# Overlapped in 3-D, a period updates at least this many planes of a rank's slab (at most a
# quarter of the slab's planes in steps): see DistributedStencil._period.
MIN_PLANE_STEPS = 600


def scatter_layers(world: World, decomposition: Decomposition, array: np.ndarray | None,
                   shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Rank 0's global ``array`` -> this rank's layers ``lo..hi-1`` (owned and ghost; around
    the grid's ends where it is periodic)."""
    slab = decomposition.slabs[world.rank]
    if world.is_root:
        for other in decomposition.slabs[1:]:
            world.send_array(decomposition.held(array, other.rank), other.rank, TAG_SCATTER)
        return np.array(decomposition.held(array, slab.rank))
    out = np.empty((slab.local_m, *shape[1:]), dtype=dtype)
    return world.recv_array(out, 0, TAG_SCATTER)


def gather_layers(world: World, decomposition: Decomposition,
                  owned: np.ndarray) -> np.ndarray | None:
    """Every rank's owned layers -> the global array on rank 0 (None on the others)."""
    if not world.is_root:
        world.send_array(owned, 0, TAG_GATHER)
        return None
    full = np.empty((decomposition.m, *owned.shape[1:]), dtype=owned.dtype)
    slab = decomposition.slabs[0]
    full[slab.first:slab.stop] = owned
    for other in decomposition.slabs[1:]:
        world.recv_array(full[other.first:other.stop], other.rank, TAG_GATHER)
    return full


class DistributedStencil:
    """This rank's slab of a stencil run over ``world``: its solver and halo (collective).

    ``skeleton``: the run's problem without its arrays (every rank's), ``shape`` the global
    grid's; ``problem``: the whole problem on rank 0 (None elsewhere), scattered from there.
    ``kernel`` and ``kernel_params`` as for :class:`StencilSolver`: rank 0 chooses the
    configurations for a slab's share of the grid (a tuned one first), and every rank tries
    them in order. ``exchange_every`` (or ``OCLSCI_MPI_EXCHANGE_EVERY``) sets the steps
    between exchanges. Where every rank wants the overlap (``OCLSCI_MPI_OVERLAP``: on GPUs by
    default) and the slabs are thick enough, each slab is cut into strips and an interior
    (:class:`oclsci.mpi.overlap.OverlappedSlab`) and the exchange runs behind the interior's
    steps; with ``auto`` (no parameters) the interior and the strips each run what ``auto``
    means for their shape.
    """

    def __init__(self, world: World, compute: Any, skeleton: Problem, shape: tuple[int, ...],
                 problem: Problem | None, *, kernel: str = "auto",
                 kernel_params: dict | None = None, exchange_every: int | None = None):
        self.world = world
        self.shape = tuple(shape)
        self.axis = "planes" if len(self.shape) == 3 else "rows"
        self.radius = radius = skeleton.expression.radius
        periodic = skeleton.periodic
        # A plan from the measured constants (oclsci tune --mpi), else the fixed rules;
        # periodic grids run whole slabs.
        measured = None if periodic else agreed_plan(  # the model knows no wrap
            world, compute, exchange_every, lambda constants: self._measured_plan(
                compute, skeleton, kernel, kernel_params, constants))
        self.plan = measured[0] if measured else None
        if measured:
            _, candidates, strip_candidates = measured
            exchange_every, overlap = self.plan.period, self.plan.overlapped
        else:
            overlap = agreed_overlap(world, compute)
            candidates, strip_candidates = world.bcast(world.agree(
                lambda: self._choose(compute, skeleton, kernel, kernel_params, overlap,
                                     exchange_every) if world.is_root else None))
        self.period = world.agree(self._period, candidates, strip_candidates, exchange_every,
                                  overlap)
        self.decomposition = world.agree(Decomposition.build, self.shape[0], self.shape[1],
                                         world.size, max(1, radius) * self.period, fixed=0,
                                         ring=radius, periodic=periodic and radius > 0)
        self.slab = self.decomposition.slabs[world.rank]
        root = problem if world.is_root else None

        def layers(array: np.ndarray | None) -> np.ndarray:
            return scatter_layers(world, self.decomposition, array, self.shape,
                                  skeleton.dtype)

        local = dataclasses.replace(
            skeleton, u0=layers(root and root.u0),
            prev0=layers(root and root.prev0) if skeleton.expression.uses_prev else None,
            fields={name: layers(root and root.fields[name])
                    for name in skeleton.expression.fields})
        self.grid = None  # a periodic slab's wrap along the other axes
        pieces = sub_slabs(self.decomposition) if overlap else None
        # Why the exchange is not overlapped although the ranks want it, for the summary.
        self.whole_because = "" if pieces is not None or not overlap else (
            f"; whole slabs, too thin to overlap the exchange (strips of "
            f"{self.decomposition.halo} {self.axis} beside an interior at least as high)")
        if pieces is not None:
            adapter = StencilPieces(compute, local, candidates, strip_candidates, self.period)
            self.solver = world.agree(lambda: OverlappedSlab(world, compute, self.slab, pieces,
                                                             adapter, period=self.period))
            self.halo = self.solver
            self.grid = next(iter(adapter.grids.values()), None)
        elif periodic:
            self.grid = world.agree(lambda: PeriodicGrid(
                compute, local, period=self.period, axes=tuple(range(1, len(self.shape))),
                candidates=candidates))
            self.solver = self.grid.solver
            self.halo = PeriodicSlabHalo(world, self.decomposition, self.period, self.grid)
        else:
            self.solver = world.agree(StencilSolver, compute, local, candidates=candidates)
            self.halo = SlabHalo(world, self.decomposition, self.period)

    def _period(self, candidates: list, strip_candidates: list, exchange_every: int | None,
                overlap: bool) -> int:
        """Steps between exchanges: a multiple of both first configurations' steps per launch,
        ghost layers of about DEFAULT_MIN_EXCHANGE_STEPS whatever the radius. Overlapped in
        3-D, the fewest whose slab updates MIN_PLANE_STEPS planes in a period (steps x the
        slab's planes): every ghost plane that a strip holds is recomputed at each step,
        which costs more than an exchange's latency on thick slabs (H200s, 512^3 per GPU:
        weak scaling 93.6% at 4 steps, 91.4% at 8; 1.5% faster at 3 than at 6), but a thin
        slab's period must outlast the exchange (four H200s, 128 planes a rank: 6 steps ran
        1.3x as fast as 3)."""
        radius = max(1, self.radius)
        launch = math.lcm(candidates[0].steps_per_launch, strip_candidates[0].steps_per_launch)
        if overlap and len(self.shape) == 3:
            planes = max(1, self.shape[0] // self.world.size)
            launches = min(math.ceil(MIN_PLANE_STEPS / planes / launch),
                           planes // (4 * radius * launch))
            steps = launch * max(1, launches)
        else:
            steps = math.ceil(DEFAULT_MIN_EXCHANGE_STEPS / radius)
        return exchange_period(launch, exchange_every, steps)

    def _choose(self, compute: Any, skeleton: Problem, kernel: str, params: dict | None,
                overlap: bool, exchange_every: int | None) -> tuple[list, list]:
        """Rank 0's candidates for the interior and for the strips: what ``kernel`` means for
        a slab's share of the grid, both; with the overlap and ``auto`` (no parameters), what
        it means for a middle rank's interior and for a strip, each a grid of its own, at the
        period both give (unless slabs that thick leave no room for strips)."""
        expression, dtype, rest = skeleton.expression, skeleton.dtype, self.shape[1:]
        radius = max(1, self.radius)

        def for_layers(count: int) -> list:
            geo = stencil_geometry(expression, (max(1, count),) + rest, dtype)
            return choose(compute, kernel, geo, expression, dtype, params)

        rows = max(1, self.shape[0] // self.world.size)
        whole = for_layers(rows)
        if not overlap or kernel != "auto" or params:
            return whole, whole
        period = self._period(whole, whole, exchange_every, True)
        for _ in range(3):  # the strips' height depends on the period, the period on them
            # A strip holds r S owned layers and r S ghost layers on each side: its kernel is
            # chosen for all of them, in one segment (its launches write a few layers only).
            interior = for_layers(rows - 2 * radius * period)
            strips = for_layers(3 * radius * period)
            chosen = self._period(interior, strips, exchange_every, True)
            if chosen == period:
                break
            period = chosen
        strips = [StencilConfig(c.name, {**c.params, "seg": 3 * radius * chosen})
                  if "seg" in c.params else c for c in strips]
        if sub_slabs(Decomposition.build(self.shape[0], self.shape[1], self.world.size,
                                         radius * chosen, fixed=0,
                                         periodic=skeleton.periodic)) is None:
            return whole, whole
        return interior, strips

    def _measured_plan(self, compute: Any, skeleton: Problem, kernel: str, params: dict | None,
                       constants: Any) -> tuple | None:
        """Rank 0's (plan, candidates, strip candidates) from measured ``constants``
        (:mod:`oclsci.mpi.slabplan`), or None; the model's row is ``r`` layers (``r`` the
        radius), so that S steps exchange about S + 1 of them."""
        m, rest, parts, radius = self.shape[0], self.shape[1:], self.world.size, max(1, self.radius)
        layer_bytes = skeleton.dtype.itemsize * math.prod(
            padded_layout(self.shape, self.radius)[1:])
        grid = ModelGrid(-(-m // radius), radius * math.prod(rest), radius * layer_bytes, parts,
                         levels=2 if skeleton.expression.uses_prev else 1, receive_buffers=1)
        work = Workload(
            choose=lambda overlapped, period: self._choose(compute, skeleton, kernel, params,
                                                           overlapped, period),
            steps=lambda candidates: candidates[0].steps_per_launch,
            rate=lambda interior, rows: kernel_rate(compute, skeleton, interior[0],
                                                    (radius * rows, *rest)),
            slabs=lambda period: Decomposition.build(m, self.shape[1], parts, radius * period,
                                                     fixed=0, ring=self.radius),
            strip_us=lambda strips, period: strip_us(
                compute, skeleton, strips, (3 * radius * period, *rest),
                NeededLayers(radius * period, 2 * radius * period, period)))
        return measured_plan(constants, grid, work)

    @property
    def overlapped(self) -> bool:
        """True when the exchange runs behind the interior's steps (on every rank)."""
        return isinstance(self.solver, OverlappedSlab)

    def start(self) -> None:
        """Nothing to exchange at the start: the scattered ghost layers are right."""

    def _owned(self) -> tuple[np.ndarray, np.ndarray | None]:
        """This rank's owned layers of u and (with u.prev, else None) of the previous level."""
        if not self.overlapped:
            parts = [(self.grid or self.solver, self.slab)]
        else:  # a periodic grid's pieces read through their grids (the widening cut off)
            grids = self.solver.adapter.grids
            parts = [(grids.get(solver, solver), piece) for index, piece
                     in sorted(self.solver.pieces.items())
                     for solver in [self.solver.solvers[index]]]
        u, prev = [], []
        for solver, slab in parts:
            owned = slice(slab.first - slab.lo, slab.stop - slab.lo)
            u.append(solver.read()[owned])
            level = solver.read_prev()
            prev.append(None if level is None else level[owned])
        return np.concatenate(u), None if prev[0] is None else np.concatenate(prev)

    def gather(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The field and (with u.prev) the previous level on rank 0; Nones elsewhere
        (collective)."""
        u, prev = self._owned()
        u = gather_layers(self.world, self.decomposition, u)
        if prev is not None:
            prev = gather_layers(self.world, self.decomposition, prev)
        return u, prev

    def boundary(self) -> str | None:
        """How periodic boundaries ran on rank 0, for the summary (None: a boundary value)."""
        return self.grid.describe() if self.grid is not None else None

    def close(self) -> None:
        """Free the shared memory of this rank's exchanges on its node (collective: every
        rank, after its last steps and gather)."""
        self.halo.close()

    def ready(self) -> None:
        """Wait for every rank to have its slab on its device (collective), so that the
        steps' times leave out the ranks' different start-up times."""
        self.world.comm.Barrier()

    def slowest(self, seconds: float) -> float:
        """The largest of every rank's ``seconds`` (collective)."""
        return self.world.allreduce_max(seconds)

    def describe(self) -> str:
        """One line on the slabs and their exchanges, for summaries (collective)."""
        sizes = sorted({slab.rows for slab in self.decomposition.slabs})
        layers = "-".join(str(v) for v in (sizes[0], sizes[-1])) if len(sizes) > 1 \
            else str(sizes[0])
        axis = self.axis
        if self.overlapped:
            route = f" ({self.solver.describe(axis)} on rank 0)"
            waits = "; " + self.solver.waits_summary()
        else:
            transport = self.halo.transport
            route = f" ({transport.describe()} on rank 0)" if transport else ""
            waits = self.whole_because
        return (f"{self.world.size} ranks, slabs of {layers} {axis}{route}, "
                f"{self.decomposition.halo} ghost {axis} per side, exchange every "
                f"{self.period} steps; {plan_words(self.plan)}; {self.halo.exchanges} "
                f"exchanges{waits}")


class PeriodicSlabHalo(SlabHalo):
    """The halo of a periodic grid's slab: the ghost layers from the ranks (the first and
    last slabs' from each other), then the wrap along the slab's other axes, on every layer
    the rank holds (``grid``, a :class:`~oclsci.stencil.periodic.PeriodicGrid` of them): the
    exchanged layers carry their own stale ghost cells, which the wrap then rewrites."""

    def __init__(self, world: World, decomposition: Decomposition, period: int, grid: Any):
        super().__init__(world, decomposition, period)
        self.grid = grid

    def exchange(self, solver: Any) -> None:
        """The layers from the ranks, then the wrap (enqueued after them)."""
        super().exchange(solver)
        self.grid.exchange(solver)


class SlabLayout:
    """The grid of a :class:`~oclsci.stencil.driver.StencilRun` in slabs over the ranks of
    ``world``: rank 0 reads, scatters, gathers and writes; stops are agreed over ranks."""

    def __init__(self, world: World):
        self.world = world

    def build(self, compute: Any, skeleton: Problem, shape: tuple[int, ...],
              problem: Problem | None, job: Any) -> DistributedStencil:
        """This rank's slab solver, its layers scattered from rank 0."""
        return DistributedStencil(self.world, compute, skeleton, shape, problem,
                                  kernel=job.kernel, kernel_params=dict(job.kernel_params)
                                  or None)

    def stopped(self, error: Interrupted, step: int, checkpoint: str | None) -> NoReturn:
        """Every rank saw the same stop: rank 0 reports it, the others exit with its code,
        silently."""
        error = stop_error(error, step, checkpoint, "step")
        if self.world.is_root:
            raise _agreed(error) from None
        raise _agreed(SystemExit(error.exit_code)) from None
