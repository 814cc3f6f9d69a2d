"""The copies between sub-slabs in one launch (oclsci.mpi.rowcopy, kernels/mpi/copy_rows)
against NumPy: ranges of several offsets and lengths between three buffers, one buffer both
read and written, every bit kept (a NaN with a payload, -0.0)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from oclsci.mpi.rowcopy import RowCopier

# (source, first read, destination, first written, elements): buffers 0 and 2 are read by one
# copy and written by another, at other elements; lengths from 0 to more than a work-group.
COPIES = [(0, 0, 1, 5, 7), (1, 40, 0, 300, 1), (2, 3, 0, 100, 130), (0, 400, 2, 500, 261),
          (2, 200, 1, 0, 3), (1, 700, 2, 0, 0)]
SIZE = 800


def _special(dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    values = rng.standard_normal(SIZE).astype(dtype)
    bits = values.view(f"u{dtype.itemsize}")
    exponent = {4: 0x7F800000, 8: 0x7FF0000000000000}[dtype.itemsize]
    bits[1] = exponent | 0x2A  # a NaN with a payload
    bits[2] = exponent | 0x15 | (1 << (8 * dtype.itemsize - 1))  # a negative one
    values[3] = -0.0
    return values


def _copied(hosts: list[np.ndarray], roles: list[int]) -> list[np.ndarray]:
    """NumPy's result of COPIES with buffer ``roles[i]`` in the place of buffer i."""
    out = [host.copy() for host in hosts]
    for source, first, dest, to, count in COPIES:
        out[roles[dest]][to:to + count] = hosts[roles[source]][first:first + count]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_launch_copies_like_numpy(any_compute, dtype):
    dtype, queue = np.dtype(dtype), any_compute.queue
    rng = np.random.default_rng(3)
    hosts = [_special(dtype, rng) for _ in range(3)]
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buffers = [cl.Buffer(any_compute.context, flags, hostbuf=host) for host in hosts]
    copier = RowCopier(any_compute, dtype)
    assert copier.enqueue(queue, []) is None
    # Twice, the buffers in other places the second time: they are bound at each call.
    for roles in ([0, 1, 2], [2, 0, 1]):
        want = _copied(hosts, roles)
        copier.enqueue(queue, [(buffers[roles[s]], first, buffers[roles[d]], to, count)
                               for s, first, d, to, count in COPIES])
        hosts = [np.empty_like(host) for host in hosts]
        for out, buffer in zip(hosts, buffers, strict=True):
            cl.enqueue_copy(queue, out, buffer)
        for out, expected in zip(hosts, want, strict=True):
            assert out.tobytes() == expected.tobytes()
