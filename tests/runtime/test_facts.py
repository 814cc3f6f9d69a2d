"""What oclsci reads of a device and the quirks it infers (oclsci.runtime.facts), on fake
devices: each predicate for the devices it was written for."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

from oclsci.runtime.facts import DeviceFacts, holds_subnormals

CPU, GPU = cl.device_type.CPU, cl.device_type.GPU


def fake_device(platform: str, kind: int, *, float_width: int = 1, double_width: int = 1,
                fp64_config: int = 1, fp32_config: int = 0xbf, extensions: str = "",
                unreadable: tuple = ()):
    """A stand-in for a pyopencl Device; ``unreadable`` names attributes whose query fails."""
    class Device(SimpleNamespace):
        def __getattribute__(self, name):
            if name in unreadable:
                raise cl.Error(f"{name}: not supported")
            return super().__getattribute__(name)
    return Device(name=" Some Device ", vendor="Vendor", platform=SimpleNamespace(name=platform),
                  type=kind, max_compute_units=8, max_work_group_size=1024,
                  local_mem_size=65536, global_mem_size=2**34, max_mem_alloc_size=2**32,
                  double_fp_config=fp64_config, single_fp_config=fp32_config,
                  extensions=extensions,
                  preferred_vector_width_float=float_width,
                  preferred_vector_width_double=double_width, driver_version="1.0 ",
                  version="OpenCL 3.0 ")


def test_an_nvidia_gpu_takes_the_devices_work_group_limit_and_vectors_of_four():
    facts = DeviceFacts.of(fake_device("NVIDIA CUDA", GPU))
    assert facts.is_gpu and not facts.is_cpu and facts.type_name == "GPU"
    assert not facts.reports_kernel_work_group_size
    assert facts.vector_width(np.float32) == 4 and facts.vector_width(np.float64) == 2
    assert facts.narrowed_vector_width(np.float32, 16) == 16  # no CPU cap on a GPU
    assert facts.name == "Some Device" and facts.driver_version == "1.0"


def test_pocl_on_a_cpu_caps_its_vectors():
    facts = DeviceFacts.of(fake_device("Portable Computing Language", CPU, float_width=16,
                                       double_width=8))
    assert facts.is_cpu and not facts.is_gpu and facts.reports_kernel_work_group_size
    assert facts.vector_width(np.float32) == 8 and facts.vector_width(np.float64) == 4
    assert facts.narrowed_vector_width(np.float64, 8) == 4
    assert not facts.prefers_scalars(np.float32)


def test_intels_cpu_runtime_prefers_scalars():
    facts = DeviceFacts.of(fake_device("Intel(R) OpenCL", CPU, float_width=1, double_width=1))
    assert facts.prefers_scalars(np.float32) and facts.prefers_scalars(np.float64)


def test_a_simulator_claiming_every_type_is_no_gpu():
    facts = DeviceFacts.of(fake_device("Oclgrind", GPU | CPU))
    assert facts.is_cpu and not facts.is_gpu and facts.type_name == "GPU+CPU"


@pytest.mark.parametrize("config,extensions,fp64", [
    (1, "", True), (0, "cl_khr_fp64 cl_khr_int64", True), (0, "cl_khr_int64", False)])
def test_fp64_from_the_double_config_or_the_extension(config, extensions, fp64):
    assert DeviceFacts.of(fake_device("P", GPU, fp64_config=config,
                                      extensions=extensions)).fp64 is fp64


@pytest.mark.parametrize("config,flushes", [
    (0xbf, False),  # PoCL: CL_FP_DENORM and every other flag
    (0x7, False),  # Intel's CPU runtime: denormals, INF/NaN, round to nearest
    (0x7 & ~int(cl.device_fp_config.DENORM), True)])  # a device that may flush them
def test_float32_subnormals_from_the_single_config(config, flushes):
    facts = DeviceFacts.of(fake_device("P", GPU, fp32_config=config))
    assert facts.fp32_denormals is not flushes
    assert facts.flushes_subnormals(np.float32) is flushes
    assert not facts.flushes_subnormals(np.float64)  # OpenCL requires float64's


def test_holds_subnormals_in_the_given_dtype():
    assert holds_subnormals(np.float32([1, 0, -1e-39]), np.float32)
    assert holds_subnormals(np.float64([3e-45]), np.float32) and holds_subnormals(3e-45, np.float32)
    assert not holds_subnormals(np.float64([0, 1e-46, 1.2e-38, 1]), np.float32)
    assert holds_subnormals(1e-310, np.float64) and not holds_subnormals(1e-39, np.float64)
    assert not holds_subnormals(np.arange(-3, 3), np.float32)


def test_unreadable_figures_fall_back():
    """A driver that fails the optional queries: no vector preference (so scalars), the
    whole memory per allocation, no fp64 unless the extension says so, float32 subnormals
    kept."""
    facts = DeviceFacts.of(fake_device(
        "P", CPU, unreadable=("preferred_vector_width_float", "preferred_vector_width_double",
                              "max_mem_alloc_size", "double_fp_config", "single_fp_config")))
    assert facts.preferred_float_width == 0 and facts.prefers_scalars(np.float32)
    assert facts.max_alloc_bytes == facts.global_mem_bytes and not facts.fp64
    assert facts.fp32_denormals and not facts.flushes_subnormals(np.float32)


def test_the_kernel_specs_facts():
    facts = DeviceFacts.of(fake_device("P", GPU))
    assert facts.kernel_facts() == {"cus": 8, "max_wg": 1024, "local_mem": 65536,
                                    "is_cpu": False}


def test_a_context_reads_its_device_once(any_compute):
    facts = any_compute.facts
    assert facts.name == any_compute.name and facts.is_cpu == any_compute.is_cpu
    assert facts.fp64 == any_compute.supports_fp64
    assert facts.compute_units == int(any_compute.device.max_compute_units)
    single = any_compute.device.single_fp_config
    assert facts.fp32_denormals == bool(single & cl.device_fp_config.DENORM)
