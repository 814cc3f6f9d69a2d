"""Pinned host arrays (oclsci.runtime.hostmem): usable like NumPy arrays, filled by copies."""

from __future__ import annotations

import gc

import numpy as np
import pyopencl as cl
import pytest

from oclsci.runtime import hostmem
from oclsci.runtime.hostmem import pinned_empty, staged_read, staged_write


def test_pinned_arrays_take_copies_and_outlive_their_buffer(any_compute):
    source = np.arange(7 * 5, dtype=np.float64).reshape(7, 5)
    device = cl.Buffer(any_compute.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=source)
    host = pinned_empty(any_compute, (7, 5), np.float64)
    gc.collect()  # nothing but the array holds the mapped buffer
    assert host.shape == (7, 5) and host.dtype == np.float64 and host.flags.c_contiguous
    cl.enqueue_copy(any_compute.queue, host, device)
    assert np.array_equal(host, source)
    host[2, 3] = -1.0
    assert host.sum() == source.sum() - source[2, 3] - 1.0


def test_empty_shapes_give_plain_arrays(any_compute):
    for shape in ((0,), (3, 0)):
        array = pinned_empty(any_compute, shape, np.int32)
        assert array.shape == shape and array.dtype == np.int32


def test_plain_memory_where_the_driver_gives_none(any_compute, monkeypatch):
    def refused(*args, **kwargs):
        raise cl.MemoryError("clCreateBuffer", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                             "no pinned memory")

    monkeypatch.setattr(cl, "Buffer", refused)
    array = pinned_empty(any_compute, (4, 3), np.int32)
    assert array.shape == (4, 3) and array.dtype == np.int32 and array.base is None


@pytest.mark.parametrize("rows, staging_bytes", [(1, 1 << 20), (10, 1), (10, 5 * 8 * 3),
                                                 (10, 5 * 8 * 4), (10, 5 * 8 * 10), (7, 9)])
def test_staged_transfers_move_every_row_once_in_order(any_compute, monkeypatch, rows,
                                                       staging_bytes):
    """Blocks of one row, of a remainder, of the whole array: every row written by ``fill``
    lands at its place, and ``take`` sees each exactly once, in order."""
    monkeypatch.setattr(hostmem, "STAGING_BYTES", staging_bytes)
    source = np.random.default_rng(rows).standard_normal((rows, 5)).astype(np.float64)
    buffer = cl.Buffer(any_compute.context, cl.mem_flags.READ_WRITE, source.nbytes + 64)
    filled: list[tuple[int, int]] = []

    def fill(block, first):
        filled.append((first, len(block)))
        block[...] = source[first:first + len(block)]

    staged_write(any_compute, buffer, source.shape, source.dtype, fill)
    back = np.empty_like(source)
    cl.enqueue_copy(any_compute.queue, back, buffer)
    assert np.array_equal(back, source)
    taken: list[tuple[int, int]] = []
    read = np.full_like(source, np.nan)

    def take(block, first):
        taken.append((first, len(block)))
        read[first:first + len(block)] = block

    staged_read(any_compute, buffer, source.shape, source.dtype, take)
    assert np.array_equal(read, source)
    block_rows = max(1, min(rows, staging_bytes // (5 * 8)))
    blocks = [(first, min(block_rows, rows - first)) for first in range(0, rows, block_rows)]
    assert filled == blocks and taken == blocks


def test_staged_reads_follow_the_work_enqueued_before(any_compute):
    """A read waits for a kernel enqueued before it on the queue (in order)."""
    program = cl.Program(any_compute.context, """
        __kernel void fill(__global int *out) { out[get_global_id(0)] = 7; }""").build()
    buffer = cl.Buffer(any_compute.context, cl.mem_flags.READ_WRITE, 4 * 64)
    program.fill(any_compute.queue, (64,), None, buffer)
    got = np.zeros((8, 8), np.int32)
    staged_read(any_compute, buffer, (8, 8), np.int32,
                lambda block, first: got.__setitem__(slice(first, first + len(block)), block))
    assert (got == 7).all()
