"""Host arrays in page-locked (pinned) memory: copies between them and a GPU run at the bus's
speed (NVIDIA's driver pins a mapped ``ALLOC_HOST_PTR`` buffer; from pageable NumPy memory it
copies through a staging buffer, 2-5x slower)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyopencl as cl


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
