"""Host and device memory: problems too large for either refused before any work, host arrays
in page-locked (pinned) memory, and transfers staged through them.

A problem too large is refused with one line naming the bytes needed and the bytes available,
rather than a ``MemoryError`` half way through or the kernel's OOM killer. A CPU device's
buffers are host memory: they count against both.

Copies between pinned arrays and a GPU run at the bus's speed (NVIDIA's driver pins a mapped
``ALLOC_HOST_PTR`` buffer; from pageable NumPy memory it copies through a staging buffer of its
own, 2-5x slower), but pinning costs about 0.45 s per GiB on an H100 host, so large transfers
go through two small pinned blocks in turn instead of one pinned copy.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InvalidArgumentError

MEMINFO = "/proc/meminfo"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
# Bytes of each of the two page-locked blocks of a staged transfer: copies of this size run
# at the bus's speed, and pinning two costs milliseconds.
STAGING_BYTES = 16 << 20


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


def pinned_empty(compute: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised host array of ``shape`` and ``dtype`` in memory that ``compute``'s
    driver allocated and mapped (pinned where the driver pins), or plain NumPy memory where it
    cannot. The array keeps that memory alive; it is freed with the array."""
    dtype = np.dtype(dtype)
    shape = tuple(int(size) for size in shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return np.empty(shape, dtype=dtype)
    flags, access = cl.mem_flags, cl.map_flags
    try:
        buffer = cl.Buffer(compute.context, flags.READ_WRITE | flags.ALLOC_HOST_PTR, nbytes)
        array, _ = cl.enqueue_map_buffer(compute.queue, buffer, access.READ | access.WRITE, 0,
                                         shape, dtype, is_blocking=True)
    except cl.Error:  # plain memory works too, only slower
        return np.empty(shape, dtype=dtype)
    return array


def _staging(compute: Any, shape: tuple[int, ...],
             dtype: np.dtype) -> tuple[list[np.ndarray], int, int]:
    """Page-locked blocks of ``STAGING_BYTES`` (or one row) for a staged transfer of an array
    of ``shape``: the blocks (one or two), the rows per block, and the bytes per row."""
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    block_rows = max(1, min(shape[0], STAGING_BYTES // max(1, row_bytes)))
    count = min(2, -(-shape[0] // block_rows))
    blocks = [pinned_empty(compute, (block_rows, *shape[1:]), dtype) for _ in range(count)]
    return blocks, block_rows, row_bytes


def staged_write(compute: Any, buffer: Any, shape: tuple[int, ...], dtype: Any,
                 fill: Callable[[np.ndarray, int], None]) -> None:
    """Write a C-ordered array of ``shape`` and ``dtype`` to the start of ``buffer`` by blocks
    of rows: ``fill(block, first)`` writes rows ``first .. first + len(block) - 1`` into a
    page-locked ``block`` while the other block's copy runs. Returns when all are copied."""
    dtype, shape = np.dtype(dtype), tuple(int(size) for size in shape)
    if not shape[0]:
        return
    blocks, block_rows, row_bytes = _staging(compute, shape, dtype)
    pending: list[Any] = [None] * len(blocks)
    for index, first in enumerate(range(0, shape[0], block_rows)):
        slot = index % len(blocks)
        if pending[slot] is not None:
            pending[slot].wait()  # the block's last copy is done: refill it
        block = blocks[slot][:min(block_rows, shape[0] - first)]
        fill(block, first)
        pending[slot] = cl.enqueue_copy(compute.queue, buffer, block,
                                        dst_offset=first * row_bytes, is_blocking=False)
    cl.wait_for_events([event for event in pending if event is not None])


def staged_read(compute: Any, buffer: Any, shape: tuple[int, ...], dtype: Any,
                take: Callable[[np.ndarray, int], None]) -> None:
    """Read a C-ordered array of ``shape`` and ``dtype`` from the start of ``buffer`` by
    blocks of rows, in order after the work already enqueued: ``take(block, first)`` gets rows
    ``first .. first + len(block) - 1`` in a page-locked ``block`` (valid during the call)
    while the next block's copy runs."""
    dtype, shape = np.dtype(dtype), tuple(int(size) for size in shape)
    if not shape[0]:
        return
    blocks, block_rows, row_bytes = _staging(compute, shape, dtype)
    starts = list(range(0, shape[0], block_rows))

    def start(index: int) -> tuple[Any, np.ndarray]:
        block = blocks[index % len(blocks)][:min(block_rows, shape[0] - starts[index])]
        return cl.enqueue_copy(compute.queue, block, buffer, src_offset=starts[index] * row_bytes,
                               is_blocking=False), block

    following = start(0)
    for index, first in enumerate(starts):
        event, block = following
        if index + 1 < len(starts):
            following = start(index + 1)  # into the other block, taken from already
        event.wait()
        take(block, first)


__all__ = ["available_host_bytes", "check_host_memory", "check_memory", "format_bytes",
           "pinned_empty", "staged_read", "staged_write"]
