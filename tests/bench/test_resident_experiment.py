"""The persistent-kernel experiment (benchmarks/gpu_resident.py): exact against NumPy.

Its figures in docs/performance.md rest on the kernel being right; here it runs on the test
devices with small spans, phase counts odd and even, a last phase shorter than the others,
and more tiles than work-groups (each registered group then takes several in turn); and
under Oclgrind, whose OpenCL C 1.2 builds the work-group-fence variant (its groups run one
after another, so one group registers and takes every tile).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pyopencl as cl
import pytest
from conftest import REPO_ROOT, tool_missing

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


@pytest.mark.parametrize("steps", [3, 8])
def test_every_launched_group_takes_part_when_the_poll_waits(experiment, any_compute, steps):
    """A long poll lets every launched group register, so that the grid-wide barrier between
    phases really synchronises several groups (the first group stops waiting once all have
    registered, so the bound costs nothing then)."""
    rhs = np.random.default_rng(steps).standard_normal((37, 53)).astype(np.float32)
    queue = cl.CommandQueue(any_compute.context)
    solver = experiment.ResidentJacobi(queue, rhs, (1, 1, 8, 8, 2), "device", spin=10**9)
    for launch in range(1, 4):
        solver.advance(steps)
        assert solver.participants() == solver.groups
        assert np.array_equal(solver.read(), jacobi_numpy(rhs, launch * steps))


# Run in a subprocess that sees Oclgrind: each configuration for 1, 2 and 5 steps.
UNDER_OCLGRIND = """
import importlib.util, sys
import numpy as np, pyopencl as cl
from oclsci import create_context
from oclsci.jacobi.reference import jacobi_numpy
spec = importlib.util.spec_from_file_location("gpu_resident", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
queue = cl.CommandQueue(create_context("oclgrind").context)
rhs = np.random.default_rng(5).standard_normal((9, 13)).astype(np.float32)
for config in [(2, 2, 4, 4, 2), (1, 2, 8, 4, 1)]:
    for steps in (1, 2, 5):
        solver = module.ResidentJacobi(queue, rhs, config, "work_group")
        solver.advance(steps)
        print(config, steps, np.array_equal(solver.read(), jacobi_numpy(rhs, steps)))
"""


@pytest.mark.oclgrind
def test_resident_kernel_is_clean_under_oclgrind(tmp_path):
    import oclgrind as og

    reason = og.missing_reason()
    if reason:
        tool_missing(reason)
    env = og.oclgrind_environ(og.make_vendors_dir(tmp_path / "vendors"))
    env["PYTHONPATH"] = str(REPO_ROOT)
    done = subprocess.run([sys.executable, "-c", UNDER_OCLGRIND,
                           str(REPO_ROOT / "benchmarks" / "gpu_resident.py")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert sum(line.endswith(" True") for line in lines) == 6, done.stdout
    assert og.reports_in(done.stderr) == []
