"""Signals: the one place that decides what SIGTERM, SIGUSR1, SIGINT and SIGHUP do.

Three regimes, whatever the terminal:

- Outside a computation (reading inputs, start-up) a signal raises :class:`SignalExit` in the
  main thread at once, and the CLI exits with 128 + the signal's number. Where an exception
  raised there would be lost (Python drops one raised in a weakref callback, C code may clear
  it), the taken signal is remembered and acted on when the next computation starts
  (:func:`raise_pending_exit`); while the CLI imports a command's modules it is only
  remembered (:func:`deferred_exit`: an exception inside a C extension's set-up can abort
  the process).
- During a computation (``with StopFlag() as stop:``) the stop signals are blocked in the main
  thread and collected by polling ``stop()`` at the host's synchronisation points (see
  :mod:`oclsci.runtime.launch`). Threads that OpenCL drivers start inside the block inherit
  the mask, so no driver thread takes the signal, and PoCL's LLVM, which installs its own
  handlers while it compiles (and drops SIGUSR1), never sees one: a signal sent during a
  kernel build stays pending and is acted on as soon as the build ends.
- Once the work is done (:meth:`StopFlag.work_done`) and while outputs are written
  (:func:`held`, used by every atomic writer), a stop signal is held until the writes end;
  the outputs are then complete, the run ends as it would have (exit 0) and a warning says
  which signal came. A signal never costs the steps already done.

The first stop signal wins: once one is taken, the others are ignored until the process ends,
so that a second SIGTERM cannot interrupt the checkpoint that the first one asked for. Signals
that arrive between two polls (a few milliseconds apart) count as arriving together: the one
taken is then the first of :data:`STOP_SIGNALS` (SIGTERM, SIGUSR1, SIGINT, SIGHUP), since the
kernel keeps no order among pending signals.

SIGHUP and SIGINT inherited as ignored stay ignored: ``nohup`` ignores SIGHUP, and a shell
script's ``cmd &`` ignores SIGINT, to keep the job running. SIGTERM and SIGUSR1 are how a
batch system asks for a stop before it kills: the ``oclsci`` command acts on them whatever it
inherited (:func:`install_exit_handlers`); in a program that calls oclsci, a StopFlag leaves
the program's own SIG_IGN in place.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import warnings
from collections.abc import Iterator
from typing import Any, Protocol

from oclsci.errors import OclsciWarning

EXIT_SIGNAL_BASE = 128

# Slurm sends SIGUSR1 (--signal) or SIGTERM before its time limit; SIGINT is Ctrl-C; SIGHUP:
# the terminal went away. In this order when several are pending at one poll.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)
EXIT_SIGNALS = STOP_SIGNALS
# Signals that a thread raises against itself: never blocked.
_SYNCHRONOUS = {getattr(signal, name) for name in
                ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGABRT", "SIGSYS")
                if hasattr(signal, name)}

# sigtimedwait and pthread_sigmask are POSIX; elsewhere (Windows) handlers alone are used.
_CAN_BLOCK = hasattr(signal, "pthread_sigmask") and hasattr(signal, "sigtimedwait")
# Every asynchronous signal: the threads of libraries (NumPy's BLAS, MPI) take none of them.
_HELPER_THREADS_BLOCK = (sorted(set(signal.valid_signals()) - _SYNCHRONOUS) if _CAN_BLOCK
                         else [])


class SignalExit(BaseException):
    """A signal asked the process to stop (a BaseException, so that ``except Exception`` in a
    reader or a library cannot swallow it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process killed by it."""
        return EXIT_SIGNAL_BASE + self.signum


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15, and so on."""
    return signal.Signals(signum).name


def stop_exit_code(answer: Any) -> int:
    """The exit code for a true answer of a ``should_stop()`` poll: 128 + N when the answer is
    a signal's number N (a :class:`StopFlag` answers so), else 1."""
    if isinstance(answer, int) and not isinstance(answer, bool) and \
            answer in set(signal.valid_signals()):
        return EXIT_SIGNAL_BASE + int(answer)
    return 1


# Set by install_exit_handlers: this process is oclsci's command, which ends once its work is
# written, so that a StopFlag whose work is done leaves the stop signals ignored.
_ENDS_AFTER_WORK = False
# The stop signals whose inherited SIG_IGN oclsci keeps (nohup's SIGHUP; SIGINT of a job
# started with & by a script); those of them inherited so, once the CLI starts.
KEEPS_INHERITED_IGNORE = (signal.SIGINT, signal.SIGHUP)
_INHERITED_IGNORED: set[int] = set()
# The handlers oclsci put in place last, by signal: reclaim() puts them back.
_OURS: dict[int, Any] = {}
# StopFlags in use, innermost last.
_ACTIVE: list[StopFlag] = []
# The stop signal taken outside a computation (its SignalExit raised, or deferred), until
# the process ends; and how many deferred_exit blocks are open.
_EXIT_TAKEN: int | None = None
_DEFERRING = 0


def honoured_signals() -> tuple[int, ...]:
    """The stop signals oclsci acts on: :data:`STOP_SIGNALS` less SIGHUP or SIGINT where
    inherited as ignored."""
    return tuple(signum for signum in STOP_SIGNALS if signum not in _INHERITED_IGNORED)


def ignore_stop_signals() -> None:
    """Ignore every stop signal from now on (the first one has been taken)."""
    for signum in honoured_signals():
        _install(signum, signal.SIG_IGN)


def _raise_signal_exit(signum: int, frame: object) -> None:
    global _EXIT_TAKEN
    ignore_stop_signals()
    if _EXIT_TAKEN is None:
        _EXIT_TAKEN = signum
    if not _DEFERRING:
        raise SignalExit(signum)


def raise_pending_exit() -> None:
    """Raise :class:`SignalExit` for a stop signal taken outside a computation, if one was:
    its exception may have been lost (raised where Python or a C library drops exceptions),
    and the stop signals are ignored since. Called where work starts, in normal flow."""
    if _EXIT_TAKEN is not None:
        raise SignalExit(_EXIT_TAKEN)


def forget_exit() -> None:
    """Forget a stop signal taken outside a computation (the command it stopped has ended;
    the process goes on, as a test or a program calling the CLI's main does)."""
    global _EXIT_TAKEN
    _EXIT_TAKEN = None


@contextlib.contextmanager
def deferred_exit() -> Iterator[None]:
    """Remember a stop signal taken while the block runs, and raise its
    :class:`SignalExit` when the block ends: around imports of C extensions (an exception
    raised inside nanobind's set-up of PyOpenCL aborts the process)."""
    global _DEFERRING
    _DEFERRING += 1
    try:
        yield
    finally:
        _DEFERRING -= 1
    if not _DEFERRING:
        raise_pending_exit()


def _install(signum: int, handler: Any) -> Any:
    _OURS[signum] = handler
    return signal.signal(signum, handler)


def install_exit_handlers() -> None:
    """Make each exit signal raise :class:`SignalExit` in the main thread (CLI start-up).

    SIGHUP or SIGINT inherited as ignored stays ignored; SIGTERM and SIGUSR1 are always
    taken, and unblocked if they came blocked. Call this before NumPy is imported:
    NumPy's BLAS threads are then started with the signals blocked, so that the kernel
    delivers every stop signal to the main thread, even while a :class:`StopFlag` blocks
    them there (they then wait for its poll).
    """
    global _ENDS_AFTER_WORK, _EXIT_TAKEN
    _ENDS_AFTER_WORK = True
    _EXIT_TAKEN = None
    for signum in KEEPS_INHERITED_IGNORE:
        if signum not in _OURS and signal.getsignal(signum) == signal.SIG_IGN:
            _INHERITED_IGNORED.add(signum)
    for signum in honoured_signals():
        _install(signum, _raise_signal_exit)
    if _CAN_BLOCK:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, honoured_signals())
    with helper_threads_blocked():
        import numpy  # noqa: F401 - starts the BLAS threads, which inherit this mask


@contextlib.contextmanager
def helper_threads_blocked() -> Iterator[None]:
    """Block every asynchronous signal in the main thread while the block runs, so that the
    threads it starts (NumPy's BLAS, MPI's progress and launcher threads) inherit the mask and
    every signal goes to the main thread. Without it, a thread of MPI could take a SIGTERM
    while PoCL's LLVM compiles, and LLVM's own handler would delete the compiler's temporary
    files under it (seen: a kernel build failing on one rank), and a SIGHUP taken by a BLAS
    thread would wait for the main thread's next Python instruction."""
    if not _CAN_BLOCK:
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELPER_THREADS_BLOCK)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def reclaim_handlers() -> None:
    """Put oclsci's handlers back where a driver replaced them.

    PoCL's LLVM installs handlers of its own when it first compiles, and drops SIGUSR1: call
    this at host synchronisation points (the pacer does) so that signals reach oclsci again.
    """
    for signum, handler in _OURS.items():
        # Python's record cannot see a handler set from C: install ours again regardless.
        signal.signal(signum, handler)


def poll() -> None:
    """At a host synchronisation point: take back oclsci's handlers and let the innermost
    active :class:`StopFlag` collect a pending stop signal (a raising one raises)."""
    reclaim_handlers()
    if _ACTIVE:
        _ACTIVE[-1]()


def active_flag() -> StopFlag | None:
    """The innermost :class:`StopFlag` in use, if any."""
    return _ACTIVE[-1] if _ACTIVE else None


class Peers(Protocol):
    """Other processes of one run (MPI ranks) that share its stop requests."""

    def announce(self, signum: int) -> None:
        """Tell the others that this process took ``signum``."""

    def received(self) -> int | None:
        """A stop signal another process took and announced, if one came."""


class StopFlag:
    """Collects stop signals during a computation; ``stop()`` polls and says if one came.

    Use as a context manager around everything that builds kernels and enqueues work. It is
    polled at host synchronisation points: by its owner, and by :func:`poll` (the pacer calls
    it at every wait). A poll returns the signal's number (true) or 0; :attr:`signum` tells
    which signal arrived. With ``raising=True`` a poll that finds a signal raises
    :class:`SignalExit` (for runs with nothing to save). ``peers`` (MPI ranks) share stop
    requests: one taken here is announced to them, and one they announce is taken here.

    Once :meth:`work_done` is called, a signal no longer stops anything: it is held until the
    block ends, which then warns that it came (the outputs are written first).
    """

    def __init__(self, raising: bool = False, peers: Peers | None = None,
                 holding: bool = False) -> None:
        self.raising = raising
        self.holding = holding  # held(): outputs being written, not work starting
        self.peers = peers
        self.signum: int | None = None
        self.origin = ""  # " on another rank" when a peer took the signal
        self.late = False  # the signal came after work_done()
        self.report_late = True  # warn at the end of the block when it did (False: MPI ranks > 0)
        self._done = False
        self._signals: tuple[int, ...] = ()
        self._ignored: tuple[int, ...] = ()  # stop signals ignored at entry: blocked, discarded
        self._previous: dict[int, Any] = {}
        self._mask: set[int] | None = None
        self._active = False
        self._stopping = False

    @property
    def signal_name(self) -> str | None:
        """Name of the signal received, if any."""
        return None if self.signum is None else signal_name(self.signum)

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (0 when none came)."""
        return 0 if self.signum is None else EXIT_SIGNAL_BASE + self.signum

    def __call__(self) -> int:
        self.collect()
        if self.raising and self.signum is not None and not self._done:
            raise SignalExit(self.signum)
        return self.signum or 0

    def collect(self) -> int:
        """Poll without raising: take a pending stop signal (or a peer's), return its number
        or 0."""
        if self.signum is None and self._active:
            # A driver may have put its own handlers in place (LLVM does when it compiles):
            # take them back, then collect what is pending.
            reclaim_handlers()
            if self._mask is not None:
                pending = signal.sigpending()
                self._discard_ignored(pending)
                for signum in self._signals:  # several at once: the first in STOP_SIGNALS
                    if signum in pending and signal.sigtimedwait((signum,), 0) is not None:
                        self._take(signum)
                        break
            if self.signum is None and self.peers is not None and not self._done:
                announced = self.peers.received()
                if announced:
                    self._take(announced, origin=" on another rank")
        return self.signum or 0

    def _discard_ignored(self, pending: set[int]) -> None:
        # An ignored signal is blocked too, so that a compiler's handler (LLVM puts one on
        # SIGINT and SIGHUP while it compiles, ignored or not) never runs: it would delete the
        # compiler's temporary files and the build would fail. Taken here, it is dropped.
        for signum in self._ignored:
            if signum in pending:
                signal.sigtimedwait((signum,), 0)

    def work_done(self) -> None:
        """The computation is complete: from now on a stop signal is only held (and reported
        at the block's end), so that the outputs are written in full. One collected before
        and not yet acted on (it came after the last poll) is held alike."""
        self._done = True
        if self.signum is not None:
            self.late = True

    def stopping(self) -> None:
        """The computation stops on a stop request, this process's or (MPI) another rank's:
        ignore the stop signals from now on, until the process ends. A late one (a batch shell
        passing Slurm's signal on) must not kill a rank while MPI finalises: Python resets its
        handlers to the default, which kills, before mpi4py finalises MPI."""
        self._stopping = True
        ignore_stop_signals()

    def _take(self, signum: int, origin: str = "") -> None:
        if self.signum is None:
            self.signum, self.origin, self.late = int(signum), origin, self._done
            ignore_stop_signals()
            if self.peers is not None and not origin and not self._done:
                self.peers.announce(signum)

    def _handle(self, signum: int, frame: object) -> None:
        self._take(signum)

    def _install_handlers(self) -> None:
        for signum in self._signals:
            self._previous[signum] = _install(signum, self._handle)

    def __enter__(self) -> StopFlag:
        if not self.holding:
            raise_pending_exit()  # work starts: a stop taken before, and lost, ends it now
        # Signals ignored now (by the program that calls oclsci, or after an earlier stop) stay
        # ignored: the CLI has put its handlers on SIGTERM and SIGUSR1 in any case.
        self._signals = tuple(signum for signum in honoured_signals()
                              if signal.getsignal(signum) != signal.SIG_IGN)
        self._ignored = tuple(signum for signum in STOP_SIGNALS if signum not in self._signals)
        _ACTIVE.append(self)
        self._active = True
        self._install_handlers()
        if _CAN_BLOCK:
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        return self

    def __exit__(self, *exc: object) -> None:
        raising, self.raising = self.raising, False
        self()  # collect a signal that came after the last poll
        self._active = False
        _ACTIVE.remove(self)
        if self._mask is not None:
            # Nothing stop-related is pending now (taken above, or discarded as ignored), and
            # the ignored ones are ignored again whatever a compiler put on them.
            self._discard_ignored(signal.sigpending())
            for signum in self._ignored:
                signal.signal(signum, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            self._mask = None
        if self._done and _ENDS_AFTER_WORK and not _ACTIVE:
            # The command's work is done and written: what is left (its summary) ends soon.
            ignore_stop_signals()
        elif self.signum is None and not self._stopping:
            for signum, handler in self._previous.items():
                if handler is not None:  # None: set from C, cannot be put back from Python
                    _install(signum, handler)
        self._previous.clear()
        outer = active_flag()
        if self.signum is not None and outer is not None:
            outer._take(self.signum, self.origin)  # the enclosing block acts on it
        elif self.late and self.report_late and not exc[0]:
            warnings.warn(f"{self.signal_name}{self.origin} came after the work was done; "
                          "the outputs were written first", OclsciWarning, stacklevel=2)
        if raising and self.signum is not None and not self._done and not exc[0]:
            raise SignalExit(self.signum)


@contextlib.contextmanager
def held() -> Iterator[StopFlag | None]:
    """Hold stop signals while the block runs (an output being written): the block finishes,
    then the signal is acted on by the enclosing :class:`StopFlag`, or else reported as a
    warning; the run ends as if it had come after the writes."""
    if threading.current_thread() is not threading.main_thread():
        yield None  # handlers and their signals belong to the main thread
        return
    with StopFlag(holding=True) as flag:
        flag.work_done()
        yield flag
