"""The MPI world: launcher detection, rank -> device binding, per-rank caches, errors, abort.

``mpi4py`` is imported only when a launcher announces more than one rank (``mpiexec``/``mpirun``
of MPICH, Open MPI, Intel MPI or MVAPICH, ``srun`` with several tasks) or when ``OCLSCI_MPI=1``;
``OCLSCI_MPI=0`` turns all of this off. Without mpi4py, or in a world of one rank,
:func:`mpi_world` returns None and every command runs exactly as on one device.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from oclsci.errors import EXIT_USAGE, InputError, OclsciError, first_line, pip_extra
from oclsci.runtime import (  # noqa: F401 - public here too
    PRESENCE_VARIABLES,
    SIZE_VARIABLES,
    launcher_world_size,
    node_local_rank,
    wants_mpi,
)
from oclsci.runtime.binding import node_name, visible_gpus
from oclsci.runtime.device import create_context
from oclsci.runtime.signals import SignalExit, active_flag, helper_threads_blocked
from oclsci.runtime.streams import wait_until_read

# Largest message sent in one piece (mpi4py and MPI-3 libraries count in int).
MAX_MESSAGE_BYTES = 1 << 30
TAG_HALO, TAG_SCATTER, TAG_GATHER, TAG_STOP = 61, 62, 63, 64
# How often a rank waiting for the others looks at signals (seconds, growing to the second).
WAIT_POLL_SECONDS = (1e-4, 0.02)
# How long an aborting rank waits for its launcher to read its error line.
ABORT_DRAIN_SECONDS = 5.0


class RankError(OclsciError):
    """Another rank's error, reported once by rank 0 with that rank's exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


# --------------------------------------------------------------------------------------------
# Finding the world


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
    try:  # only now: importing mpi4py starts MPI (its threads without the stop signals)
        with helper_threads_blocked():
            from mpi4py import MPI
    except ImportError as error:
        raise InputError(
            f"started as {announced or 'several'} MPI ranks but mpi4py cannot be imported "
            f"({error}): {pip_extra('mpi')}, or set OCLSCI_MPI=0 to run independent "
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
    if isinstance(error, SignalExit):
        return f"stopped by {error}; no output written"
    return first_line(error, with_type=not isinstance(error, OclsciError))


def agree_on_command(args: list[str]) -> None:
    """Under MPI, check that every rank runs the same command line ``args`` (collective,
    once at start): ranks running different commands or options would wait for each other
    forever. A difference is an error on every rank (exit 2), told once by rank 0."""
    world = mpi_world()
    if world is None:
        return
    stop = world.wait_for_all()
    everyone = world.comm.allgather(list(args))
    if stop is not None:
        raise stop
    ours = everyone[0]
    for rank, theirs in enumerate(everyone):
        if theirs != ours:
            error = InputError(
                f"the ranks run different commands: rank {rank} `oclsci {' '.join(theirs)}`, "
                f"rank 0 `oclsci {' '.join(ours)}`; start every rank with the same command")
            error.exit_code = EXIT_USAGE
            raise _agreed(error if world.is_root else SystemExit(EXIT_USAGE))


def _agreed(error: BaseException) -> BaseException:
    error.oclsci_agreed = True  # every rank knows: no abort needed
    return error


class World:
    """An MPI communicator with the helpers oclsci needs (rank 0 is the root)."""

    def __init__(self, comm: Any, local_rank: int | None = None):
        from mpi4py import MPI  # mpi4py is optional: imported once a world exists

        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._local_rank = local_rank
        self._local_ranks: int | None = None

    @property
    def is_root(self) -> bool:
        """True on rank 0, which reads inputs, writes outputs and prints."""
        return self.rank == 0

    @property
    def local_rank(self) -> int:
        """This rank's index among the ranks of its node that share its GPUs (collective the
        first time): see :mod:`oclsci.runtime.binding`."""
        if self._local_rank is None:
            self._local_rank, self._local_ranks = self._gpu_group()
        return self._local_rank

    @property
    def local_ranks(self) -> int | None:
        """How many ranks of this node share this rank's GPUs (None when given by hand)."""
        self.local_rank  # noqa: B018 - computes both
        return self._local_ranks

    def _gpu_group(self) -> tuple[int, int]:
        """(index, size) of this rank among the ranks with the same node and visible GPUs.

        Node names come from Slurm when it runs the job (several slurmd may share a host), in
        the launcher's node-local rank order (SLURM_LOCALID...), else in world rank order."""
        local = node_local_rank()
        me = (node_name(), visible_gpus()[1])
        everyone = self.comm.allgather((me, self.rank if local is None else local, self.rank))
        peers = sorted((order, rank) for key, order, rank in everyone if key == me)
        return [rank for _, rank in peers].index(self.rank), len(peers)

    def split(self, size: int) -> World | None:
        """A world of ranks 0..size-1 (None on the others); collective."""
        colour = 0 if self.rank < size else self.MPI.UNDEFINED
        comm = self.comm.Split(colour, self.rank)
        if self.rank >= size:
            return None
        world = World(comm, self._local_rank)
        world._local_ranks = self._local_ranks
        return world

    def open_device(self, device: str | None,
                    notify: Callable[[str], None] | None = None) -> Any:
        """This rank's ComputeContext, on its node-local GPU (collective, errors agreed); rank
        0 passes the ranks' device lines to ``notify``."""
        compute = self.agree(create_context, device, quiet=True, local_rank=self.local_rank,
                             local_ranks=self.local_ranks)
        banners = self.comm.gather(f"oclsci: rank {self.rank}: "
                                   + compute.banner()[len("oclsci: "):], root=0)
        if self.is_root and notify is not None:
            notify("\n".join(banners))
        return compute

    def bcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        stop = self.wait_for_all()
        value = self.comm.bcast(value, root=0)
        if stop is not None:
            raise stop
        return value

    def wait_for_all(self) -> SignalExit | None:
        """Wait until every rank gets here (collective), acting on stop signals meanwhile.

        Inside a :class:`~oclsci.runtime.signals.StopFlag` a stop signal is collected (the
        computation acts on it at its next poll); outside one it is returned, once all
        ranks are here, for the caller to raise. A rank that waited for another in a blocking
        MPI call would leave the signal pending, unseen, until the other came.
        """
        request = self.comm.Ibarrier()
        pause, longest = WAIT_POLL_SECONDS
        stop = None
        while True:
            try:
                while not request.Test():
                    flag = active_flag()
                    if flag is not None:
                        flag.collect()
                    time.sleep(pause)
                    pause = min(2 * pause, longest)
                return stop
            except SignalExit as caught:  # Python's handler, outside a StopFlag
                stop = stop or caught

    def share_stops(self, flag: Any) -> None:
        """Make the other ranks ``flag``'s peers (a StopFlag): a stop signal taken on one rank
        is announced to every other, which takes it at its next poll (see
        :meth:`settle_stop`). A signal ``flag`` holds already is announced now."""
        flag.peers = StopPeers(self)
        flag.report_late = self.is_root
        if flag.signum and not flag.late:
            flag.peers.announce(flag.signum)

    def settle_stop(self, flag: Any, final: bool = True) -> None:
        """After a computation whose ranks poll ``flag`` (see :meth:`share_stops`): agree
        whether any rank stopped (collective). If one did, every rank raises: rank 0
        :class:`SignalExit` for the signal, the others ``SystemExit`` with the same code.
        Otherwise the computation is complete on every rank and, when ``final``, a signal
        from now on only waits for the outputs."""
        self.wait_for_all()
        peers = flag.peers
        mine = flag.signum if flag.signum and not flag.late else 0
        signum = int(self.comm.allreduce(int(mine), op=self.MPI.MAX))
        announcers = int(self.comm.allreduce(int(bool(peers is not None and peers.sent)),
                                             op=self.MPI.SUM))
        if peers is not None:
            peers.drain(announcers)
        if signum:
            flag.stopping()
            raise _agreed(SignalExit(signum) if self.is_root
                          else SystemExit(128 + signum))
        if final:
            flag.work_done()

    def allreduce_sum(self, value: float) -> float:
        """The sum of ``value`` over ranks."""
        return self.comm.allreduce(float(value), op=self.MPI.SUM)

    def allreduce_max(self, value: float) -> float:
        """The largest ``value`` over ranks."""
        return self.comm.allreduce(float(value), op=self.MPI.MAX)

    def agree_stop(self, stop: int, launches: int) -> tuple[int, int]:
        """In one reduction: the stop request of the ranks (the largest signal number taken,
        1 for a request without one, 0 when none asks to stop), and the smallest chunk
        proposed."""
        mine = np.array([-int(stop or 0), int(launches)], dtype=np.int64)
        agreed = np.empty_like(mine)
        self.comm.Allreduce(mine, agreed, op=self.MPI.MIN)
        return -int(agreed[0]), int(agreed[1])

    def agree(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``function`` on every rank; if it failed on any, fail on every rank.

        Collective. Rank 0 raises its own error, or :class:`RankError` with the one line of
        the lowest failing rank; the other ranks raise ``SystemExit`` with the same exit code
        (nothing printed), so the error shows once and no rank waits for another.
        """
        error = None
        try:
            result = function(*args, **kwargs)
        except (Exception, SignalExit) as caught:  # noqa: BLE001 - reported collectively below
            error, result = caught, None
        stop = self.wait_for_all()
        if error is None and stop is not None:
            error = stop
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
        wait_until_read(sys.stderr, ABORT_DRAIN_SECONDS)
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


class StopPeers:
    """The other ranks of a :class:`World`, as the ``peers`` of a StopFlag: a stop signal
    taken on one rank is sent to every other, and each polls for it between its launches."""

    def __init__(self, world: World):
        self.world = world
        self.sent: list = []  # this rank's send requests, when it announced
        self.taken = 0  # announcements received

    def announce(self, signum: int) -> None:
        """Send ``signum`` to every other rank (non-blocking)."""
        comm = self.world.comm
        self.sent = [comm.isend(int(signum), dest=rank, tag=TAG_STOP)
                     for rank in range(self.world.size) if rank != self.world.rank]

    def received(self) -> int | None:
        """A signal number another rank announced, if one has arrived."""
        comm = self.world.comm
        if not comm.Iprobe(source=self.world.MPI.ANY_SOURCE, tag=TAG_STOP):
            return None
        self.taken += 1
        return int(comm.recv(source=self.world.MPI.ANY_SOURCE, tag=TAG_STOP))

    def drain(self, announcers: int) -> None:
        """Receive the announcements not yet taken (``announcers`` ranks sent one each to
        every other) and complete this rank's sends, so that none is left when MPI ends."""
        expected = announcers - (1 if self.sent else 0)
        comm = self.world.comm
        for _ in range(expected - self.taken):
            comm.recv(source=self.world.MPI.ANY_SOURCE, tag=TAG_STOP)
        self.taken = expected
        self.world.MPI.Request.waitall(self.sent)
        self.sent = []
