"""What a device reports, read once, and what oclsci works around on it: one frozen record
per context (:attr:`oclsci.runtime.device.ComputeContext.facts`), with a named predicate for
each quirk, so that workloads ask here instead of testing vendor names or keeping limits of
their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

# The widest vectors of each type that oclsci's kernels use on CPU devices: PoCL takes
# minutes over, or fails to build, float16 and double8 kernels.
CPU_MAX_VECTOR_WIDTH = {"float32": 8, "float64": 4}
# The narrowest worth a vector kernel: a float4 or double2 is one 128-bit register.
MIN_VECTOR_WIDTH = {"float32": 4, "float64": 2}


def _info(device: Any, name: str, default: Any) -> Any:
    try:
        return getattr(device, name)
    except (cl.Error, AttributeError):
        return default


def claims_every_type(device: Any) -> bool:
    """True for devices reporting both GPU and CPU types (simulators such as Oclgrind)."""
    return bool(device.type & cl.device_type.GPU) and bool(device.type & cl.device_type.CPU)


def is_real_gpu(device: Any) -> bool:
    """True for GPUs, not counting simulators that claim every device type."""
    return bool(device.type & cl.device_type.GPU) and not claims_every_type(device)


def device_type_name(device: Any) -> str:
    """``GPU``, ``CPU``, ``ACCELERATOR``... for a device."""
    names = [name for name in ("GPU", "CPU", "ACCELERATOR", "CUSTOM")
             if device.type & getattr(cl.device_type, name)]
    return "+".join(names) or "DEFAULT"


def supports_fp64(device: Any) -> bool:
    """True when the device does double-precision arithmetic."""
    if _info(device, "double_fp_config", 0):
        return True
    return "cl_khr_fp64" in _info(device, "extensions", "")


def supports_fp32_denormals(device: Any) -> bool:
    """True unless the device's CL_DEVICE_SINGLE_FP_CONFIG lacks CL_FP_DENORM: then it may
    flush float32 subnormals to zero (OpenCL requires denormals of float64 only). A driver
    that fails the query is taken to keep them."""
    config = _info(device, "single_fp_config", None)
    return config is None or bool(config & cl.device_fp_config.DENORM)


def holds_subnormals(values: Any, dtype: Any) -> bool:
    """Whether ``values`` (an array or a number) hold numbers that are subnormal in
    ``dtype`` (non-zero, below its smallest normal number once rounded to it)."""
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        return False  # integers are never subnormal
    info = np.finfo(dtype)
    magnitudes = np.abs(values)
    return bool(np.any((magnitudes > float(info.smallest_subnormal) / 2)
                       & (magnitudes < float(info.smallest_normal))))


@dataclass(frozen=True)
class DeviceFacts:
    """A device's figures as it reports them, and oclsci's inferences about it."""

    name: str
    vendor: str
    platform: str
    type_name: str
    is_cpu: bool
    is_gpu: bool  # a GPU, not a simulator that claims every type
    compute_units: int
    max_work_group_size: int
    local_mem_bytes: int
    global_mem_bytes: int
    max_alloc_bytes: int
    fp64: bool
    preferred_float_width: int
    preferred_double_width: int
    driver_version: str
    opencl_version: str
    fp32_denormals: bool = True  # CL_FP_DENORM in CL_DEVICE_SINGLE_FP_CONFIG

    @classmethod
    def of(cls, device: Any) -> DeviceFacts:
        """Read a (pyopencl) device's facts once."""
        return cls(
            name=device.name.strip(), vendor=device.vendor.strip(),
            platform=device.platform.name.strip(), type_name=device_type_name(device),
            is_cpu=bool(device.type & cl.device_type.CPU),
            is_gpu=is_real_gpu(device),
            compute_units=int(device.max_compute_units),
            max_work_group_size=int(device.max_work_group_size),
            local_mem_bytes=int(device.local_mem_size),
            global_mem_bytes=int(device.global_mem_size),
            max_alloc_bytes=int(_info(device, "max_mem_alloc_size", device.global_mem_size)),
            fp64=supports_fp64(device),
            preferred_float_width=int(_info(device, "preferred_vector_width_float", 0)),
            preferred_double_width=int(_info(device, "preferred_vector_width_double", 0)),
            driver_version=_info(device, "driver_version", "").strip(),
            opencl_version=_info(device, "version", "").strip(),
            fp32_denormals=supports_fp32_denormals(device))

    @property
    def float_dtypes(self) -> tuple[np.dtype, ...]:
        """float32, and float64 where the device has it."""
        if self.fp64:
            return (np.dtype(np.float32), np.dtype(np.float64))
        return (np.dtype(np.float32),)

    # -- quirks: one predicate each --------------------------------------------------------

    @property
    def reports_kernel_work_group_size(self) -> bool:
        """Whether CL_KERNEL_WORK_GROUP_SIZE is a kernel's real limit. NVIDIA's driver (580,
        H100) answers 256 for every kernel, also for those it runs with 512 and 1024
        work-items and right results: there the limit is the device's."""
        return "nvidia" not in self.platform.lower()

    def flushes_subnormals(self, dtype: Any) -> bool:
        """Whether the device may flush subnormal ``dtype`` numbers (below 1.18e-38 in
        float32) to zero, so that results passing through them differ from NumPy's: float32
        on devices without CL_FP_DENORM. float64 never (OpenCL requires its denormals);
        PoCL and Intel's CPU runtime keep float32's too."""
        return np.dtype(dtype) == np.float32 and not self.fp32_denormals

    def prefers_scalars(self, dtype: Any) -> bool:
        """Whether the device reports a preferred vector width of 1 (or none) for ``dtype``:
        it vectorises across work-items itself (Intel's CPU runtime), so explicit vectors
        only cost there."""
        name = np.dtype(dtype).name
        preferred = self.preferred_float_width if name == "float32" \
            else self.preferred_double_width
        return preferred <= 1

    def vector_width(self, dtype: Any) -> int:
        """Elements per work-item of a vector kernel of ``dtype``: the device's preferred
        width, at least :data:`MIN_VECTOR_WIDTH` (NVIDIA reports 1: a vector of 4 still pays
        there) and at most :data:`CPU_MAX_VECTOR_WIDTH`."""
        name = np.dtype(dtype).name
        preferred = self.preferred_float_width if name == "float32" \
            else self.preferred_double_width
        return min(max(preferred, MIN_VECTOR_WIDTH[name]), CPU_MAX_VECTOR_WIDTH[name])

    def narrowed_vector_width(self, dtype: Any, width: int) -> int:
        """``width`` as this device builds it: on CPUs at most :data:`CPU_MAX_VECTOR_WIDTH`."""
        if self.is_cpu:
            return min(width, CPU_MAX_VECTOR_WIDTH[np.dtype(dtype).name])
        return width

    def kernel_facts(self) -> dict:
        """The facts the Jacobi kernels' specs read (``oclsci.jacobi.specs``)."""
        return {"cus": self.compute_units, "max_wg": self.max_work_group_size,
                "local_mem": self.local_mem_bytes, "is_cpu": self.is_cpu}
