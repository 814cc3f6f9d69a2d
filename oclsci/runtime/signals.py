"""Signals: the one place that decides what SIGTERM, SIGUSR1, SIGINT and SIGHUP do.

Two regimes, whatever the terminal:

- Outside a computation (reading inputs, writing outputs) a signal raises :class:`SignalExit`
  in the main thread at once; atomic writers remove their temporary file on the way out and
  the CLI exits with 128 + the signal's number.
- During a computation (``with StopFlag() as stop:``) the stop signals are blocked in the main
  thread and collected by polling ``stop()`` at the host's synchronisation points (see
  :mod:`oclsci.runtime.pacing`). Threads that OpenCL drivers start inside the block inherit
  the mask, so no driver thread takes the signal, and PoCL's LLVM, which installs its own
  handlers while it compiles (and drops SIGUSR1), never sees one: a signal sent during a
  kernel build stays pending and is acted on as soon as the build ends.

The first stop signal wins: once one is taken, the others are ignored until the process ends,
so that a second SIGTERM cannot interrupt the checkpoint that the first one asked for.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

EXIT_SIGNAL_BASE = 128

# Slurm sends SIGUSR1 (--signal) or SIGTERM before its time limit; SIGINT is Ctrl-C; SIGHUP:
# the terminal went away. Outside a computation each ends the run at once.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)
EXIT_SIGNALS = STOP_SIGNALS
# Blocked in the threads that NumPy's BLAS starts (install_exit_handlers). SIGHUP is not: the
# main thread blocks it only inside a StopFlag, which tells a test when a computation began.
_HELPER_THREADS_BLOCK = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)

# sigtimedwait and pthread_sigmask are POSIX; elsewhere (Windows) handlers alone are used.
_CAN_BLOCK = hasattr(signal, "pthread_sigmask") and hasattr(signal, "sigtimedwait")


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


def ignore_stop_signals() -> None:
    """Ignore every stop signal from now on (the first one has been taken)."""
    for signum in EXIT_SIGNALS:
        _install(signum, signal.SIG_IGN)


# The handlers oclsci put in place last, by signal: reclaim() puts them back.
_OURS: dict[int, Any] = {}
# StopFlags in use, innermost last.
_ACTIVE: list[StopFlag] = []


def _raise_signal_exit(signum: int, frame: object) -> None:
    ignore_stop_signals()
    raise SignalExit(signum)


def _install(signum: int, handler: Any) -> Any:
    _OURS[signum] = handler
    return signal.signal(signum, handler)


def install_exit_handlers() -> None:
    """Make each exit signal raise :class:`SignalExit` in the main thread (CLI start-up).

    Call it before NumPy is imported: NumPy's BLAS threads are then started with the stop
    signals blocked, so that the kernel delivers every stop signal to the main thread, even
    while a :class:`StopFlag` blocks them there (they then wait for its poll).
    """
    for signum in EXIT_SIGNALS:
        _install(signum, _raise_signal_exit)
    with helper_threads_blocked():
        import numpy  # noqa: F401 - starts the BLAS threads, which inherit this mask


@contextlib.contextmanager
def helper_threads_blocked() -> Iterator[None]:
    """Block the stop signals in the main thread while the block runs, so that the threads
    it starts (NumPy's BLAS, MPI's progress and launcher threads) inherit the mask and every
    stop signal goes to the main thread. Without it, a thread of MPI could take a SIGTERM
    while PoCL's LLVM compiles, and LLVM's own handler would delete the compiler's temporary
    files under it (seen: a kernel build failing on one rank)."""
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


class StopFlag:
    """Collects stop signals during a computation; ``stop()`` polls and says if one came.

    Use as a context manager around everything that builds kernels and enqueues work. It is
    polled at host synchronisation points: by its owner, and by :func:`poll` (the pacer calls
    it at every wait). :attr:`signum` tells which signal arrived. With ``raising=True`` a poll
    that finds a signal raises :class:`SignalExit` (for runs with nothing to save).
    """

    def __init__(self, raising: bool = False) -> None:
        self.raising = raising
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._blocked = False
        self._active = False
        self._stopping = False

    @property
    def signal_name(self) -> str | None:
        """Name of the signal received, if any."""
        return None if self.signum is None else signal_name(self.signum)

    def __call__(self) -> bool:
        if self.signum is None and self._active:
            # A driver may have put its own handlers in place (LLVM does when it compiles):
            # take them back, then collect what is pending.
            reclaim_handlers()
            if self._blocked:
                taken = signal.sigtimedwait(STOP_SIGNALS, 0)
                if taken is not None:
                    self._take(taken.si_signo)
            if self.raising and self.signum is not None:
                raise SignalExit(self.signum)
        return self.signum is not None

    def stopping(self) -> None:
        """The computation stops on a stop request, this process's or (MPI) another rank's:
        ignore the stop signals from now on, until the process ends. A late one (a batch shell
        passing Slurm's signal on) must not kill a rank while MPI finalises: Python resets its
        handlers to the default, which kills, before mpi4py finalises MPI."""
        self._stopping = True
        ignore_stop_signals()

    def _take(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
            ignore_stop_signals()

    def _handle(self, signum: int, frame: object) -> None:
        self._take(signum)

    def _install_handlers(self) -> None:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                self._previous[signum] = _install(signum, self._handle)

    def __enter__(self) -> StopFlag:
        _ACTIVE.append(self)
        self._active = True
        self._install_handlers()
        if _CAN_BLOCK:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            self._blocked = True
        return self

    def __exit__(self, *exc: object) -> None:
        raising, self.raising = self.raising, False
        self()  # collect a signal that came after the last poll
        self._active = False
        _ACTIVE.remove(self)
        if self._blocked:
            # Nothing stop-related is pending now (taken above, or discarded as ignored).
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            self._blocked = False
        if self.signum is None and not self._stopping:
            for signum, handler in self._previous.items():
                if handler is not None:  # None: set from C, cannot be put back from Python
                    _install(signum, handler)
        self._previous.clear()
        if raising and self.signum is not None and not exc[0]:
            raise SignalExit(self.signum)
