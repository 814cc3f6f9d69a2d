"""Subnormal numbers (below 1.18e-38 in float32, 2.2e-308 in float64) through the stencil
kernels: inputs that hold them (1e-39 and 3e-45, 1e-310 and 5e-324) and a decay from normal
numbers that underflows gradually to zero, on every test device and every kernel (``step``,
``tiled``, ``stream``, ``streaming`` in 2-D), equal the NumPy reference bit for bit. A device
that may flush float32 subnormals to zero warns once when the input holds them."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from test_stencil_blocked import small_config
from test_stencil_kernels import DTYPES, _skip_without_fp64
from test_stencil_streaming import CONFIGS as STREAMING_CONFIGS

from oclsci.errors import OclsciWarning
from oclsci.runtime.device import create_context
from oclsci.stencil import Stencil

LAPLACE_2D = "u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u"
LAPLACE_3D = "u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1]"
# Each dimension: the stencil with a subnormal source, a decaying one, the grid.
STENCILS = {
    2: (Stencil("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", fields=["b"]),
        Stencil(f"0.5 * (u + k * ({LAPLACE_2D}))", params={"k": 0.2}), (29, 47)),
    3: (Stencil(f"u + k * ({LAPLACE_3D} - 6 * u) + s", params={"k": 0.1}, fields=["s"]),
        Stencil(f"0.5 * (u + k * ({LAPLACE_3D} - 6 * u))", params={"k": 0.1}), (7, 5, 9)),
}
# Subnormal magnitudes of each dtype: large ones, and a few of its smallest.
SUBNORMALS = {np.float32: (1e-39, 3e-45), np.float64: (1e-310, 5e-324)}
# A decay's start (normal), and steps at which it enters the subnormal range, is inside it
# and has partly underflowed to zero.
DECAY = {np.float32: (1e-36, (5, 15, 26)), np.float64: (1e-300, (23, 50, 72))}
# Each kernel in each dimension it takes (streaming: 2-D only; column: 3-D only).
KERNELS = [pytest.param(kernel, dims, id=f"{kernel}-{dims}d") for dims in (2, 3)
           for kernel in ("step", "tiled", "stream", "column", "streaming")
           if (kernel, dims) not in {("streaming", 3), ("column", 2)}]


def subnormal_grid(shape, dtype, rng):
    """Signed numbers of the dtype's two subnormal scales and normal ones just above them,
    mixed cell by cell."""
    large, small = SUBNORMALS[dtype]
    scales = rng.choice([4 * np.finfo(dtype).smallest_normal, large, small], size=shape)
    return (rng.uniform(-1, 1, shape) * scales).astype(dtype)


def kernel_params(kernel, dims, radius):
    """Small tiles and segments, so that the grids hold several (and partial ones)."""
    if kernel == "step":
        return None
    if kernel == "streaming":
        return STREAMING_CONFIGS[0]
    return small_config(kernel, dims, radius)


def _check(compute, stencil, u0, steps, kernel, fields=None):
    dims = u0.ndim
    params = kernel_params(kernel, dims, stencil.expression.radius)
    got = stencil.run(u0, steps, fields=fields, device=compute, kernel=kernel,
                      kernel_params=params)
    want = stencil.reference(u0, steps, fields=fields)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        first = tuple(bad[0])
        raise AssertionError(f"{kernel} {stencil!r} {u0.dtype} {u0.shape} after {steps} steps: "
                             f"{len(bad)} cells differ, first {list(first)}: "
                             f"{got[first]!r} for NumPy's {want[first]!r}")
    return want


def is_subnormal(values, dtype):
    """Which cells hold subnormal numbers of ``dtype``."""
    return (values != 0) & (np.abs(values) < np.finfo(dtype).smallest_normal)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("kernel,dims", KERNELS)
def test_subnormal_inputs_equal_numpy(compute, kernel, dims, dtype):
    """u0 and a read-only field of subnormal and small normal numbers."""
    _skip_without_fp64(compute, dtype)
    with_source, _, shape = STENCILS[dims]
    rng = np.random.default_rng(11)
    u0 = subnormal_grid(shape, dtype, rng)
    source = subnormal_grid(shape, dtype, rng)
    name = with_source.expression.fields[0]
    want = _check(compute, with_source, u0, 7, kernel, fields={name: source})
    assert is_subnormal(want, dtype).any()


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("kernel,dims", KERNELS)
def test_gradual_underflow_equals_numpy(compute, kernel, dims, dtype):
    """A decay from normal numbers into the subnormal range and down to zero."""
    _skip_without_fp64(compute, dtype)
    _, decay, shape = STENCILS[dims]
    start, checkpoints = DECAY[dtype]
    u0 = (np.random.default_rng(13).uniform(0, 1, shape) * start).astype(dtype)
    for steps in checkpoints:
        want = _check(compute, decay, u0, steps, kernel)
        assert is_subnormal(want, dtype).any(), steps  # passing through, not past, the range
    assert (want == 0).any()


def test_a_device_that_flushes_float32_subnormals_warns_once(compute):
    """On a device whose facts say it may flush float32 subnormals (a fake record on a fresh
    context), a run whose input or parameters hold them warns once, naming the device; normal
    inputs and float64 do not."""
    fresh = create_context(compute.spec, reuse=False)
    fresh.facts = dataclasses.replace(fresh.facts, fp32_denormals=False)
    _, decay, shape = STENCILS[2]
    normal = np.full(shape, 1e-30, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OclsciWarning)
        decay.run(normal, 1, device=fresh)
        if fresh.supports_fp64:
            decay.run(np.full(shape, 1e-310), 1, device=fresh)
    with pytest.warns(OclsciWarning, match=rf"device {fresh.spec} \(.+\) may flush float32 "
                                           r"subnormal numbers \(below 1.18e-38\)"):
        decay.run(normal, 1, device=fresh, params={"k": 1e-39})
    with warnings.catch_warnings():
        warnings.simplefilter("error", OclsciWarning)
        decay.run(np.full(shape, 3e-45, np.float32), 1, device=fresh)
