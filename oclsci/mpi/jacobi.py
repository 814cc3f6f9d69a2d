"""A distributed Jacobi solve: scatter, gather, checkpoints and the ``oclsci jacobi`` driver.

Every cell goes through the same arithmetic as on one device, so results are bit-identical to
the one-device run for any number of ranks (see :mod:`oclsci.mpi.slabs` and docs/mpi.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from oclsci.mpi.slabs import Decomposition, SlabHalo, exchange_period
from oclsci.mpi.world import TAG_GATHER, TAG_SCATTER, World, _agreed, _test_failure

# --------------------------------------------------------------------------------------------
# A distributed Jacobi solve


RowSource = Callable[[int, int], np.ndarray]


def scatter_rows(world: World, decomposition: Decomposition, array: np.ndarray | None,
                 shape_dtype: tuple[tuple[int, int], str]) -> np.ndarray:
    """Rank 0's global ``array`` -> this rank's rows ``lo..hi-1`` (owned and ghost rows)."""
    (m, n), dtype = shape_dtype
    slab = decomposition.slabs[world.rank]
    if world.is_root:
        array = np.ascontiguousarray(array)
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
    used on every rank, so all ranks advance the same steps per launch.
    """

    def __init__(self, world: World, compute: Any, shape: tuple[int, int], rhs: Any,
                 x0: Any = None, *, dtype: Any = np.float32, kernel: str = "auto",
                 config: Any = None, exchange_every: int | None = None,
                 data_dtypes: tuple[str, str | None] | None = None):
        from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config

        self.world = world
        self.compute = compute
        self.m, self.n = (int(v) for v in shape)
        self.dtype = np.dtype(dtype)
        if config is None:
            config = world.agree(lambda: choose_fitting_config(
                compute, kernel, self.dtype, (max(1, self.m // world.size), self.n))
                if world.is_root else None)
            config = world.bcast(config)
        self.config = config
        self.period = world.agree(exchange_period, config.steps_per_launch, exchange_every)
        self.decomposition = world.agree(Decomposition.build, self.m, self.n, world.size,
                                         self.period)
        self.slab = self.decomposition.slabs[world.rank]
        rhs_dtype, x0_dtype = data_dtypes or (str(self.dtype), str(self.dtype))
        rhs_rows = self._rows(rhs, rhs_dtype)
        x0_rows = None if x0 is None and x0_dtype is None else self._rows(x0, x0_dtype)

        def build() -> JacobiSolver:
            _test_failure(world, "setup")
            return JacobiSolver(compute, rhs_rows, x0=x0_rows, dtype=self.dtype, config=config)

        self.solver = world.agree(build)
        self.halo = SlabHalo(world, self.decomposition, self.period)

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
        from oclsci.jacobi.solver import run

        return run(self.solver, iterations, halo=self.halo, **options)

    def describe(self) -> str:
        """One line on the decomposition, for summaries."""
        sizes = sorted({slab.rows for slab in self.decomposition.slabs})
        rows = "-".join(str(v) for v in (sizes[0], sizes[-1])) if len(sizes) > 1 \
            else str(sizes[0])
        return (f"{self.world.size} ranks, 1-D slabs of {rows} rows, {self.decomposition.halo} "
                f"ghost rows per side, exchange every {self.period} steps")


# --------------------------------------------------------------------------------------------
# The ``oclsci jacobi`` command on several ranks


@dataclass
class _Start:
    """What rank 0 tells the other ranks once it has read the input."""

    shape: tuple[int, int]
    rhs_dtype: str
    x0_dtype: str | None
    iteration: int
    show_progress: bool


def jacobi_distributed(world: World, prepare: Callable[[], Any], *, output, iterations, tol,
                       check_every, dtype, kernel, device, checkpoint, checkpoint_every,
                       compare, quiet) -> None:
    """``oclsci jacobi`` over the ranks of ``world`` (see :func:`jacobi_command`).

    Rank 0 runs ``prepare()`` (option checks and reading the input), scatters the rows, and
    at the end gathers the result, writes the outputs and prints; ``--tol`` and stop signals
    are decided over all ranks. An error that all ranks see is printed once by rank 0; an
    error on one rank during the run prints one line and aborts every rank.
    """
    world.run_guarded(_jacobi_distributed, world, prepare, output=output,
                      iterations=iterations, tol=tol, check_every=check_every, dtype=dtype,
                      kernel=kernel, device=device, checkpoint=checkpoint,
                      checkpoint_every=checkpoint_every, compare=compare, quiet=quiet)


def _jacobi_distributed(world: World, prepare, *, output, iterations, tol, check_every, dtype,
                        kernel, device, checkpoint, checkpoint_every, compare, quiet) -> None:
    from oclsci.cli.jacobi import StopFlag, _progress_bar, print_summary
    from oclsci.errors import Interrupted
    from oclsci.io import side_by_side, write_array, write_image
    from oclsci.jacobi.checkpoint import Checkpoint, save_checkpoint
    from oclsci.jacobi.solver import check_finite, validate_rhs
    from oclsci.runtime.device import create_context

    def read_input():
        if not world.is_root:
            return None
        problem = prepare()
        validate_rhs(problem.rhs)
        if problem.x0 is not None:
            validate_rhs(problem.x0)
        problem.rhs = np.ascontiguousarray(problem.rhs)
        show = not quiet and sys.stderr.isatty() and iterations > problem.iteration
        start = _Start(problem.rhs.shape, problem.rhs.dtype.str,
                       None if problem.x0 is None else problem.x0.dtype.str,
                       problem.iteration, show)
        return problem, start

    prepared = world.agree(read_input)
    problem, start = prepared if world.is_root else (None, None)
    start = world.bcast(start)

    compute = world.agree(create_context, device, quiet=True, local_rank=world.local_rank,
                          local_ranks=world.local_ranks)
    banners = world.comm.gather(f"oclsci: rank {world.rank}: " + compute.banner()[len("oclsci: "):],
                                root=0)
    if world.is_root and not quiet:
        print("\n".join(banners), file=sys.stderr)

    job = DistributedJacobi(
        world, compute, start.shape, problem.rhs if world.is_root else None,
        problem.x0 if world.is_root else None, dtype=dtype, kernel=kernel,
        data_dtypes=(start.rhs_dtype, start.x0_dtype))
    job.start(start.iteration)

    def write_checkpoint(solver) -> None:
        x = job.gather()
        if world.is_root:
            save_checkpoint(checkpoint, Checkpoint(x=x, rhs=problem.rhs,
                                                   iteration=solver.iteration,
                                                   original=problem.original))

    bar = progress = None
    if start.show_progress:
        if world.is_root:
            bar, progress = _progress_bar(iterations, start.iteration)
        else:
            def progress(done: int, total: int) -> None:
                """Other ranks take the same steps between synchronisations as rank 0."""
    with StopFlag() as stop_flag:
        try:
            result = job.run(iterations, tol=tol, check_every=check_every,
                             checkpoint=write_checkpoint if checkpoint else None,
                             checkpoint_every=checkpoint_every, progress=progress,
                             should_stop=stop_flag)
        except Interrupted as error:  # every rank saw the same stop request
            if world.is_root:
                raise _agreed(error) from None
            raise _agreed(SystemExit(error.exit_code)) from None
        finally:
            if bar is not None:
                bar.render_finish()
    device_seconds = world.allreduce_max(result.device_seconds)
    wall_seconds = world.allreduce_max(result.wall_seconds)
    exchange_seconds = world.allreduce_max(job.halo.seconds)
    x = job.gather()
    if checkpoint:
        write_checkpoint(job.solver)

    def finish() -> None:
        if not world.is_root:
            return
        check_finite(x)  # an overflowed run writes no output
        if output:
            write_array(output, x)
        if compare:
            write_image(compare, side_by_side(problem.original if problem.original is not None
                                              else problem.rhs, x))
        if not quiet:
            result.device_seconds, result.wall_seconds = device_seconds, wall_seconds
            grid = _GlobalGrid(job.m, job.n, job.dtype, job.config)
            print_summary(compute, grid, result, problem, x)
            print(f"mpi         {job.describe()}; {job.halo.exchanges} exchanges, "
                  f"{exchange_seconds:.4f} s at most on a rank")

    world.agree(finish)


@dataclass
class _GlobalGrid:
    """What :func:`print_summary` reads from a solver, for the whole distributed grid."""

    m: int
    n: int
    dtype: np.dtype
    config: Any
