"""Pinned host arrays (oclsci.runtime.hostmem): usable like NumPy arrays, filled by copies."""

from __future__ import annotations

import gc

import numpy as np
import pyopencl as cl

from oclsci.runtime.hostmem import pinned_empty


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
