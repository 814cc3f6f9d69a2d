"""Host arrays in page-locked (pinned) memory, and transfers staged through them: copies
between them and a GPU run at the bus's speed (NVIDIA's driver pins a mapped
``ALLOC_HOST_PTR`` buffer; from pageable NumPy memory it copies through a staging buffer of
its own, 2-5x slower), but pinning costs about 0.45 s per GiB on an H100 host, so large
transfers go through two small pinned blocks in turn instead of one pinned copy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

# Bytes of each of the two page-locked blocks of a staged transfer: copies of this size run
# at the bus's speed, and pinning two costs milliseconds.
STAGING_BYTES = 16 << 20


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
