"""Mandelbrot escape counts on one OpenCL device, with the seed's NumPy semantics.

For each pixel ``c = x + i*y`` (``x``, ``y`` from ``np.linspace`` in the chosen precision),
``z`` starts at 0 and, for ``n`` in ``0 .. maxiter-1``: once ``|z| >= horizon`` the pixel stops
(``z`` keeps its value); otherwise ``count = n`` and ``z = z*z + c``. Counts equal to
``maxiter - 1`` become 0. This is :func:`oclsci.mandelbrot.reference.mandelbrot_numpy`, the seed's
code, computed by one kernel. The smooth (normalised) count is
``count + 1 - log2(log|z|) + log2(log(horizon))`` with NaN -> 0 and +-inf -> the largest finite
value, as ``np.nan_to_num``.

Rows can be computed in a band (``rows=(first_row, row_count)``) of the full image: the pixel
coordinates are those of the full image, so bands computed separately (e.g. by MPI ranks, see
:func:`row_band`) put together give the full image bit for bit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.arrays import check_dtype
from oclsci.errors import InputError
from oclsci.mandelbrot.reference import coordinates, log_horizon_of
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext, as_compute_context
from oclsci.runtime.launch import Pacer, Stopwatch
from oclsci.runtime.memory import pinned_empty
from oclsci.runtime.partition import row_band  # noqa: F401 - public here since 0.1

DEFAULTS = {
    "width": 1500, "height": 1250, "maxiter": 400,
    "xmin": -2.25, "xmax": 0.75, "ymin": -1.25, "ymax": 1.25, "horizon": 2.0**40,
}

# Independent pixel vectors per work-item in the vector (CPU) kernel.
DEFAULT_UNROLL = 4

# Work-group shape of the one-pixel-per-work-item kernel (GPUs): 32 x 8 = 256 work-items.
GPU_LOCAL_SIZE = (32, 8)
# Long images go in bands of rows (whole work-groups) of at most this many iterations in the
# worst case (every pixel in the set): about a tenth of a second of a device's throughput, so
# that a signal is acted on soon (the seed's image is one launch on either).
ITERATIONS_PER_LAUNCH = {"cpu": 2**30, "gpu": 2**36}


@dataclass
class MandelbrotTimings:
    """Seconds: the kernel alone and kernel + copy back (from OpenCL events when profiling is
    on, else the host clock), and the host wall time of the whole call."""

    kernel_seconds: float
    total_seconds: float
    wall_seconds: float
    source: str = "OpenCL events"


@dataclass
class MandelbrotResult:
    """What :func:`mandelbrot` returns.

    ``counts``: int32 array (``row_count`` x ``width``) with the seed's escape counts;
    ``z``: the final z (complex64 or complex128) or None unless asked; ``smooth``: the smooth
    count in the computation's precision, or None when not asked. ``first_row`` and
    ``row_count`` say which band of the ``height`` rows this is.
    """

    counts: np.ndarray
    z: np.ndarray | None
    smooth: np.ndarray | None
    timings: MandelbrotTimings
    first_row: int = 0
    row_count: int = 0
    params: dict = field(default_factory=dict)
    device: str = ""


def parse_horizon(text: Any) -> float:
    """Parse a horizon given as a number or ``a**b`` (e.g. ``2**40``) without ``eval``."""
    if isinstance(text, (int, float, np.integer, np.floating)):
        value = float(text)
    else:
        string = str(text).strip()
        parts = string.split("**")
        if len(parts) > 2 or not all(p.strip() for p in parts):
            raise InputError(f"horizon {string!r}: expected a number or a**b such as 2**40")
        try:
            numbers = [float(p.strip()) for p in parts]
        except ValueError:
            raise InputError(f"horizon {string!r}: expected a number or a**b such as 2**40") \
                from None
        try:
            value = numbers[0] ** numbers[1] if len(numbers) == 2 else numbers[0]
        except (OverflowError, ZeroDivisionError):
            raise InputError(f"horizon {string!r} is out of range") from None
        if isinstance(value, complex) or not math.isfinite(value):
            raise InputError(f"horizon {string!r} is not a finite real number")
    return value


def validate(width: int, height: int, maxiter: int, xmin: float, xmax: float, ymin: float,
             ymax: float, horizon: Any, dtype: Any,
             rows: tuple[int, int] | None = None) -> dict:
    """Check the parameters; return them normalised, or raise :class:`InputError`."""
    for name, value in (("width", width), ("height", height), ("maxiter", maxiter)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InputError(f"{name} must be an integer, got {value!r}")
        if value < 1:
            raise InputError(f"{name} must be >= 1, got {value}")
    if maxiter > 2**31 - 2:
        raise InputError(f"maxiter must be < 2**31 - 1, got {maxiter}")
    if int(width) * int(height) > 2**31 - 1:
        raise InputError(f"{width}x{height} pixels is too many (at most 2**31 - 1)")
    bounds = {}
    for name, value in (("xmin", xmin), ("xmax", xmax), ("ymin", ymin), ("ymax", ymax)):
        try:
            bounds[name] = float(value)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a number, got {value!r}") from None
        if not math.isfinite(bounds[name]):
            raise InputError(f"{name} must be finite, got {value}")
    if not bounds["xmin"] < bounds["xmax"]:
        raise InputError(f"xmin ({xmin}) must be less than xmax ({xmax})")
    if not bounds["ymin"] < bounds["ymax"]:
        raise InputError(f"ymin ({ymin}) must be less than ymax ({ymax})")
    dtype = check_dtype(dtype)
    horizon = parse_horizon(horizon)
    info = np.finfo(dtype)
    # z = c, then z*z + c: coordinates beyond sqrt(max)/2 overflow at the first iteration.
    reach = math.sqrt(float(info.max)) / 2
    for name, value in bounds.items():
        if abs(value) > reach:
            raise InputError(f"{name} = {value:g} is beyond +-{reach:.3g}, where {dtype} overflows "
                             "in the first iteration; choose a smaller window")
    if not (math.isfinite(horizon) and 1.0 < horizon <= float(info.max)):
        raise InputError(f"horizon must be a finite number > 1 (at most {float(info.max):.4g} in "
                         f"{dtype}), got {horizon}")
    if rows is None:
        rows = (0, int(height))
    try:
        first, count = (int(v) for v in rows)
    except (TypeError, ValueError):
        raise InputError(f"rows must be (first_row, row_count), got {rows!r}") from None
    if not (0 <= first and 1 <= count and first + count <= height):
        raise InputError(f"rows (first_row={first}, row_count={count}) must lie within the "
                         f"{height} rows of the image")
    return {"width": int(width), "height": int(height), "maxiter": int(maxiter), **bounds,
            "horizon": horizon, "dtype": dtype, "rows": (first, count)}


def default_vector_width(compute: ComputeContext, dtype: np.dtype) -> int:
    """Pixels per work-item: 1 on GPUs; on CPUs the device's vector width
    (:meth:`oclsci.runtime.facts.DeviceFacts.vector_width`)."""
    return compute.facts.vector_width(dtype) if compute.is_cpu else 1


class MandelbrotRenderer:
    """Device buffers and the kernel for one image (or band of rows); :meth:`run` computes.

    Keep one to time repeated runs without the set-up (allocation, upload, build).
    """

    def __init__(self, compute: ComputeContext, *, width: int = 1500, height: int = 1250,
                 maxiter: int = 400, xmin: float = -2.25, xmax: float = 0.75,
                 ymin: float = -1.25, ymax: float = 1.25, horizon: Any = 2.0**40,
                 dtype: Any = np.float32, rows: tuple[int, int] | None = None,
                 vector_width: int | None = None, unroll: int | None = None):
        self.params = validate(width, height, maxiter, xmin, xmax, ymin, ymax, horizon, dtype,
                               rows)
        self.compute = compute
        self.dtype = compute.check_dtype(self.params["dtype"])
        self.width = self.params["width"]
        self.first_row, self.row_count = self.params["rows"]
        self.maxiter = self.params["maxiter"]
        vw = default_vector_width(compute, self.dtype) if vector_width is None else vector_width
        if vw not in (1, 2, 4, 8, 16):
            raise InputError(f"vector_width must be 1, 2, 4, 8 or 16, got {vw}")
        self.vector_width = vw = compute.facts.narrowed_vector_width(self.dtype, vw)
        self.unroll = 1 if vw == 1 else (DEFAULT_UNROLL if unroll is None else int(unroll))
        if self.unroll not in range(1, 9):
            raise InputError(f"unroll must be from 1 to 8, got {unroll}")
        per_item = vw * self.unroll
        pixels = self.width * self.row_count
        itemsize = self.dtype.itemsize
        compute.check_allocation(pixels * (4 + 3 * itemsize),
                                 f"a {self.width}x{self.row_count} Mandelbrot image")

        x, y = coordinates(self.params["xmin"], self.params["xmax"], self.params["ymin"],
                           self.params["ymax"], self.width, self.params["height"], self.dtype)
        y = np.ascontiguousarray(y[self.first_row:self.first_row + self.row_count])
        padded = -(-self.width // per_item) * per_item
        x = np.concatenate([x, np.full(padded - self.width, x[-1], dtype=self.dtype)])
        flags = cl.mem_flags
        ctx = compute.context
        self.x_buffer = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
        self.y_buffer = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=y)
        self.counts_buffer = cl.Buffer(ctx, flags.WRITE_ONLY, pixels * 4)
        self._z_buffer: Any = None
        self._smooth_buffer: Any = None

        horizon = self.params["horizon"]
        info = np.finfo(self.dtype)
        margin = 16 * float(info.eps)
        square = horizon * horizon
        # |z|^2 < low2 means |z| < horizon for sure; |z|^2 > high2 means |z| >= horizon;
        # in between the kernel computes |z| as NumPy does and compares it with horizon.
        low2 = min(square * (1 - margin), float(info.max))
        high2 = square * (1 + margin)
        self.scalars = (
            np.int32(self.width), np.int32(self.row_count), np.int32(self.maxiter),
            self.dtype.type(horizon), self.dtype.type(low2),
            self.dtype.type(high2) if high2 <= float(info.max) else self.dtype.type(np.inf),
            self.dtype.type(log_horizon_of(horizon)),
        )
        items = -(-self.width // per_item)
        if vw == 1:
            local = GPU_LOCAL_SIZE
            self.local_size: tuple[int, int] | None = local
            self.global_size = (-(-items // local[0]) * local[0],
                                -(-self.row_count // local[1]) * local[1])
        else:
            self.local_size = None
            self.global_size = (items, self.row_count)

    @property
    def row_unit(self) -> int:
        """Rows of one work-group: bands of rows are whole multiples of it."""
        return 1 if self.local_size is None else self.local_size[1]

    def _buffer(self, name: str, nbytes: int) -> Any:
        if getattr(self, name) is None:
            setattr(self, name, cl.Buffer(self.compute.context, cl.mem_flags.WRITE_ONLY, nbytes))
        return getattr(self, name)

    def kernel(self, want_z: bool, want_smooth: bool) -> Any:
        """The memoised kernel for these outputs (arguments set by :meth:`enqueue`)."""
        return programs.get_kernel(
            self.compute, "mandelbrot", dtype=self.dtype, vector_width=self.vector_width,
            numpy_fma=True, unroll=self.unroll, want_z=bool(want_z),
            want_smooth=bool(want_smooth))

    def enqueue(self, want_z: bool = False, want_smooth: bool = True,
                rows: tuple[int, int] | None = None,
                items: tuple[int, int] | None = None) -> Any:
        """Launch the kernel without waiting; return its event.

        ``rows=(first, count)`` launches only those rows of the band (a global offset);
        ``items=(first, count)`` only those work-items along the rows (columns of
        ``vector_width x unroll`` pixels each; ``count`` a multiple of the work-group's
        width).
        """
        pixels = self.width * self.row_count
        itemsize = self.dtype.itemsize
        z_buffer = (self._buffer("_z_buffer", 2 * pixels * itemsize) if want_z
                    else self.counts_buffer)
        smooth_buffer = (self._buffer("_smooth_buffer", pixels * itemsize) if want_smooth
                         else self.counts_buffer)
        kernel = self.kernel(want_z, want_smooth)
        kernel.set_args(self.counts_buffer, z_buffer, smooth_buffer, self.x_buffer,
                        self.y_buffer, *self.scalars)
        local = self._fitted_local_size(kernel)
        if (rows is None or rows == (0, self.row_count)) and items is None:
            return cl.enqueue_nd_range_kernel(self.compute.queue, kernel, self.global_size,
                                              local)
        first, count = rows or (0, self.row_count)
        if self.local_size is not None:
            count = -(-count // self.local_size[1]) * self.local_size[1]
        item_first, item_count = items or (0, self.global_size[0])
        return cl.enqueue_nd_range_kernel(self.compute.queue, kernel,
                                          (item_count, count), local,
                                          global_work_offset=(item_first, first))

    def _rows_per_launch(self) -> int:
        """Most rows a launch takes: ITERATIONS_PER_LAUNCH in the worst case, whole units."""
        rows = self._budget() // max(1, self.width * self.maxiter)
        return max(1, rows // self.row_unit) * self.row_unit

    def _budget(self) -> int:
        return ITERATIONS_PER_LAUNCH["cpu" if self.compute.is_cpu else "gpu"]

    def _items_per_launch(self) -> int | None:
        """Work-items along the rows that one launch of a row unit takes when the unit's
        whole width is over ITERATIONS_PER_LAUNCH in the worst case (whole work-groups, one
        at least); None when a row unit fits one launch."""
        pixels = self.vector_width * self.unroll
        if self.width * self.maxiter * self.row_unit <= self._budget():
            return None
        group = 1 if self.local_size is None else self.local_size[0]
        items = self._budget() // (self.maxiter * self.row_unit * pixels)
        return max(1, items // group) * group

    def _fitted_local_size(self, kernel: Any) -> tuple[int, int] | None:
        """GPU_LOCAL_SIZE, halved (rows first) while the built kernel allows fewer work-items
        (CL_KERNEL_WORK_GROUP_SIZE); the global size stays a multiple of it."""
        if self.local_size is None:
            return None
        return programs.fitted_local_size(self.compute, kernel, self.local_size)

    def run(self, want_z: bool = False, want_smooth: bool = True) -> MandelbrotResult:
        """Compute the image (or band); copy back the counts and the arrays asked for.

        Long images (large ``maxiter``) go in bands of rows, paced (:mod:`oclsci.runtime.launch`) so
        that the host is at most a fraction of a second ahead and a signal stops the run
        between bands (see :mod:`oclsci.runtime.signals`); where one band of a work-group's
        rows is over the launch's budget, it goes in pieces along its rows.
        """
        wall = time.perf_counter()
        queue = self.compute.queue
        shape = (self.row_count, self.width)
        # The results' host memory, pinned (fast copies back), made before the kernels run.
        counts = pinned_empty(self.compute, shape, np.int32)
        complex_dtype = np.complex64 if self.dtype == np.float32 else np.complex128
        z = pinned_empty(self.compute, shape, complex_dtype) if want_z else None
        smooth = pinned_empty(self.compute, shape, self.dtype) if want_smooth else None
        kernel_watch = self.compute.stopwatch()
        unit = self.row_unit
        # A band's cost is not its size (rows in the set cost maxiter each): never grow; and
        # wait for each band, so that a stop leaves nothing running (one band of lag).
        most = self._rows_per_launch() // unit
        pacer = Pacer(first_chunk=most, max_chunk=most, in_flight=0)
        across = self._items_per_launch()
        row = 0
        while row < self.row_count:
            if across is not None:  # a row unit at a time, in pieces along its rows
                count = min(self.row_count - row, unit)
                for first in range(0, self.global_size[0], across):
                    event = self.enqueue(want_z, want_smooth, rows=(row, count),
                                         items=(first, min(across, self.global_size[0] - first)))
                    kernel_watch.record(event)
                    pacer.submitted(event, 1)
                row += count
                continue
            count = min(self.row_count - row, pacer.launches() * unit)
            event = self.enqueue(want_z, want_smooth, rows=(row, count))
            kernel_watch.record(event)
            pacer.submitted(event, -(-count // unit))
            row += count
        last = cl.enqueue_copy(queue, counts, self.counts_buffer, is_blocking=False)
        if z is not None:
            last = cl.enqueue_copy(queue, z, self._z_buffer, is_blocking=False)
        if smooth is not None:
            last = cl.enqueue_copy(queue, smooth, self._smooth_buffer, is_blocking=False)
        total_watch = Stopwatch(queue, self.compute.profiling)
        total_watch.record(kernel_watch.first_event)
        total_watch.record(last)
        total_watch.stop()
        kernel_watch.stop()
        timings = MandelbrotTimings(
            kernel_seconds=kernel_watch.device_seconds,
            total_seconds=total_watch.device_seconds,
            wall_seconds=time.perf_counter() - wall,
            source=total_watch.source,
        )
        return MandelbrotResult(counts=counts, z=z, smooth=smooth, timings=timings,
                                first_row=self.first_row, row_count=self.row_count,
                                params=dict(self.params), device=self.compute.name)

    def time_kernel(self, repeat: int = 5, want_z: bool = False,
                    want_smooth: bool = True) -> list[float]:
        """Device seconds of ``repeat`` launches (after one warm-up), from OpenCL events."""
        self.enqueue(want_z, want_smooth).wait()
        seconds = []
        for _ in range(repeat):
            watch = self.compute.stopwatch()
            watch.record(self.enqueue(want_z, want_smooth))
            seconds.append(watch.stop())
        return seconds


def mandelbrot(width: int = 1500, height: int = 1250, maxiter: int = 400,
               xmin: float = -2.25, xmax: float = 0.75, ymin: float = -1.25, ymax: float = 1.25,
               horizon: Any = 2.0**40, dtype: Any = np.float32, device: Any = None, *,
               rows: tuple[int, int] | None = None, return_z: bool = False,
               return_smooth: bool = True, quiet: bool = True,
               vector_width: int | None = None, unroll: int | None = None) -> MandelbrotResult:
    """Escape counts of the Mandelbrot set on ``device`` (a SPEC, a ComputeContext or None).

    Defaults are the seed's case. ``rows=(first_row, row_count)`` computes only that band of
    the ``height`` rows (see :func:`row_band`). ``return_z`` also copies back the final z,
    ``return_smooth`` the smooth count. The counts are always returned (int32, the seed's
    values). ``horizon`` may be a number or a string such as ``"2**40"``. ``vector_width``
    (pixels per OpenCL vector) and ``unroll`` (vectors per work-item) override the kernel shape
    chosen for the device (1 on GPUs; 8 or 4, times 4, on CPUs; on CPUs widths above 8 for
    float32 and 4 for float64 are narrowed to those).
    """
    compute = as_compute_context(device, quiet=quiet)
    renderer = MandelbrotRenderer(compute, width=width, height=height, maxiter=maxiter,
                                  xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax, horizon=horizon,
                                  dtype=dtype, rows=rows, vector_width=vector_width,
                                  unroll=unroll)
    return renderer.run(want_z=return_z, want_smooth=return_smooth)
