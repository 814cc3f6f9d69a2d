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
from oclsci.mpi.slabs import DEFAULT_MIN_EXCHANGE_STEPS, Decomposition, SlabHalo, exchange_period
from oclsci.mpi.world import TAG_GATHER, TAG_SCATTER, World, _agreed
from oclsci.stencil.kernels import choose
from oclsci.stencil.problem import Problem
from oclsci.stencil.solver import StencilSolver, stencil_geometry


def scatter_layers(world: World, decomposition: Decomposition, array: np.ndarray | None,
                   shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Rank 0's global ``array`` -> this rank's layers ``lo..hi-1`` (owned and ghost)."""
    slab = decomposition.slabs[world.rank]
    if world.is_root:
        for other in decomposition.slabs[1:]:
            world.send_array(array[other.lo:other.hi], other.rank, TAG_SCATTER)
        return array[slab.lo:slab.hi].copy()
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
    them in order.
    ``exchange_every`` (or ``OCLSCI_MPI_EXCHANGE_EVERY``) sets the steps between exchanges.
    """

    def __init__(self, world: World, compute: Any, skeleton: Problem, shape: tuple[int, ...],
                 problem: Problem | None, *, kernel: str = "auto",
                 kernel_params: dict | None = None, exchange_every: int | None = None):
        self.world = world
        self.shape = tuple(shape)
        radius = skeleton.expression.radius
        share = stencil_geometry(skeleton.expression,
                                 (max(1, self.shape[0] // world.size),) + self.shape[1:],
                                 skeleton.dtype)
        candidates = world.bcast(world.agree(
            lambda: choose(compute, kernel, share, skeleton.expression, skeleton.dtype,
                           kernel_params) if world.is_root else None))
        # Ghost layers of about DEFAULT_MIN_EXCHANGE_STEPS, whatever the radius.
        self.period = world.agree(exchange_period, candidates[0].steps_per_launch,
                                  exchange_every,
                                  math.ceil(DEFAULT_MIN_EXCHANGE_STEPS / max(1, radius)))
        self.decomposition = world.agree(Decomposition.build, self.shape[0], self.shape[1],
                                         world.size, max(1, radius) * self.period, fixed=0,
                                         ring=radius)
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
        self.solver = world.agree(StencilSolver, compute, local, candidates=candidates)
        self.halo = SlabHalo(world, self.decomposition, self.period)

    def start(self) -> None:
        """Nothing to exchange at the start: the scattered ghost layers are right."""

    def gather(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The field and (with u.prev) the previous level on rank 0; Nones elsewhere
        (collective)."""
        owned = slice(self.slab.first - self.slab.lo, self.slab.stop - self.slab.lo)
        u = gather_layers(self.world, self.decomposition, self.solver.read()[owned])
        prev = self.solver.read_prev()
        if prev is not None:
            prev = gather_layers(self.world, self.decomposition, prev[owned])
        return u, prev

    def describe(self) -> str:
        """One line on the slabs and their exchanges, for summaries."""
        sizes = sorted({slab.rows for slab in self.decomposition.slabs})
        layers = "-".join(str(v) for v in (sizes[0], sizes[-1])) if len(sizes) > 1 \
            else str(sizes[0])
        axis = "planes" if len(self.shape) == 3 else "rows"
        transport = self.halo.transport
        route = f" ({transport.describe()} on rank 0)" if transport else ""
        return (f"{self.world.size} ranks, slabs of {layers} {axis}{route}, "
                f"{self.decomposition.halo} ghost {axis} per side, exchange every "
                f"{self.period} steps; {self.halo.exchanges} exchanges")


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
