"""Every Jacobi kernel and several configurations of each equal NumPy bit for bit.

The kernels and their example configurations come from the registry
(:mod:`oclsci.jacobi.kernels`), whose specs must match their templates.

Grids: one cell, thin in either direction, odd sizes, the seed's 266 x 400; step counts that
are not multiples of the steps per launch (remainder launches); float32 and float64.
Subnormal numbers too: a right-hand side holding them, iterates that partly underflow to zero.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pytest

from oclsci.errors import OclsciWarning
from oclsci.jacobi import kernels
from oclsci.jacobi import solver as jacobi
from oclsci.jacobi.kernels import KERNELS, KernelConfig, default_config, device_default
from oclsci.jacobi.reference import jacobi_numpy
from oclsci.jacobi.runner import run
from oclsci.jacobi.solver import JacobiSolver
from oclsci.runtime import programs
from oclsci.runtime.device import create_context

SHAPES = [(1, 1), (3, 1000), (1021, 37), (37, 1021), (266, 400)]
# Cumulative step counts: 1, then 5 and 13 (remainders for every steps-per-launch below).
STEPS = (1, 5, 13)

# Each kernel's examples (oclsci.jacobi.kernels: a new kernel's are picked up here).
CONFIGS = [KernelConfig(name, dict(params), local) for name, spec in KERNELS.items()
           for params, local in spec.examples]


def _id(config: KernelConfig) -> str:
    return config.describe().replace(" ", "")


@pytest.fixture(scope="module")
def problems():
    rng = np.random.default_rng(2024)
    out = {}
    for shape in SHAPES:
        rhs = rng.standard_normal(shape) * 100
        for dtype in (np.float32, np.float64):
            b = rhs.astype(dtype)
            out[shape, dtype] = (b, {s: jacobi_numpy(b, s, dtype=dtype) for s in STEPS})
    return out


def _check(compute, config, problems, dtype, shapes=SHAPES):
    if dtype == np.float64 and not compute.supports_fp64:
        pytest.skip("no fp64 on this device")
    for shape in shapes:
        rhs, references = problems[shape, dtype]
        solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
        done = 0
        for steps in STEPS:
            solver.advance(steps - done)
            done = steps
            got = solver.read()
            want = references[steps]
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)
                raise AssertionError(
                    f"{config.describe()} {np.dtype(dtype).name} {shape} after {steps} steps: "
                    f"{len(bad)} cells differ, first {bad[0].tolist()}")
        assert solver.iteration == STEPS[-1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_kernel_equals_numpy(compute, problems, config, dtype):
    _check(compute, config, problems, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", [name for name, spec in KERNELS.items() if spec.params])
def test_default_configurations_equal_numpy(compute, problems, name, dtype):
    """The configurations `auto` falls back to, on this device and as a GPU would have them,
    for the seed's grid and for a large one (run on the small grids here)."""
    configs = {device_default(compute, name, dtype, (266, 400)),
               default_config(name, is_cpu=False, dtype=dtype, shape=(266, 400)),
               device_default(compute, name, dtype, (16384, 16384)),
               default_config(name, is_cpu=False, dtype=dtype, shape=(16384, 16384))}
    for config in configs:
        if config.fits(compute, dtype):
            _check(compute, config, problems, dtype, shapes=[(37, 1021), (266, 400)])


@pytest.fixture(scope="module")
def subnormal_problems():
    """Right-hand sides (the first iterates too) of signed numbers: normal ones just above
    the dtype's subnormal range, subnormal ones (1e-39 and 3e-45 in float32, 1e-310 and
    5e-324 in float64), in three bands of columns: the iterates stay subnormal in the
    middle band and partly underflow to zero in the last."""
    rng = np.random.default_rng(39)
    out = {}
    for dtype, scales in ((np.float32, (1e-39, 3e-45)), (np.float64, (1e-310, 5e-324))):
        bands = np.array([4 * np.finfo(dtype).smallest_normal, *scales])
        for shape in SUBNORMAL_SHAPES:
            chosen = bands[np.arange(shape[1]) * 3 // shape[1]]
            b = (rng.uniform(-1, 1, shape) * chosen).astype(dtype)
            out[shape, dtype] = (b, {s: jacobi_numpy(b, s, dtype=dtype) for s in STEPS})
        last = out[SUBNORMAL_SHAPES[-1], dtype][1][STEPS[-1]]
        assert ((last != 0) & (np.abs(last) < np.finfo(dtype).smallest_normal)).any()
        assert (last == 0).any()
    return out


SUBNORMAL_SHAPES = [(1, 1), (29, 131)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_kernel_keeps_subnormals_as_numpy(compute, subnormal_problems, config, dtype):
    _check(compute, config, subnormal_problems, dtype, shapes=SUBNORMAL_SHAPES)


def test_a_device_that_flushes_float32_subnormals_warns(compute):
    """On a device whose facts say it may flush float32 subnormals (a fake record on a fresh
    context), a right-hand side or x0 holding them warns, naming the device."""
    fresh = create_context(compute.spec, reuse=False)
    fresh.facts = dataclasses.replace(fresh.facts, fp32_denormals=False)
    rhs = np.full((4, 5), 1e-30)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OclsciWarning)
        JacobiSolver(fresh, rhs, config=KernelConfig("seed"))
    with pytest.warns(OclsciWarning, match=rf"device {fresh.spec} \(.+\) may flush float32"):
        JacobiSolver(fresh, rhs, x0=np.full((4, 5), 1e-39), config=KernelConfig("seed"))


def test_every_kernel_is_covered():
    assert {c.name for c in CONFIGS} == set(KERNELS)


def _signature(spec) -> list[tuple[str, str]]:
    """(name, kind) of each argument of the spec's OpenCL kernel, from its template."""
    params, local = spec.examples[0]
    config = KernelConfig(spec.name, dict(params), local)
    source = programs.render(spec.template, **config.template_params(), dtype=np.float32)
    found = re.search(rf"void\s+{programs.kernel_name(spec.template)}\s*\(([^)]*)\)", source)
    assert found, f"no kernel {programs.kernel_name(spec.template)} in {spec.template}"
    arguments = []
    for text in found.group(1).split(","):
        name = re.search(r"(\w+)\s*$", text).group(1).rstrip("_")
        kind = "buffer" if "*" in text else text.split()[0]
        arguments.append((name, kind))
    return arguments


@pytest.mark.parametrize("name", KERNELS)
def test_spec_describes_its_template(name):
    """The arguments the solver binds by name are the template's, in its order and types;
    a kernel advancing several steps per launch takes them as ``steps``."""
    spec = kernels.get(name)
    assert spec.template in programs.template_names()
    assert _signature(spec) == [(a.name, a.kind) for a in spec.arguments]
    names = [a.name for a in spec.arguments]
    assert names[:6] == ["x_new", "x_old", "rhs", "m", "n", "row_stride"]
    assert ("steps" in names) == (spec.steps_param is not None)
    assert ("scratch" in names) == (spec.scratch is not None)
    assert spec.examples and spec.corner_cases
    for params, local in spec.examples + spec.corner_cases:
        KernelConfig(name, dict(params), local).validate()


def test_run_with_stopwatch_and_remainders(compute, problems):
    """`run` (events on the first and last launches) over chunks that end mid-launch."""
    rhs, references = problems[(266, 400), np.float32]
    config = KernelConfig("temporal", {"rows": 2, "cols": 2, "local_w": 8, "local_h": 4,
                                       "max_steps": 3, "buffers": 2})
    solver = JacobiSolver(compute, rhs, config=config)
    assert solver.steps_per_launch == 3
    result = run(solver, 5, check_every=2, tol=1e-30)
    assert result.iterations == 5 and result.device_seconds > 0
    assert np.array_equal(solver.read(), references[5])
    run(solver, 13)
    assert np.array_equal(solver.read(), references[13])


@pytest.mark.parametrize("raw", ["0", "1"])
def test_batched_launches_with_and_without_ctypes(compute, problems, monkeypatch, raw):
    """Many launches: throttling batches, the ctypes path and PyOpenCL's agree."""
    monkeypatch.setenv("OCLSCI_RAW_ENQUEUE", raw)
    monkeypatch.setattr(jacobi, "LAUNCH_BATCH", 3)
    rhs, references = problems[(37, 1021), np.float64]
    for config in (KernelConfig("coalesced", {"rows_per_item": 2, "vector": 2}),
                   KernelConfig("bands", {"band_h": 8, "band_w": 0, "max_steps": 2,
                                          "workers": 2})):
        if not compute.supports_fp64:
            pytest.skip("no fp64 on this device")
        solver = JacobiSolver(compute, rhs, dtype=np.float64, config=config)
        solver.advance(13)
        assert np.array_equal(solver.read(), references[13])
        stopwatch = compute.stopwatch()
        solver = JacobiSolver(compute, rhs, dtype=np.float64, config=config)
        solver.advance(13, stopwatch)
        stopwatch.stop()
        assert stopwatch.first_event is not None and stopwatch.device_seconds > 0
        assert np.array_equal(solver.read(), references[13])


def test_reconfigure_keeps_the_iterate(compute, problems):
    rhs, references = problems[(266, 400), np.float32]
    solver = JacobiSolver(compute, rhs, config=KernelConfig("coalesced", {"rows_per_item": 1}))
    solver.advance(5)
    solver.reconfigure(KernelConfig("bands", {"band_h": 40, "band_w": 0, "max_steps": 4,
                                              "workers": 2}))
    solver.advance(8)
    assert np.array_equal(solver.read(), references[13])


def test_strided_integer_and_fortran_inputs_upload_exactly(compute):
    """B and X0 reach the padded device grid whatever their layout and type: a strided view,
    integers, Fortran order; the ring of zeros around them stays zero."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((40, 61)).astype(np.float32)
    rhs = base[::2, 1::3]  # 20 x 20, not contiguous
    integers = rng.integers(-50, 50, size=(20, 20))
    x0 = np.asfortranarray(rng.standard_normal((20, 20)).astype(np.float32))
    config = KernelConfig("coalesced", {"rows_per_item": 1})
    solver = JacobiSolver(compute, rhs, config=config)
    assert np.array_equal(solver.read(), rhs)
    solver.advance(7)
    assert np.array_equal(solver.read(), jacobi_numpy(rhs, 7))
    solver = JacobiSolver(compute, integers, x0=x0, config=config)
    solver.advance(7)
    assert np.array_equal(solver.read(), jacobi_numpy(integers, 7, x0=x0))
    padded = solver.read_rows(0, solver.m + 2)
    assert not padded[[0, -1]].any() and not padded[:, 0].any()
    assert not padded[:, solver.n + 1:].any()


@pytest.mark.parametrize("params", [
    {"rows": 2, "cols": 2, "local_w": 8, "local_h": 4, "max_steps": 3, "buffers": 2},
    {"rows": 1, "cols": 1, "local_w": 8, "local_h": 8, "max_steps": 2, "buffers": 1}])
def test_rows_read_only(compute, params):
    """``rows_read`` (an MPI sub-slab's owned rows, the others refreshed after each launch):
    ``temporal``'s full launches give those rows' bits and leave the rows before them as
    they were; a launch of fewer steps writes every row, as without it."""
    rng = np.random.default_rng(5)
    rhs, x0 = rng.standard_normal((40, 23)), rng.standard_normal((40, 23))
    config = KernelConfig("temporal", params)
    steps = config.steps_per_launch
    first, stop = 17, 26
    solver = JacobiSolver(compute, rhs, x0=x0, dtype=np.float64, config=config,
                          rows_read=(first, stop))
    solver.advance(steps)
    got, want = solver.read(), jacobi_numpy(rhs, steps, x0=x0, dtype=np.float64)
    assert np.array_equal(got[first:stop], want[first:stop])
    assert np.array_equal(got[:first], x0[:first])  # not written: stale
    # The exchange refreshes the other rows (here: from the reference), then a short launch.
    rows = solver.read_rows(1, solver.m)
    rows[:, 1:solver.n + 1] = want
    solver.write_rows(1, rows)
    solver.advance(steps - 1)
    assert np.array_equal(solver.read(), jacobi_numpy(rhs, 2 * steps - 1, x0=x0,
                                                      dtype=np.float64))
