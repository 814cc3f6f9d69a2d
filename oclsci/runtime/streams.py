"""Output streams at exit: waiting until a reader has taken what a process wrote."""

from __future__ import annotations

import array
import os
import stat
import time
from typing import Any


def wait_until_read(stream: Any, timeout: float) -> bool:
    """Wait (at most ``timeout`` s) until the reader of ``stream``'s pipe or socket has taken
    all that was written to it; True once it has, or when ``stream`` is not a pipe or socket.

    A launcher tearing the job down after MPI_Abort drops what it has not yet read from the
    aborting rank (MPICH's Hydra lost the error line in about one abort in ten here).
    """
    try:
        import fcntl  # POSIX only
        import termios
    except ImportError:
        return True
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return True
    if stat.S_ISFIFO(mode):
        request = termios.FIONREAD  # bytes in the pipe, asked from either end
    elif stat.S_ISSOCK(mode) and hasattr(termios, "TIOCOUTQ"):
        request = termios.TIOCOUTQ  # bytes the peer has not received yet (Linux)
    else:
        return True
    pending = array.array("i", [0])
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.ioctl(fd, request, pending)
        except OSError:
            return True
        if pending[0] == 0:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
