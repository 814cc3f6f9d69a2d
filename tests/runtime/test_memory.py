"""Host and device memory (oclsci.runtime.memory): the checks before any work (the host's
available memory, read from /proc/meminfo, and a CPU device's buffers counted against it), and
pinned host arrays, usable like NumPy arrays and filled by copies."""

from __future__ import annotations

import gc
import types

import numpy as np
import pyopencl as cl
import pytest

from oclsci.errors import DeviceMemoryError, InvalidArgumentError
from oclsci.runtime import memory
from oclsci.runtime.memory import pinned_empty, staged_read, staged_write


def test_available_host_bytes_reads_mem_available(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:  100 kB\n"
                       "MemAvailable:    2048 kB\n")
    assert memory.available_host_bytes(str(meminfo)) == (2048 * 1024, "MemAvailable")
    # Without /proc/meminfo: the free pages, or nothing known (never an error).
    fallback = memory.available_host_bytes(str(tmp_path / "missing"))
    assert fallback is None or (fallback[0] > 0 and fallback[1] == "free pages")


def test_format_bytes():
    assert memory.format_bytes(512) == "512 B"
    assert memory.format_bytes(1536 * 2**20) == "1.50 GiB"
    assert memory.format_bytes(2**83) == "8388608.00 EiB"


def test_host_check_names_the_size_and_what_is_available():
    memory.check_host_memory(2**20, "small", available=(2**20, "MemAvailable"))
    with pytest.raises(InvalidArgumentError, match=r"^a periodogram needs 2\.00 MiB of host "
                                                   r"memory but 1\.00 MiB is available "
                                                   r"\(MemAvailable\)$"):
        memory.check_host_memory(2 * 2**20, "a periodogram", available=(2**20, "MemAvailable"))


@pytest.mark.parametrize("is_cpu", [True, False])
def test_a_cpu_devices_buffers_count_as_host_memory(monkeypatch, is_cpu):
    asked = []
    compute = types.SimpleNamespace(is_cpu=is_cpu,
                                    check_allocation=lambda nbytes, what: asked.append(nbytes))
    monkeypatch.setattr(memory, "available_host_bytes", lambda: (3000, "MemAvailable"))
    memory.check_memory(compute, 2000, "x", host_bytes=1000)
    if is_cpu:
        with pytest.raises(InvalidArgumentError, match="needs 3.01 KiB of host memory"):
            memory.check_memory(compute, 2000, "x", host_bytes=1080)
    else:
        memory.check_memory(compute, 2000, "x", host_bytes=1080)
    assert asked == [2000, 2000]


def test_device_memory_errors_are_invalid_arguments(any_compute):
    too_much = int(any_compute.device.global_mem_size) + 1
    with pytest.raises(DeviceMemoryError, match="GiB of global memory") as caught:
        memory.check_memory(any_compute, too_much, "a grid")
    assert isinstance(caught.value, InvalidArgumentError)


def test_a_npy_larger_than_memory_is_refused_before_reading(tmp_path):
    """A .npy whose array needs more host memory than is available: one line naming the
    size, before NumPy allocates (a sparse file: no disk used)."""
    import numpy.lib.format as npy_format

    from oclsci.io import read_npy

    path = tmp_path / "huge.npy"
    shape = (1 << 20, 1 << 19)  # 4 TiB of float64
    with open(path, "wb") as out:
        npy_format.write_array_header_1_0(out, {"descr": "<f8", "fortran_order": False,
                                                "shape": shape})
        out.truncate(out.tell() + shape[0] * shape[1] * 8)
    with pytest.raises(InvalidArgumentError, match=r"huge\.npy .* needs .* of host memory"):
        read_npy(path)


def test_what_a_reader_holds_besides_the_array_counts(tmp_path, monkeypatch):
    """Lomb-Scargle holds 24 bytes per value besides its input (columns, copies, buffers):
    an input whose array alone fits is refused when that does not (the OOM killer ended a
    run silently)."""
    from oclsci.io import read_npy

    path = tmp_path / "samples.npy"
    np.save(path, np.zeros((2, 1000)))  # 16000 bytes
    monkeypatch.setattr(memory, "available_host_bytes", lambda: (50_000, "MemAvailable"))
    assert read_npy(path).shape == (2, 1000)
    with pytest.raises(InvalidArgumentError, match=r"samples\.npy .* needs 62\.50 KiB of host"):
        read_npy(path, held_bytes_per_value=3 * 8)


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
    monkeypatch.setattr(memory, "STAGING_BYTES", staging_bytes)
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
