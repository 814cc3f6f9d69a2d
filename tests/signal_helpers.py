"""Signal ``oclsci`` (started by ``conftest.start_cli``, as a batch job) at a known point.

Nothing here waits a fixed time for the process to get somewhere: readiness is read from
/proc (the signal mask and handlers of the process), so the tests behave the same on a fast,
a slow or a loaded machine. Timeouts only turn a hang into a failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

HANG = 300.0  # seconds after which a process that should have acted is a failure
AFTER_A_HANG = 30.0  # the wait once one process never got there: one cause, fail the rest fast
_hung = False


def _mask(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _wait_for(process: subprocess.Popen, ready, what: str, timeout: float = HANG) -> None:
    global _hung
    deadline = time.monotonic() + (min(timeout, AFTER_A_HANG) if _hung else timeout)
    while not ready():
        if process.poll() is not None:
            _, stderr = process.communicate()
            raise AssertionError(f"process ended (code {process.returncode}) before {what}: "
                                 f"{stderr}")
        if time.monotonic() > deadline:
            process.kill()
            _hung = True
            raise AssertionError(f"process never reached {what}")
        time.sleep(0.02)


def _computing(pid: int) -> bool:
    # glibc blocks every signal for a moment while a thread starts (NumPy's BLAS threads, at
    # start-up): SIGWINCH, which oclsci never blocks, tells that moment from a StopFlag.
    mask = _mask(pid, "SigBlk")
    return bool(mask & (1 << (signal.SIGHUP - 1))) and not mask & (1 << (signal.SIGWINCH - 1))


def wait_until_computing(process: subprocess.Popen) -> None:
    """Wait until oclsci's compute phase has begun: its main thread then blocks the stop
    signals (SIGHUP among them, which it blocks nowhere else) and collects them by polling;
    context creation, kernel builds and launches all happen inside it."""
    _wait_for(process, lambda: _computing(process.pid), "its compute phase")


def rank_pids(launcher_pid: int) -> list[int]:
    """The oclsci processes below ``launcher_pid`` (mpiexec's ranks, or the process itself)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [launcher_pid]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except OSError:
            continue
        if b"oclsci" in words and b"-m" in words and b"mpiexec" not in words[0]:
            found.append(pid)
        todo += children.get(pid, [])
    return found


def wait_until_ranks_compute(process: subprocess.Popen, ranks: int) -> list[int]:
    """The pids of ``ranks`` oclsci processes under ``process``, once all are computing."""
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        assert process.poll() is None, f"ended early with {process.returncode}"
        pids = rank_pids(process.pid)
        if len(pids) == ranks and all(_computing(pid) for pid in pids):
            return pids
        time.sleep(0.02)
    process.kill()
    raise AssertionError("the ranks never reached their compute phase")


def wait_until_handling(process: subprocess.Popen, signum: int = 15) -> None:
    """Wait until the process catches ``signum`` (oclsci's handlers are in place)."""
    _wait_for(process, lambda: _mask(process.pid, "SigCgt") >> (signum - 1) & 1,
              "catching the signal")


def wait_for_file(process: subprocess.Popen, path: Path) -> None:
    """Wait until ``path`` exists (written by the process)."""
    _wait_for(process, Path(path).exists, f"writing {path}")


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory of a running process (VmHWM), in MB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc status")


def finish(process: subprocess.Popen, timeout: float = HANG) -> tuple[int, str]:
    """Wait for the process; return (exit code, stderr)."""
    _, stderr = process.communicate(timeout=timeout)
    return process.returncode, stderr


@contextlib.contextmanager
def time_limit(seconds: int, what: str):
    """Fail (instead of hanging the suite) when the body, run in the main thread, is still
    running after ``seconds`` (SIGALRM): a limit against hangs, far above any real duration."""
    def expire(signum, frame):
        raise AssertionError(f"{what} did not return within {seconds} s (hang?)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
