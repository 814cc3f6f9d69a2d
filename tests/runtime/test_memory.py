"""Memory checks before any work (oclsci.runtime.memory): the host's available memory, read
from /proc/meminfo, and a CPU device's buffers counted against it."""

from __future__ import annotations

import types

import pytest

from oclsci.errors import DeviceMemoryError, InvalidArgumentError
from oclsci.runtime import memory


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
