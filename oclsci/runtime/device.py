"""The context/queue manager: a :class:`ComputeContext` (an OpenCL context, its profiling
queue and what its device can do) on the device that :mod:`oclsci.runtime.selection` picks,
made once per device and process (:func:`create_context`).
"""

from __future__ import annotations

import copy
import sys
import warnings
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import (
    ArgumentTypeError,
    DeviceError,
    DeviceMemoryError,
    OclsciWarning,
)
from oclsci.runtime.facts import DeviceFacts, holds_subnormals
from oclsci.runtime.health import (
    check_before_build,
    disable_unusable_pyopencl_cache,
)
from oclsci.runtime.launch import Stopwatch
from oclsci.runtime.selection import describe_device, get_platforms, select_device


class ComputeContext:
    """An OpenCL context with one in-order, profiling-enabled command queue on one device."""

    def __init__(self, platform_index: int, device_index: int, *, chosen_by: str = ""):
        platform = get_platforms()[platform_index]
        check_before_build(platform)
        disable_unusable_pyopencl_cache()  # before any kernel is built or called
        self.device = platform.get_devices()[device_index]
        self.facts = DeviceFacts.of(self.device)  # read once: what it reports, its quirks
        self.platform = platform
        self.spec = f"{platform_index}:{device_index}"
        self.chosen_by = chosen_by
        self.context = cl.Context([self.device])
        try:
            self.queue = cl.CommandQueue(
                self.context, properties=cl.command_queue_properties.PROFILING_ENABLE
            )
            self.profiling = True
        except cl.Error:
            self.queue = cl.CommandQueue(self.context)
            self.profiling = False
        # Programs and kernels built for this context (see oclsci.runtime.programs).
        self.program_cache: dict = {}
        self._copy_queue: Any = None
        self._warned_of_flushing = False

    @property
    def copy_queue(self) -> Any:
        """A second in-order queue on the device (made on first use, profiling like
        ``queue``): copies enqueued there run beside the kernels of ``queue``."""
        if self._copy_queue is None:
            properties = cl.command_queue_properties.PROFILING_ENABLE if self.profiling else 0
            self._copy_queue = cl.CommandQueue(self.context, properties=properties)
        return self._copy_queue

    def with_own_queue(self) -> ComputeContext:
        """This context with an in-order queue of its own (profiling like ``queue``; the same
        device, programs and copy queue, which is made now if it was not): kernels enqueued
        there may run beside those of ``queue``, so any order between the two is the
        caller's, through events."""
        view = copy.copy(self)
        properties = cl.command_queue_properties.PROFILING_ENABLE if self.profiling else 0
        view.queue = cl.CommandQueue(self.context, properties=properties)
        view._copy_queue = self.copy_queue
        return view

    @property
    def name(self) -> str:
        """Short human-readable device name."""
        return self.facts.name

    @property
    def is_cpu(self) -> bool:
        """True for CPU devices (which want different kernel shapes from GPUs)."""
        return self.facts.is_cpu

    @property
    def is_gpu(self) -> bool:
        """True for GPU devices (not simulators claiming every type)."""
        return self.facts.is_gpu

    @property
    def supports_fp64(self) -> bool:
        """True when the device does double precision."""
        return self.facts.fp64

    def describe(self) -> dict:
        """The facts ``oclsci devices`` prints, for this device."""
        p, d = (int(x) for x in self.spec.split(":"))
        return describe_device(p, d, self.platform, self.device)

    def banner(self) -> str:
        """One line naming the chosen device."""
        how = f", chosen by {self.chosen_by}" if self.chosen_by else ""
        return (f"oclsci: device {self.spec} {self.name} "
                f"({self.facts.platform}, {self.facts.type_name}{how})")

    def check_dtype(self, dtype: Any) -> np.dtype:
        """Return ``dtype`` as a NumPy dtype, refusing float64 on a device without fp64."""
        dtype = np.dtype(dtype)
        if dtype == np.float64 and not self.supports_fp64:
            raise DeviceError(f"float64 requested but device {self.spec} ({self.name}) has no fp64 "
                              "support; use --dtype float32 or another device")
        return dtype

    def check_allocation(self, nbytes: int, what: str) -> None:
        """Refuse, before any work, buffers that cannot fit in the device's memory
        (:class:`~oclsci.errors.DeviceMemoryError`, an InvalidArgumentError)."""
        if nbytes > self.facts.global_mem_bytes:
            raise DeviceMemoryError(
                f"{what} needs {nbytes / 2**30:.2f} GiB but device {self.spec} ({self.name}) has "
                f"{self.facts.global_mem_bytes / 2**30:.2f} GiB of global memory"
            )
        if nbytes // 2 > self.facts.max_alloc_bytes:
            raise DeviceMemoryError(
                f"{what} needs buffers of up to {nbytes / 2 / 2**30:.2f} GiB but device "
                f"{self.spec} allows {self.facts.max_alloc_bytes / 2**30:.2f} GiB per buffer"
            )

    def warn_if_flushed(self, dtype: Any, *values: Any) -> None:
        """Warn (an :class:`~oclsci.errors.OclsciWarning`, once per context) when ``values``
        (arrays, numbers or None) hold numbers subnormal in ``dtype`` that this device may
        flush to zero (:meth:`DeviceFacts.flushes_subnormals`): its results would differ
        from NumPy's. Costs nothing on devices that keep subnormals."""
        if self._warned_of_flushing or not self.facts.flushes_subnormals(dtype):
            return
        if any(holds_subnormals(value, dtype) for value in values if value is not None):
            self._warned_of_flushing = True
            warnings.warn(f"device {self.spec} ({self.name}) may flush {np.dtype(dtype).name} "
                          f"subnormal numbers (below {np.finfo(dtype).smallest_normal:.3g}), "
                          "which the input holds, to zero: results may differ from NumPy's; "
                          "use float64 or another device", OclsciWarning, stacklevel=3)

    def stopwatch(self) -> Stopwatch:
        """Start timing work on this context's queue (see :class:`Stopwatch`)."""
        self.queue.finish()
        return Stopwatch(self.queue, self.profiling)


_CONTEXTS: dict[tuple[int, int], ComputeContext] = {}


def create_context(
    device: str | None = None,
    *,
    quiet: bool = True,
    local_rank: int | None = None,
    local_ranks: int | None = None,
    stream: Any = None,
    reuse: bool = True,
) -> ComputeContext:
    """Select a device (see the module docstring) and return its :class:`ComputeContext`.

    ``local_rank``/``local_ranks``: see :func:`select_device`. ``quiet=False`` prints one line
    on stderr naming the device. Contexts are reused per
    device within a process unless ``reuse=False``, so that built programs are kept.
    """
    platform_index, device_index, chosen_by = select_device(device, local_rank=local_rank,
                                                            local_ranks=local_ranks)
    key = (platform_index, device_index)
    if reuse and key in _CONTEXTS:
        compute = _CONTEXTS[key]
        compute.chosen_by = chosen_by
    else:
        compute = ComputeContext(platform_index, device_index, chosen_by=chosen_by)
        if reuse:
            _CONTEXTS[key] = compute
    if not quiet:
        print(compute.banner(), file=stream or sys.stderr)
    return compute


def as_compute_context(device: Any = None, *, quiet: bool = True) -> ComputeContext:
    """Accept a :class:`ComputeContext`, a SPEC string or None, and return a context."""
    if isinstance(device, ComputeContext):
        return device
    if device is not None and not isinstance(device, str):
        raise ArgumentTypeError(f"device must be a SPEC string such as '0:0', a ComputeContext "
                                f"or None, got {type(device).__name__} {device!r}")
    return create_context(device, quiet=quiet)
