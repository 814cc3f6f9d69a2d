"""The seed's picture coloured on the device: :func:`shade_on_device`.

The same steps as :func:`oclsci.mandelbrot.palette.shade_numpy` (hot colour map, PowerNorm(0.3),
hill shading, HSV blend), in the same order, in ``kernels/mandelbrot_shade.cl.mako``: one pass
finds the extremes of the smooth count and of the illumination, a second colours each pixel.
In float64 (devices that have it) the bytes equal NumPy's but where OpenCL's ``pow`` and
glibc's differ in the last bit right at a colour-table boundary; in float32 they may differ
by a level or two. Where float32 would overflow (smooth counts beyond 1e18, such as the
largest finite value that stands for an infinite count) the NumPy port colours instead.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from oclsci.errors import DeviceError, InputError, first_line
from oclsci.mandelbrot.palette import hot_table, light_direction, rgb8
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.reduction import GroupReduction

# Work-items per group of the extremes pass (a power of two).
EXTREMES_GROUP_SIZE = 64
# Work-group shape of the colouring pass.
COLOUR_LOCAL_SIZE = (32, 8)
# Largest smooth count float32 arithmetic colours (the gradients' squares stay finite).
FLOAT32_SAFE = 1e18


def shade_on_device(compute: ComputeContext, smooth: np.ndarray,
                    origin: str = "lower") -> np.ndarray:
    """Colour a smooth count on ``compute``'s device: uint8 RGB of shape (rows, cols, 3).

    ``origin`` as in :func:`oclsci.mandelbrot.shading.shade`. The arithmetic is float64 where
    the device has it, float32 otherwise.
    """
    smooth = np.asarray(smooth)
    if smooth.ndim != 2 or smooth.size == 0:
        raise InputError(f"expected a non-empty 2-D array to colour, got shape {smooth.shape}")
    if origin not in ("lower", "upper"):
        raise InputError(f"origin must be 'lower' or 'upper', got {origin!r}")
    if smooth.dtype not in (np.float32, np.float64):
        smooth = smooth.astype(np.float64)
    if not compute.supports_fp64 and not np.all(np.abs(smooth) < FLOAT32_SAFE):
        return rgb8(smooth, origin)  # squares would overflow float32: the host colours
    try:
        return _shade(compute, smooth, origin)
    except cl.Error as error:  # out of device memory, a launch the device refuses
        raise DeviceError(f"colouring on device {compute.spec}: {first_line(error)}") from error


def _shade(compute: ComputeContext, smooth: np.ndarray, origin: str) -> np.ndarray:
    real = np.dtype(np.float64 if compute.supports_fp64 else np.float32)
    source = np.ascontiguousarray(smooth, dtype=smooth.dtype if compute.supports_fp64
                                  else np.float32)
    rows, cols = source.shape
    queue, ctx = compute.queue, compute.context
    flags = cl.mem_flags
    smooth_buffer = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=source)
    geometry = (np.int32(rows), np.int32(cols), np.int32(origin == "lower"),
                *(real.type(d) for d in light_direction()))
    params = {"dtype": real, "src_dtype": source.dtype, "group_size": EXTREMES_GROUP_SIZE}

    # Pass 1: extremes of the smooth count and of the raw illumination.
    extremes = programs.get_kernel(compute, "mandelbrot_shade", name="mandelbrot_shade_extremes",
                                   **params)
    reduction = GroupReduction(compute, extremes, group_size=EXTREMES_GROUP_SIZE,
                               arg_types=(None,) + tuple(value.dtype for value in geometry),
                               result_dtype=real, finish=("min", "max", "min", "max"))
    vmin, vmax, imin, imax = reduction(smooth_buffer, *geometry, items=rows * cols)

    # Pass 2: one pixel per work-item.
    colour = programs.get_kernel(compute, "mandelbrot_shade", **params)
    table = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR,
                      hostbuf=np.ascontiguousarray(hot_table(), dtype=real))
    rgb = np.empty((rows, cols, 3), dtype=np.uint8)
    rgb_buffer = cl.Buffer(ctx, flags.WRITE_ONLY, rgb.nbytes)
    colour.set_args(smooth_buffer, *geometry, vmin, vmax, imin, imax, table, rgb_buffer)
    local = COLOUR_LOCAL_SIZE
    global_size = (-(-cols // local[0]) * local[0], -(-rows // local[1]) * local[1])
    local = programs.fitted_local_size(compute, colour, local)
    cl.enqueue_nd_range_kernel(queue, colour, global_size, local)
    cl.enqueue_copy(queue, rgb, rgb_buffer)
    return rgb
