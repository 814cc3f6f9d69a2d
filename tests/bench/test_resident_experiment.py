"""The persistent-kernel experiment (benchmarks/gpu_resident.py): exact against NumPy.

Its figures in docs/performance.md rest on the kernel being right; here it runs on the test
devices with small spans, phase counts odd and even, a last phase shorter than the others,
and more tiles than work-groups (each registered group then takes several in turn).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pyopencl as cl
import pytest
from conftest import REPO_ROOT

from oclsci.jacobi.reference import jacobi_numpy


@pytest.fixture(scope="module")
def experiment():
    """The benchmark script as a module."""
    path = REPO_ROOT / "benchmarks" / "gpu_resident.py"
    spec = importlib.util.spec_from_file_location("gpu_resident", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("config", [(1, 1, 8, 8, 2), (2, 2, 4, 8, 3), (2, 1, 8, 4, 1)])
@pytest.mark.parametrize("steps", [1, 2, 7, 40])
def test_resident_kernel_matches_numpy(experiment, any_compute, config, steps):
    rhs = np.random.default_rng(sum(config) + steps).standard_normal((37, 53)).astype(
        np.float32)
    queue = cl.CommandQueue(any_compute.context)
    solver = experiment.ResidentJacobi(queue, rhs, config, "device")
    solver.advance(steps)
    assert np.array_equal(solver.read(), jacobi_numpy(rhs, steps))
    solver.advance(steps)  # a second launch: the poll of the first must not leak into it
    assert np.array_equal(solver.read(), jacobi_numpy(rhs, 2 * steps))
    assert 1 <= solver.participants() <= solver.groups < solver.tiles
