"""Several MPI ranks, one per device: world detection, slabs, halo exchange, scatter and gather.

This is the only module that knows about MPI; the solvers stay MPI-free. ``mpi4py`` is
imported only when a launcher announces more than one rank (``mpiexec``/``mpirun`` of MPICH,
Open MPI, Intel MPI or MVAPICH, ``srun`` with several tasks) or when ``OCLSCI_MPI=1``;
``OCLSCI_MPI=0`` turns all of this off. Without mpi4py, or in a world of one rank,
:func:`mpi_world` returns None and every command runs exactly as on one device.

Jacobi: the grid is cut into 1-D slabs of whole rows. Each rank holds its owned rows, ``H``
ghost rows on each side (updated by the kernels like any other row) and one fixed row beyond
them. Errors from a stale fixed row travel one row per step, so after ``S <= H`` steps the
owned rows are still exact: ranks exchange ``H + 1`` rows with their neighbours once every
``S`` steps (``S`` a multiple of the kernel's steps per launch), and every cell goes through the
same arithmetic as on one device, so results are bit-identical to the one-device run for any
number of ranks. See docs/mpi.md.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InputError, OclsciError

# Launcher variables holding the number of ranks, in order of trust.
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                  "SLURM_STEP_NUM_TASKS")
# Variables that mean "started by an MPI launcher" without giving the size.
PRESENCE_VARIABLES = ("PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK")
# Steps between exchanges when the kernel does one step per launch (seed, coalesced).
DEFAULT_MIN_EXCHANGE_STEPS = 8
# Largest message sent in one piece (mpi4py and MPI-3 libraries count in int).
MAX_MESSAGE_BYTES = 1 << 30
TAG_HALO, TAG_SCATTER, TAG_GATHER = 61, 62, 63
TEST_FAIL_VARIABLE = "OCLSCI_MPI_TEST_FAIL"  # "RANK:ITERATION" or "RANK:setup" (tests only)


class RankError(OclsciError):
    """Another rank's error, reported once by rank 0 with that rank's exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


# --------------------------------------------------------------------------------------------
# Finding the world


def launcher_world_size(environ: dict[str, str] | None = None) -> int | None:
    """The number of ranks a launcher announces: an int, 0 when it is unknown, else None."""
    environ = os.environ if environ is None else environ
    for name in SIZE_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    if any(name in environ for name in PRESENCE_VARIABLES):
        return 0
    return None


def wants_mpi(environ: dict[str, str] | None = None) -> bool:
    """True when mpi4py must be imported: OCLSCI_MPI=1, or a launcher announced > 1 rank."""
    environ = os.environ if environ is None else environ
    setting = environ.get("OCLSCI_MPI", "").strip().lower()
    if setting in ("0", "no", "off", "false"):
        return False
    if setting in ("1", "yes", "on", "true"):
        return True
    size = launcher_world_size(environ)
    return size is not None and size != 1


_WORLD: Any = False  # not looked for yet


def mpi_world(environ: dict[str, str] | None = None) -> World | None:
    """The MPI world when this process is one of several ranks, else None (cheap, memoised).

    Imports mpi4py only when :func:`wants_mpi`; sets this rank's cache folders (see
    :func:`use_rank_cache_dirs`), so call it before any OpenCL context is created.
    """
    global _WORLD
    if _WORLD is not False:
        return _WORLD
    environ = os.environ if environ is None else environ
    if not wants_mpi(environ):
        _WORLD = None
        return None
    announced = launcher_world_size(environ)
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise InputError(
            f"started as {announced or 'several'} MPI ranks but mpi4py cannot be imported "
            f"({error}): pip install 'oclsci[mpi]', or set OCLSCI_MPI=0 to run independent "
            "copies") from None
    comm = MPI.COMM_WORLD
    if comm.Get_size() == 1:
        if announced and announced > 1:
            raise InputError(
                f"the launcher started {announced} tasks but MPI sees a world of one rank: "
                "mpi4py's MPI library does not match the launcher (use that MPI's mpiexec, or "
                "`srun --mpi=pmix` / `--mpi=pmi2`); set OCLSCI_MPI=0 to run independent copies")
        _WORLD = None
        return None
    _WORLD = World(comm)
    use_rank_cache_dirs(_WORLD.rank, environ)
    return _WORLD


def use_rank_cache_dirs(rank: int, environ: Any = None) -> str:
    """Give this rank its own PoCL and PyOpenCL cache folders; return the folder.

    PoCL can crash when processes share its kernel cache, and PyOpenCL's cache lock in an NFS
    home blocks other nodes. The folder is ``$OCLSCI_CACHE_DIR`` (default
    ``$XDG_CACHE_HOME/oclsci/ranks``) / ``HOST[-jobJOB]-rRANK``: kept from run to run, apart
    between hosts, Slurm jobs and ranks. ``POCL_CACHE_DIR`` set by the user gets a
    per-rank subfolder; ``XDG_CACHE_HOME`` (PyOpenCL's cache) is pointed into the folder, and
    ``OCLSCI_TUNE_CACHE`` (unless set) to the user's tuning cache, which stays shared. Must
    run before PoCL is loaded (before the first context).
    """
    environ = os.environ if environ is None else environ
    user_cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    base = environ.get("OCLSCI_CACHE_DIR") or os.path.join(user_cache, "oclsci", "ranks")
    host = socket.gethostname().split(".")[0] or "host"
    job = environ.get("SLURM_JOB_ID", "").strip()
    tag = f"{host}-job{job}-r{rank}" if job else f"{host}-r{rank}"
    folder = os.path.join(base, tag)
    pocl = os.path.join(environ["POCL_CACHE_DIR"], tag) if environ.get("POCL_CACHE_DIR") \
        else os.path.join(folder, "pocl")
    xdg = os.path.join(folder, "xdg")
    for path in (pocl, xdg):
        os.makedirs(path, exist_ok=True)
    # oclsci's own tuning cache stays where the user's runs keep it (read by rank 0 only).
    environ.setdefault("OCLSCI_TUNE_CACHE", os.path.join(user_cache, "oclsci", "tuning.json"))
    environ["POCL_CACHE_DIR"] = pocl
    environ["XDG_CACHE_HOME"] = xdg
    return folder


def exit_code_of(error: BaseException) -> int:
    """The exit code the CLI gives ``error``."""
    if isinstance(error, OclsciError):
        return int(error.exit_code)
    if isinstance(error, KeyboardInterrupt):
        return 130
    signum = getattr(error, "signum", None)
    if isinstance(signum, int):
        return 128 + signum
    return 1


def one_line(error: BaseException) -> str:
    """``error`` as the one line the CLI prints for it."""
    if isinstance(error, OclsciError):
        text = str(error)
    else:
        name = type(error).__name__
        if type(error).__module__.startswith("pyopencl"):
            name = "OpenCL"
        text = f"{name}: {error}" if str(error) else name
    return (text.strip().splitlines() or [type(error).__name__])[0]


def _agreed(error: BaseException) -> BaseException:
    error.oclsci_agreed = True  # every rank knows: no abort needed
    return error


class World:
    """An MPI communicator with the helpers oclsci needs (rank 0 is the root)."""

    def __init__(self, comm: Any, local_rank: int | None = None):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._local_rank = local_rank

    @property
    def is_root(self) -> bool:
        """True on rank 0, which reads inputs, writes outputs and prints."""
        return self.rank == 0

    @property
    def local_rank(self) -> int:
        """This rank's index among the ranks of its node (for the device binding)."""
        if self._local_rank is None:
            from .device import node_local_rank

            local = node_local_rank()
            if local is None:
                shared = self.comm.Split_type(self.MPI.COMM_TYPE_SHARED)
                local = shared.Get_rank()
                shared.Free()
            self._local_rank = local
        return self._local_rank

    def split(self, size: int) -> World | None:
        """A world of ranks 0..size-1 (None on the others); collective."""
        colour = 0 if self.rank < size else self.MPI.UNDEFINED
        comm = self.comm.Split(colour, self.rank)
        return World(comm, self._local_rank) if self.rank < size else None

    def bcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        return self.comm.bcast(value, root=0)

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""
        return self.comm.allreduce(float(value), op=self.MPI.SUM)

    def allreduce_max(self, value: float) -> float:
        """The largest ``value`` over ranks."""
        return self.comm.allreduce(float(value), op=self.MPI.MAX)

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when ``flag`` is true on any."""
        return bool(self.comm.allreduce(bool(flag), op=self.MPI.LOR))

    def agree(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function`` on every rank; if it failed on any, fail on every rank.

        Collective. Rank 0 raises its own error, or :class:`RankError` with the one line of
        the lowest failing rank; the other ranks raise ``SystemExit`` with the same exit code
        (nothing printed), so the error shows once and no rank waits for another.
        """
        error = None
        try:
            result = function(*args, **kwargs)
        except Exception as caught:  # noqa: BLE001 - reported collectively below
            error, result = caught, None
        status = None if error is None else (exit_code_of(error), one_line(error))
        statuses = self.comm.allgather(status)
        failed = [(rank, status) for rank, status in enumerate(statuses) if status is not None]
        if not failed:
            return result
        rank, (code, message) = failed[0]
        if self.is_root:
            if rank == 0:
                raise _agreed(error)
            raise _agreed(RankError(f"rank {rank}: {message}", code))
        raise _agreed(SystemExit(code))

    def abort(self, error: BaseException) -> None:
        """Print one line for ``error`` and end every rank (MPI_Abort) with its exit code."""
        code = exit_code_of(error)
        if "--debug" in sys.argv:
            traceback.print_exception(type(error), error, error.__traceback__)
        sys.stderr.write(f"oclsci: error: rank {self.rank} of {self.size}: "
                         f"{one_line(error)}\n")
        sys.stderr.flush()
        try:
            self.comm.Abort(code)
        finally:  # MPICH's MPI_Abort can return once the launcher has the message
            os._exit(code)

    def run_guarded(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function``: errors every rank agreed on pass, any other aborts every rank."""
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            if getattr(error, "oclsci_agreed", False) or (
                    isinstance(error, SystemExit) and not error.code):
                raise
            self.abort(error)
            raise

    # Point-to-point transfers of large arrays, in pieces of at most MAX_MESSAGE_BYTES.

    def send_array(self, array: np.ndarray, dest: int, tag: int) -> None:
        """Send a C-contiguous array (the receiver knows its shape and dtype)."""
        flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        for start in range(0, max(flat.size, 1), MAX_MESSAGE_BYTES):
            self.comm.Send(flat[start:start + MAX_MESSAGE_BYTES], dest=dest, tag=tag)

    def recv_array(self, out: np.ndarray, source: int, tag: int) -> np.ndarray:
        """Receive into the C-contiguous array ``out``, as sent by :meth:`send_array`."""
        flat = out.reshape(-1).view(np.uint8)
        for start in range(0, max(flat.size, 1), MAX_MESSAGE_BYTES):
            self.comm.Recv(flat[start:start + MAX_MESSAGE_BYTES], source=source, tag=tag)
        return out


def _test_failure(world: World | None, where: str, iteration: int | None = None) -> None:
    """Raise the failure that ``OCLSCI_MPI_TEST_FAIL=RANK:WHERE`` asks for (tests only)."""
    setting = os.environ.get(TEST_FAIL_VARIABLE, "")
    if not setting or world is None:
        return
    rank_text, _, when = setting.partition(":")
    if not rank_text.strip().isdigit() or int(rank_text) != world.rank:
        return
    if when == where or (where == "exchange" and when.isdigit() and iteration is not None
                         and iteration >= int(when)):
        raise RuntimeError(f"injected failure ({TEST_FAIL_VARIABLE}={setting})")


# --------------------------------------------------------------------------------------------
# Decomposition


def split_rows(rows: int, parts: int) -> list[tuple[int, int]]:
    """``(first, stop)`` of each of ``parts`` contiguous blocks of nearly equal size (the first
    ``rows % parts`` blocks get one more row)."""
    base, extra = divmod(int(rows), int(parts))
    bounds, start = [], 0
    for part in range(parts):
        stop = start + base + (1 if part < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


@dataclass(frozen=True)
class Slab:
    """One rank's rows. Global interior rows are numbered 0..m-1; the rank owns
    ``first..stop-1`` and holds ``lo..hi-1`` (owned rows and ghost rows) as interior rows of
    its local grid, with fixed rows ``lo-1`` and ``hi`` (global boundary zeros at the ends)."""

    rank: int
    first: int
    stop: int
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        """Owned rows."""
        return self.stop - self.first

    @property
    def local_m(self) -> int:
        """Interior rows of the local grid (owned and ghost)."""
        return self.hi - self.lo

    def local(self, row: int) -> int:
        """Padded local row number of global interior row ``row``."""
        return row - self.lo + 1

    @property
    def owned_local(self) -> tuple[int, int]:
        """First and last padded local rows that this rank owns."""
        return self.local(self.first), self.local(self.stop - 1)


@dataclass(frozen=True)
class Decomposition:
    """1-D slabs of an m x n grid over ``parts`` ranks with ``halo`` ghost rows per side."""

    m: int
    n: int
    parts: int
    halo: int
    slabs: tuple = field(default=())

    @classmethod
    def build(cls, m: int, n: int, parts: int, halo: int) -> Decomposition:
        """Cut ``m`` rows into ``parts`` slabs; refuse slabs without rows."""
        if parts > m:
            raise InputError(f"{parts} MPI ranks for a grid of {m} rows: each rank needs at "
                             f"least one row; use at most {m} ranks")
        if halo < 1:
            raise InputError(f"halo width must be >= 1, got {halo}")
        slabs = tuple(Slab(rank, first, stop, max(0, first - halo), min(m, stop + halo))
                      for rank, (first, stop) in enumerate(split_rows(m, parts)))
        return cls(m, n, parts, halo, slabs)

    def needed(self, rank: int) -> list[tuple[int, int]]:
        """Global rows ``(start, stop)`` that ``rank`` receives at each exchange: its ghost
        rows and fixed rows, above then below (global boundary rows excluded)."""
        slab = self.slabs[rank]
        ranges = [(max(0, slab.lo - 1), slab.first), (slab.stop, min(self.m, slab.hi + 1))]
        return [(a, b) for a, b in ranges if b > a]

    def transfers(self) -> list[tuple[int, int, int, int]]:
        """Every ``(source, dest, start, stop)``: rows start..stop-1 go from source to dest."""
        moves = []
        for dest in range(self.parts):
            for start, stop in self.needed(dest):
                for source, slab in enumerate(self.slabs):
                    a, b = max(start, slab.first), min(stop, slab.stop)
                    if b > a and source != dest:
                        moves.append((source, dest, a, b))
        return moves

    def halo_bytes_per_exchange(self, rank: int, itemsize: int, row_stride: int) -> int:
        """Bytes that ``rank`` receives at each exchange."""
        return sum(b - a for a, b in self.needed(rank)) * row_stride * itemsize


def exchange_period(steps_per_launch: int, requested: int | None = None) -> int:
    """Steps between halo exchanges (= ghost rows per side).

    The smallest multiple of the kernel's steps per launch that is at least
    ``DEFAULT_MIN_EXCHANGE_STEPS`` (16 for the GPU blocked kernel, 8 for the others), unless
    ``requested`` or ``OCLSCI_MPI_EXCHANGE_EVERY`` names one.
    """
    steps_per_launch = max(1, int(steps_per_launch))
    if requested is None:
        text = os.environ.get("OCLSCI_MPI_EXCHANGE_EVERY", "").strip()
        if text:
            if not text.isdigit() or int(text) < 1:
                raise InputError(f"OCLSCI_MPI_EXCHANGE_EVERY must be a positive integer, "
                                 f"got {text!r}")
            requested = int(text)
    if requested is not None:
        if requested < 1:
            raise InputError(f"exchange period must be >= 1, got {requested}")
        return int(requested)
    return steps_per_launch * max(1, math.ceil(DEFAULT_MIN_EXCHANGE_STEPS / steps_per_launch))


# --------------------------------------------------------------------------------------------
# Halo exchange


class SlabHalo:
    """The ``halo`` object that :func:`oclsci.jacobi.run` drives on one rank of a slab run.

    ``exchange`` posts the receives of ghost and fixed rows, copies the rows that other ranks
    need to the host, sends them (all non-blocking, both neighbours at once), then writes the
    received rows into the local grid; ``allreduce_sum`` and ``any_rank`` work over ranks.
    """

    def __init__(self, world: World, decomposition: Decomposition, period: int | None = None):
        self.world = world
        self.decomposition = decomposition
        self.slab = decomposition.slabs[world.rank]
        self.steps_between_exchanges = int(period or decomposition.halo)
        if self.steps_between_exchanges > decomposition.halo:
            raise InputError(f"exchange period {self.steps_between_exchanges} exceeds the halo "
                             f"width {decomposition.halo}")
        moves = decomposition.transfers()
        self.sends = [(dest, a, b) for source, dest, a, b in moves if source == world.rank]
        self.receives = [(source, a, b) for source, dest, a, b in moves if dest == world.rank]
        self.blocks = decomposition.needed(world.rank)  # contiguous row ranges written back
        self._buffers: dict = {}
        self.exchanges = 0
        self.seconds = 0.0
        self.bytes_received = 0

    def _host_rows(self, key: Any, rows: int, solver: Any) -> np.ndarray:
        """A kept host array of ``rows`` padded rows, in pinned (page-locked) memory when
        the OpenCL driver gives it (faster copies to and from GPUs)."""
        key = (key, rows, solver.row_stride, solver.dtype.str)
        if key not in self._buffers:
            shape = (rows, solver.row_stride)
            try:
                import pyopencl as cl

                compute = solver.compute
                buffer = cl.Buffer(compute.context,
                                   cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                                   rows * solver.row_stride * solver.dtype.itemsize)
                array, _ = cl.enqueue_map_buffer(
                    compute.queue, buffer, cl.map_flags.READ | cl.map_flags.WRITE, 0, shape,
                    solver.dtype, is_blocking=True)
                self._buffers[key] = (array, buffer)
            except Exception:  # noqa: BLE001 - plain memory works too, only slower
                self._buffers[key] = (np.empty(shape, dtype=solver.dtype), None)
        return self._buffers[key][0]

    def _read_rows(self, solver: Any, first: int, out: np.ndarray) -> Any:
        """Start copying padded rows from ``first`` into ``out``; return an event or None."""
        buffer = getattr(solver, "x_buffer", None)
        if buffer is None:
            out[...] = solver.read_rows(first, len(out))
            return None
        import pyopencl as cl

        return cl.enqueue_copy(solver.compute.queue, out, buffer, is_blocking=False,
                               src_offset=first * solver.row_stride * solver.dtype.itemsize)

    def exchange(self, solver: Any) -> None:
        """Refresh this rank's ghost and fixed rows from the ranks that own them."""
        _test_failure(self.world, "exchange", solver.iteration)
        if not self.sends and not self.receives:
            return
        solver.compute.queue.finish()  # the steps before count as compute, not as exchange
        started = time.perf_counter()
        comm = self.world.comm
        blocks = [(start, self._host_rows(("in", index), stop - start, solver))
                  for index, (start, stop) in enumerate(self.blocks)]
        receive_requests = []
        for source, a, b in self.receives:
            for start, block in blocks:
                if start <= a and b <= start + len(block):
                    receive_requests.append(
                        comm.Irecv(block[a - start:b - start], source=source, tag=TAG_HALO))
                    break
        outgoing = [(dest, self._host_rows(("out", dest), b - a, solver), a)
                    for dest, a, b in self.sends]
        events = [self._read_rows(solver, self.slab.local(a), rows) for _, rows, a in outgoing]
        events = [event for event in events if event is not None]
        if events:
            import pyopencl as cl

            cl.wait_for_events(events)
        send_requests = [comm.Isend(rows, dest=dest, tag=TAG_HALO) for dest, rows, _ in outgoing]
        self.world.MPI.Request.Waitall(receive_requests)
        for start, block in blocks:
            solver.write_rows(self.slab.local(start), block)
            self.bytes_received += block.nbytes
        self.world.MPI.Request.Waitall(send_requests)
        self.exchanges += 1
        self.seconds += time.perf_counter() - started

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""
        return self.world.allreduce_sum(value)

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when true on any (stop requests)."""
        return self.world.any_rank(flag)

    def owned_rows(self, solver: Any) -> tuple[int, int]:
        """Padded local rows this rank owns (for residual sums)."""
        return self.slab.owned_local


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
        from .jacobi import JacobiSolver
        from .jacobi_tuning import choose_config

        self.world = world
        self.compute = compute
        self.m, self.n = (int(v) for v in shape)
        self.dtype = np.dtype(dtype)
        if config is None:
            config = world.agree(lambda: choose_config(
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
        from .jacobi import run

        return run(self.solver, iterations, halo=self.halo, **options)

    def describe(self) -> str:
        """One line on the decomposition, for summaries."""
        sizes = sorted({slab.rows for slab in self.decomposition.slabs})
        rows = "-".join(str(v) for v in (sizes[0], sizes[-1])) if len(sizes) > 1 \
            else str(sizes[0])
        return (f"{self.world.size} ranks, 1-D slabs of {rows} rows, {self.decomposition.halo} "
                f"ghost rows per side, exchange every {self.period} steps")


# --------------------------------------------------------------------------------------------
# Rows shared out and gathered (Mandelbrot and other row-independent images)


def rank_bands(height: int, parts: int, rank: int,
               bands_per_rank: int = 1) -> list[tuple[int, int]]:
    """``(first_row, row_count)`` of the bands of ``rank``: the image's rows cut into
    ``parts * bands_per_rank`` contiguous bands, dealt out in turn (more than one band per
    rank spreads the costly rows of a Mandelbrot image over the ranks)."""
    total = max(1, min(int(height), parts * max(1, int(bands_per_rank))))
    bounds = split_rows(int(height), total)
    return [(start, stop - start) for start, stop in bounds[rank::parts] if stop > start]


def gather_bands(world: World, height: int, compute_band: Callable[[int, int], dict],
                 bands_per_rank: int = 1) -> tuple[dict | None, float]:
    """Compute this rank's bands of rows and gather whole images on rank 0 (collective).

    ``compute_band(first_row, row_count)`` returns a dict of arrays with ``row_count`` rows
    (e.g. ``{"counts": ..., "smooth": ...}``); the same names, dtypes and widths on every
    rank. Rank 0 gets ``{name: array with height rows}``, the others None; every rank gets
    the longest computing time over ranks, in seconds.
    """
    started = time.perf_counter()
    pieces = [(first, compute_band(first, count))
              for first, count in rank_bands(height, world.size, world.rank, bands_per_rank)]
    seconds = world.allreduce_max(time.perf_counter() - started)
    layouts = world.comm.gather([(first, {name: (array.dtype.str, array.shape)
                                          for name, array in piece.items()})
                                 for first, piece in pieces], root=0)
    if not world.is_root:
        for _, piece in pieces:
            for name in sorted(piece):
                world.send_array(piece[name], 0, TAG_GATHER)
        return None, seconds
    names = {name: (dtype, shape[1:]) for layout in layouts for _, arrays in layout
             for name, (dtype, shape) in arrays.items()}
    full = {name: np.empty((int(height), *rest), dtype=np.dtype(dtype))
            for name, (dtype, rest) in names.items()}
    for first, piece in pieces:
        for name, array in piece.items():
            full[name][first:first + len(array)] = array
    for rank in range(1, world.size):
        for first, arrays in layouts[rank]:
            for name in sorted(arrays):
                rows = arrays[name][1][0]
                target = full[name][first:first + rows]
                world.recv_array(target, rank, TAG_GATHER)
    return full, seconds


DEFAULT_BANDS_PER_RANK = 4


def mandelbrot_distributed(world: World, *, device: str | None, quiet: bool, repeat: int,
                           want_smooth: bool, bands_per_rank: int | None = None,
                           **params: Any) -> tuple[Any, Any, list | None]:
    """``oclsci mandelbrot`` over the ranks of ``world``: rows shared out, gathered on rank 0.

    Each rank renders ``bands_per_rank`` bands of rows (default 4, or
    ``OCLSCI_MPI_BANDS``), dealt out in turn so that the costly rows near the set are spread
    over the ranks; the bands are exact pieces of the one-device image. Returns
    ``(compute, renderer, results)``: on rank 0 the whole image as a list of ``repeat``
    :class:`~oclsci.mandelbrot.MandelbrotResult` (timings: the slowest rank's device times,
    and the wall time of computing and gathering), on the other ranks ``results`` is None.
    """
    return world.run_guarded(_mandelbrot_distributed, world, device=device, quiet=quiet,
                             repeat=repeat, want_smooth=want_smooth,
                             bands_per_rank=bands_per_rank, **params)


def _mandelbrot_distributed(world: World, *, device, quiet, repeat, want_smooth, bands_per_rank,
                            **params):
    from .device import create_context
    from .mandelbrot import MandelbrotRenderer, MandelbrotResult, MandelbrotTimings

    if bands_per_rank is None:
        text = os.environ.get("OCLSCI_MPI_BANDS", "").strip()
        bands_per_rank = int(text) if text.isdigit() and int(text) > 0 \
            else DEFAULT_BANDS_PER_RANK
    compute = world.agree(create_context, device, quiet=True, local_rank=world.local_rank)
    banners = world.comm.gather(f"oclsci: rank {world.rank}: " +
                                compute.banner()[len("oclsci: "):], root=0)
    if world.is_root and not quiet:
        print("\n".join(banners), file=sys.stderr)
    height = int(params["height"])
    bands = rank_bands(height, world.size, world.rank, bands_per_rank)
    renderers = world.agree(lambda: {first: MandelbrotRenderer(compute, rows=(first, count),
                                                               **params)
                                     for first, count in bands})
    results = []
    for _ in range(repeat):
        times = {"kernel": 0.0, "total": 0.0}

        def band(first: int, count: int, times: dict = times) -> dict:
            result = renderers[first].run(want_z=False, want_smooth=want_smooth)
            times["kernel"] += result.timings.kernel_seconds
            times["total"] += result.timings.total_seconds
            arrays = {"counts": result.counts}
            if result.smooth is not None:
                arrays["smooth"] = result.smooth
            return arrays

        world.comm.Barrier()
        started = time.perf_counter()
        full, _ = gather_bands(world, height, band, bands_per_rank)
        wall = time.perf_counter() - started
        kernel = world.allreduce_max(times["kernel"])
        total = world.allreduce_max(times["total"])
        if world.is_root:
            timings = MandelbrotTimings(kernel_seconds=kernel, total_seconds=total,
                                        wall_seconds=wall)
            results.append(MandelbrotResult(
                counts=full["counts"], z=None, smooth=full.get("smooth"), timings=timings,
                first_row=0, row_count=height, params=dict(renderers[0].params, rows=(0, height)),
                device=compute.name))
    if not world.is_root:
        return compute, None, None
    if not quiet:
        print(f"mpi: {world.size} ranks, {len(bands)} band(s) of rows each on rank 0 "
              f"({bands_per_rank} per rank), gathered on rank 0; times below: the slowest rank")
    return compute, renderers[0], results


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
    from .checkpoint import Checkpoint, save_checkpoint
    from .cli.jacobi import StopFlag, _progress_bar, print_summary
    from .device import create_context
    from .errors import Interrupted
    from .io import side_by_side, write_array, write_image
    from .jacobi import validate_rhs

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

    compute = world.agree(create_context, device, quiet=True, local_rank=world.local_rank)
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
