"""Every configuration oclsci can choose fits the GPUs of tests/gpu_profiles.py.

Those GPUs (AMD MI210/MI250/RDNA under ROCm, Intel Max and Arc, NVIDIA) are described, not
run: the defaults, their fallbacks and the tuner's candidates are checked against each
profile's work-group, kernel work-group and local-memory limits and its fp64 support. The
solver's fallback when a built kernel allows fewer work-items than the device (ROCm's 256)
is run on the test devices with CL_KERNEL_WORK_GROUP_SIZE replaced by a profile's.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_profiles import PROFILES, WITH_REQD_WORK_GROUP_SIZE, described, kernel_limit

from oclsci.elementwise.kernels import DEFAULT_LOCAL_SIZE
from oclsci.errors import DeviceError, InputError
from oclsci.jacobi import solver as jacobi_module
from oclsci.jacobi import tuner as jacobi_autotune
from oclsci.jacobi.kernels import (
    KERNELS,
    KernelConfig,
    auto_kernel,
    choose_config,
    device_candidates,
)
from oclsci.jacobi.reference import jacobi_numpy
from oclsci.jacobi.runner import run
from oclsci.jacobi.solver import JacobiSolver, WorkGroupTooLarge
from oclsci.mandelbrot.renderer import GPU_LOCAL_SIZE
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext

SHAPES = [(266, 400), (4096, 4096), (17, 40), (8192, 16384)]


def _dtypes(profile):
    return (np.float32, np.float64) if profile.fp64 else (np.float32,)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_default_and_fallback_fits_the_device(profile):
    compute = described(profile)
    for name in KERNELS:
        for dtype in _dtypes(profile):
            for shape in SHAPES:
                candidates = device_candidates(compute, name, dtype, shape)
                assert candidates, (name, dtype, shape)
                for config in candidates:
                    config.validate(max_work_group_size=profile.max_work_group_size,
                                    local_mem_bytes=profile.local_mem_bytes, dtype=dtype)
                # The solver takes the first whose built kernel accepts its work-group.
                limit = kernel_limit(profile, name)
                assert any(c.work_group_size() <= limit for c in candidates), (name, dtype)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_auto_and_tuner_candidates_fit_the_device(profile, tmp_path, monkeypatch):
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "tuning.json"))  # no tuned entry
    compute = described(profile)
    for dtype in _dtypes(profile):
        for shape in SHAPES:
            auto = choose_config(compute, "auto", dtype, shape)
            assert auto.name == auto_kernel(False, shape) and auto.fits(compute, dtype)
            for config in jacobi_autotune.candidates(compute, shape, dtype):
                assert config.fits(compute, dtype), config.describe()


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_mandelbrot_and_elementwise_groups_fit(profile):
    assert GPU_LOCAL_SIZE[0] * GPU_LOCAL_SIZE[1] <= profile.max_work_group_size
    assert DEFAULT_LOCAL_SIZE <= profile.max_work_group_size


@pytest.mark.parametrize("profile", [p for p in PROFILES if not p.fp64], ids=lambda p: p.name)
def test_float64_without_fp64_is_a_one_line_error_naming_the_device(profile):
    with pytest.raises(DeviceError) as error:
        ComputeContext.check_dtype(described(profile), np.float64)
    message = str(error.value)
    assert "\n" not in message and profile.name in message and "float32" in message
    assert ComputeContext.check_dtype(described(profile), np.float32) == np.float32


@pytest.fixture
def kernel_limit_256(monkeypatch):
    """CL_KERNEL_WORK_GROUP_SIZE as ROCm reports it for kernels without reqd_work_group_size."""
    real = programs.kernel_work_group_size

    def limited(compute, kernel):
        name = kernel.function_name
        if name in {programs.kernel_name(KERNELS[k].template) for k in WITH_REQD_WORK_GROUP_SIZE}:
            return real(compute, kernel)
        return min(256, real(compute, kernel))

    monkeypatch.setattr(programs, "kernel_work_group_size", limited)


def test_solver_takes_the_next_default_when_the_kernel_allows_fewer_items(
        compute, kernel_limit_256, monkeypatch):
    if compute.device.max_work_group_size < 512:
        pytest.skip("device allows fewer than 512 work-items")
    gpu_defaults = device_candidates(described(PROFILES[0]), "coalesced", np.float32,
                                     (266, 400))
    assert gpu_defaults[0].work_group_size() == 512
    monkeypatch.setattr(jacobi_module, "choose_config", lambda *args: gpu_defaults[0])
    monkeypatch.setattr(jacobi_module, "device_candidates", lambda *args: gpu_defaults)
    rhs = (np.random.default_rng(3).standard_normal((61, 83)) * 100).astype(np.float32)
    solver = JacobiSolver(compute, rhs, kernel="coalesced")
    assert solver.config == gpu_defaults[1] and solver.config.work_group_size() == 256
    run(solver, 9)
    assert np.array_equal(solver.read(), jacobi_numpy(rhs, 9, dtype=np.float32))


def test_mpi_ranks_agree_on_a_configuration_the_kernel_accepts(
        compute, kernel_limit_256, monkeypatch):
    if compute.device.max_work_group_size < 512:
        pytest.skip("device allows fewer than 512 work-items")
    gpu_defaults = device_candidates(described(PROFILES[0]), "coalesced", np.float64,
                                     (266, 400))
    monkeypatch.setattr(jacobi_module, "choose_config", lambda *args: gpu_defaults[0])
    monkeypatch.setattr(jacobi_module, "device_candidates", lambda *args: gpu_defaults)
    chosen = jacobi_module.choose_fitting_config(compute, "coalesced", np.float64, (266, 400))
    assert gpu_defaults[0].work_group_size() == 512
    assert chosen == gpu_defaults[1] and chosen.work_group_size() == 256


def test_a_given_configuration_too_large_for_the_kernel_is_a_clear_error(
        compute, kernel_limit_256):
    if compute.device.max_work_group_size < 512:
        pytest.skip("device allows fewer than 512 work-items")
    config = KernelConfig("coalesced", {"rows_per_item": 4, "vector": 2}, (128, 4))
    rhs = np.ones((20, 30), dtype=np.float32)
    with pytest.raises(WorkGroupTooLarge) as error:
        JacobiSolver(compute, rhs, config=config)
    assert isinstance(error.value, InputError)
    assert "CL_KERNEL_WORK_GROUP_SIZE" in str(error.value) and "256" in str(error.value)


def test_mandelbrot_and_elementwise_shrink_their_groups_to_the_kernel(compute, monkeypatch):
    from oclsci.elementwise.ops import add
    from oclsci.mandelbrot.reference import mandelbrot_numpy
    from oclsci.mandelbrot.renderer import MandelbrotRenderer

    real = programs.kernel_work_group_size
    monkeypatch.setattr(programs, "kernel_work_group_size",
                        lambda c, k: min(64, real(c, k)))
    renderer = MandelbrotRenderer(compute, width=97, height=45, maxiter=60, vector_width=1,
                                  unroll=1)
    assert renderer.local_size == GPU_LOCAL_SIZE
    result = renderer.run()
    expected, _ = mandelbrot_numpy(97, 45, 60)
    assert np.mean(result.counts == expected) >= 0.995
    x = np.arange(1000, dtype=np.int32)
    assert np.array_equal(add(x, x, device=compute), 2 * x)
