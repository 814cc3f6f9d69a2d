"""The limits of GPUs oclsci cannot run on here, as their OpenCL drivers report them.

Each profile is what ``clGetDeviceInfo``/``clGetKernelWorkGroupInfo`` answer on that GPU and
driver; docs/vendors.md gives the same table with its sources. ``kernel_work_group_size`` is
CL_KERNEL_WORK_GROUP_SIZE of a kernel *without* ``reqd_work_group_size`` (oclsci's seed,
coalesced, bands, Mandelbrot and elementwise kernels); kernels with the attribute (blocked,
temporal, residual) get the device's maximum.

Sources:
- AMD ROCm OpenCL (CLR): ``rocclr/device/rocm/rocsettings.cpp`` sets
  ``maxWorkGroupSize_ = 1024`` and ``preferredWorkGroupSize_ = 256``; clang limits OpenCL
  kernels without ``reqd_work_group_size`` to 256 work-items on AMDGPU
  (``clang/lib/CodeGen/Targets/AMDGPU.cpp``: ``OpenCLDefaultMaxWorkGroupSize = 256``, the
  ``amdgpu-flat-work-group-size`` attribute ``"1,256"``). LDS: 64 KiB per work-group on CDNA2
  (MI210/MI250, AMD "Instinct MI200 ISA reference", LDS section) and RDNA
  (RDNA3 ISA guide). Wavefront 64 on CDNA, 32 (or 64) on RDNA. fp64: full rate on CDNA2,
  supported (slow) on RDNA.
- Intel compute-runtime (NEO), ``clinfo`` and Intel's oneAPI GPU optimisation guide:
  Data Center GPU Max 1550: max work-group 1024, SLM 128 KiB per work-group, sub-groups 16
  and 32, fp64 yes. Arc A770 (Alchemist, DG2): max work-group 1024, SLM 64 KiB, sub-groups
  8, 16, 32, no ``cl_khr_fp64`` (no fp64 hardware).
- NVIDIA OpenCL (H100, A100): max work-group 1024, CL_DEVICE_LOCAL_MEM_SIZE 48 KiB (the static
  shared-memory limit per block), warp 32, fp64 yes; register pressure can lower
  CL_KERNEL_WORK_GROUP_SIZE below 1024 for a given kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pyopencl as cl

from oclsci.jacobi.kernels import KERNELS
from oclsci.runtime import programs
from oclsci.runtime.facts import DeviceFacts

KiB = 1024


@dataclass(frozen=True)
class GPUProfile:
    """What one GPU's OpenCL driver reports."""

    name: str
    platform: str
    max_work_group_size: int
    local_mem_bytes: int
    kernel_work_group_size: int
    compute_units: int
    fp64: bool
    sub_group_sizes: tuple[int, ...]


PROFILES = (
    GPUProfile("AMD Instinct MI210 (gfx90a)", "AMD Accelerated Parallel Processing",
               1024, 64 * KiB, 256, 104, True, (64,)),
    GPUProfile("AMD Instinct MI250X GCD (gfx90a)", "AMD Accelerated Parallel Processing",
               1024, 64 * KiB, 256, 110, True, (64,)),
    GPUProfile("AMD Radeon RX 7900 XTX (gfx1100, RDNA3)", "AMD Accelerated Parallel Processing",
               1024, 64 * KiB, 256, 48, True, (32, 64)),
    GPUProfile("Intel Data Center GPU Max 1550", "Intel(R) OpenCL Graphics",
               1024, 128 * KiB, 1024, 512, True, (16, 32)),
    GPUProfile("Intel Arc A770 Graphics", "Intel(R) OpenCL Graphics",
               1024, 64 * KiB, 1024, 512, False, (8, 16, 32)),
    GPUProfile("NVIDIA H100 80GB HBM3", "NVIDIA CUDA",
               1024, 48 * KiB, 1024, 132, True, (32,)),
    # A driver that lowers the kernel limit (register pressure) and the device maximum.
    GPUProfile("small work-groups (register-limited)", "any", 512, 32 * KiB, 128, 16, True,
               (32,)),
)


# Kernels declaring reqd_work_group_size get the device's maximum; the others the kernel limit.
WITH_REQD_WORK_GROUP_SIZE = {
    name for name, spec in KERNELS.items()
    if "reqd_work_group_size" in (programs.template_dir() / f"{spec.template}.cl.mako").read_text()}


def described(profile: GPUProfile) -> SimpleNamespace:
    """A stand-in for a ComputeContext on the described GPU (no OpenCL calls)."""
    device = SimpleNamespace(
        name=profile.name, driver_version="described",
        max_work_group_size=profile.max_work_group_size,
        local_mem_size=profile.local_mem_bytes, max_compute_units=profile.compute_units,
        type=cl.device_type.GPU, global_mem_size=64 * 2**30, max_mem_alloc_size=16 * 2**30)
    facts = DeviceFacts(
        name=profile.name, vendor=profile.platform, platform=profile.platform, type_name="GPU",
        is_cpu=False, is_gpu=True, compute_units=profile.compute_units,
        max_work_group_size=profile.max_work_group_size, local_mem_bytes=profile.local_mem_bytes,
        global_mem_bytes=device.global_mem_size, max_alloc_bytes=device.max_mem_alloc_size,
        fp64=profile.fp64, preferred_float_width=1, preferred_double_width=1,
        driver_version="described", opencl_version="OpenCL 3.0")
    return SimpleNamespace(device=device, facts=facts, is_cpu=False, is_gpu=True,
                           name=profile.name, spec="0:0", supports_fp64=profile.fp64)


def kernel_limit(profile: GPUProfile, name: str) -> int:
    """CL_KERNEL_WORK_GROUP_SIZE of Jacobi kernel ``name`` built on the described GPU."""
    if name in WITH_REQD_WORK_GROUP_SIZE:
        return profile.max_work_group_size
    return profile.kernel_work_group_size
