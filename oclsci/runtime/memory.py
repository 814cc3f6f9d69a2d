"""Refusing, before any work, problems too large for the host's or the device's memory.

One line names the bytes needed and the bytes available, rather than a ``MemoryError`` half
way through or the kernel's OOM killer. A CPU device's buffers are host memory: they count
against both.
"""

from __future__ import annotations

import os
from typing import Any

from oclsci.errors import InvalidArgumentError

MEMINFO = "/proc/meminfo"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def format_bytes(nbytes: float) -> str:
    """``nbytes`` in the largest binary unit that keeps it >= 1 (``1.50 GiB``)."""
    value, unit = float(nbytes), _UNITS[0]
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            break
        value /= 1024
    return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"


def available_host_bytes(meminfo: str = MEMINFO) -> tuple[int, str] | None:
    """Bytes of host memory available to a new allocation, and where the figure comes from:
    ``MemAvailable`` of /proc/meminfo (Linux), else the free physical pages (``os.sysconf``);
    None where neither is known."""
    try:
        with open(meminfo, encoding="ascii") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    words = line.split()
                    return int(words[1]) * (1024 if words[2:] == ["kB"] else 1), "MemAvailable"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free pages"
    except (AttributeError, ValueError, OSError):
        return None


def check_host_memory(nbytes: int, what: str,
                      available: tuple[int, str] | None = None) -> None:
    """Refuse ``what``, which needs ``nbytes`` of host memory, when the host has less
    available (``available``: as :func:`available_host_bytes` returns, read when None), with
    a one-line :class:`~oclsci.errors.InvalidArgumentError`."""
    available = available_host_bytes() if available is None else available
    if available is not None and nbytes > available[0]:
        raise InvalidArgumentError(f"{what} needs {format_bytes(nbytes)} of host memory but "
                                   f"{format_bytes(available[0])} is available "
                                   f"({available[1]})")


def check_memory(compute: Any, device_bytes: int, what: str, *, host_bytes: int = 0) -> None:
    """Refuse, before any work, ``what`` when its buffers (``device_bytes``, the largest half
    of them at most in one buffer) do not fit the device of ``compute`` or its host arrays
    (``host_bytes``, plus the buffers on a CPU device) do not fit the host's available memory.

    Raises :class:`~oclsci.errors.DeviceMemoryError` or
    :class:`~oclsci.errors.InvalidArgumentError` (both InvalidArgumentError), one line naming
    the size needed and the memory there is.
    """
    compute.check_allocation(device_bytes, what)
    check_host_memory(host_bytes + (device_bytes if compute.is_cpu else 0), what)


__all__ = ["available_host_bytes", "check_host_memory", "check_memory", "format_bytes"]
