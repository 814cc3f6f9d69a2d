"""What oclsci works around in particular devices and drivers, in one place.

Workloads ask here instead of keeping limits of their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

# The widest vectors of each type that oclsci's kernels use on CPU devices: PoCL takes
# minutes over, or fails to build, float16 and double8 kernels.
CPU_MAX_VECTOR_WIDTH = {"float32": 8, "float64": 4}
# The narrowest worth a vector kernel: a float4 or double2 is one 128-bit register.
MIN_VECTOR_WIDTH = {"float32": 4, "float64": 2}


def vector_width(compute: Any, dtype: Any) -> int:
    """Elements per work-item of a vector kernel of ``dtype`` on ``compute``'s device: its
    preferred vector width, at least :data:`MIN_VECTOR_WIDTH` and at most
    :data:`CPU_MAX_VECTOR_WIDTH` (NVIDIA reports 1: a vector of 4 still pays there)."""
    name = np.dtype(dtype).name
    try:
        preferred = int(compute.device.preferred_vector_width_float if name == "float32"
                        else compute.device.preferred_vector_width_double)
    except cl.Error:
        preferred = 0
    return min(max(preferred, MIN_VECTOR_WIDTH[name]), CPU_MAX_VECTOR_WIDTH[name])


def narrowed_vector_width(compute: Any, dtype: Any, width: int) -> int:
    """``width`` as a CPU device builds it: at most :data:`CPU_MAX_VECTOR_WIDTH`."""
    if compute.is_cpu:
        return min(width, CPU_MAX_VECTOR_WIDTH[np.dtype(dtype).name])
    return width
