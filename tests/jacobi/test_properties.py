"""Property-based tests (hypothesis) of every kernel against its NumPy reference.

On every test device (PoCL in CI): each Jacobi kernel of ``oclsci.jacobi.kernels.KERNELS``
with random valid tuning parameters (drawn from its spec's test values), grid shapes (1xN,
Nx1, primes, one tile plus one), step counts (zero, remainders, several launches), dtypes and
starting points equals ``jacobi_numpy`` bit for bit; the residual agrees with NumPy's;
Mandelbrot on random windows agrees with ``mandelbrot_numpy`` on at least 99.5% of the pixels
(and bands put together give the whole image bit for bit); elementwise operations on random
dtypes and sizes equal NumPy.

The number of examples is bounded (``OCLSCI_HYPOTHESIS_SCALE`` multiplies it) and there is no
deadline: builds take a while on PoCL.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oclsci.errors import InputError
from oclsci.jacobi import kernels
from oclsci.jacobi.kernels import KERNELS, KernelConfig, default_config
from oclsci.jacobi.reference import jacobi_numpy, laplacian, residual_norm
from oclsci.jacobi.runner import relative_residual, run
from oclsci.jacobi.solver import JacobiSolver

pytestmark = pytest.mark.slow

SCALE = float(os.environ.get("OCLSCI_HYPOTHESIS_SCALE", "1"))


def examples(count: int):
    return settings(max_examples=max(1, int(count * SCALE)), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.filter_too_much])


# -- tuning parameters -------------------------------------------------------------------------

small_sizes = st.sampled_from([1, 2, 4, 8, 16, 32])


def _local(draw, allow_none=True):
    if allow_none and draw(st.booleans()):
        return None
    return (draw(small_sizes), draw(small_sizes))


@st.composite
def kernel_configs(draw, name: str):
    """A valid configuration of kernel ``name``: each parameter drawn from its spec's test
    values (a parameter with a default may be left out), a work-group shape when the kernel
    leaves it to the configuration."""
    spec = kernels.get(name)
    params = {}
    for param in spec.params:
        values = list(param.test_values or param.choices)
        value = draw(st.sampled_from(values if param.default is None else [None, *values]))
        if value is not None:
            params[param.name] = value
    config = KernelConfig(name, params, _local(draw) if spec.work_group is None else None)
    try:
        config.validate()
    except InputError:
        assume(False)
    return config


def tile_of(config: KernelConfig) -> tuple[int, int]:
    """(rows, columns) of a kernel's unit of work, to aim grid sizes at its edges."""
    return config.spec.tile(config.values())


def _extent(draw, tile: int) -> int:
    """1, a prime, a tile's size, one more, twice plus one, or anything up to 70."""
    return draw(st.one_of(
        st.sampled_from([1, 2, 3, 5, 7, 13, 17, 31, 37]),
        st.sampled_from([max(1, tile - 1), tile, tile + 1, 2 * tile + 1]),
        st.integers(1, 70)))


@st.composite
def jacobi_problems(draw, name: str, compute):
    dtype = np.dtype(draw(st.sampled_from(
        ["float32", "float64"] if compute.supports_fp64 else ["float32"])))
    if draw(st.integers(0, 7)) == 0:
        # The configuration `--kernel NAME` runs on this device without tuning.
        config = default_config(name, is_cpu=compute.is_cpu, dtype=dtype,
                                local_mem_bytes=int(compute.device.local_mem_size))
    else:
        config = draw(kernel_configs(name))
    assume(config.fits(compute, dtype))
    tile_h, tile_w = tile_of(config)
    kind = draw(st.sampled_from(["row", "column", "grid", "grid"]))
    if kind == "row":
        shape = (1, draw(st.integers(1, 70)))
    elif kind == "column":
        shape = (draw(st.integers(1, 70)), 1)
    else:
        shape = (_extent(draw, tile_h), _extent(draw, tile_w))
    k = int(config.steps_per_launch)
    steps = draw(st.one_of(st.sampled_from([0, 1, k, k + 1, 2 * k + 1]), st.integers(0, 3 * k + 2)))
    seed = draw(st.integers(0, 2**32 - 1))
    with_x0 = draw(st.booleans())
    return config, dtype, shape, steps, seed, with_x0


def _check_jacobi(compute, problem) -> None:
    config, dtype, shape, steps, seed, with_x0 = problem
    rng = np.random.default_rng(seed)
    rhs = rng.standard_normal(shape).astype(dtype)
    x0 = rng.standard_normal(shape).astype(dtype) if with_x0 else None
    solver = JacobiSolver(compute, rhs, x0=x0, dtype=dtype, config=config)
    result = run(solver, steps)
    got = solver.read()
    want = jacobi_numpy(rhs, steps, x0=x0, dtype=dtype)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise AssertionError(
            f"{config.describe()} {shape} {dtype.name} {steps} steps: {len(bad)} cell(s) differ "
            f"from NumPy, first at {bad[0].tolist()}: {got[tuple(bad[0])]!r} != "
            f"{want[tuple(bad[0])]!r}")
    assert result.iterations == steps
    expected = residual_norm(want.astype(np.float64), rhs)
    assert math.isclose(result.residual, expected, rel_tol=1e-4, abs_tol=1e-5), \
        (result.residual, expected)


@pytest.mark.parametrize("name", KERNELS)
def test_jacobi_kernel_equals_numpy_bit_for_bit(compute, name):
    @examples(14)
    @given(st.data())
    def check(data):
        _check_jacobi(compute, data.draw(jacobi_problems(name, compute)))

    check()


def test_every_jacobi_parameter_has_test_values():
    missing = [f"{name}.{param.name}" for name, spec in KERNELS.items() for param in spec.params
               if not (param.test_values or param.choices)]
    assert not missing, (f"Jacobi kernel parameters that property tests cannot draw: {missing};"
                         " give them test_values in their spec (oclsci/jacobi/specs/)")


@examples(15)
@given(m=st.integers(1, 40), n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       steps=st.integers(0, 30))
def test_residual_agrees_with_numpy(compute, m, n, seed, steps):
    rng = np.random.default_rng(seed)
    picture = rng.random((m, n)) * 255
    rhs = laplacian(picture).astype(np.float32)
    solver = JacobiSolver(compute, rhs, dtype=np.float32, config=KernelConfig(
        "coalesced", {"rows_per_item": 1}))
    run(solver, steps)
    expected = residual_norm(solver.read().astype(np.float64), rhs)
    got = relative_residual(solver)
    assert math.isclose(got, expected, rel_tol=1e-4, abs_tol=1e-6), (got, expected)
    # Rows split as MPI ranks split them add up to the whole.
    cut = (m + 1) // 2
    parts = solver.residual_sum_of_squares(1, cut) + solver.residual_sum_of_squares(cut + 1, m)
    assert math.isclose(parts, solver.residual_sum_of_squares(), rel_tol=1e-6, abs_tol=1e-9)
    # The scale, B squared, summed on the device (or the host, without fp64) over those rows.
    for first, last in ((1, m), (1, cut), (cut + 1, m)):
        want = float(np.sum(rhs[first - 1:last].astype(np.float64) ** 2))
        assert math.isclose(solver.rhs_sum_of_squares(first, last), want, rel_tol=1e-6,
                            abs_tol=1e-9)
        assert math.isclose(solver._host_rhs_sum_of_squares(first, last), want, rel_tol=1e-12,
                            abs_tol=1e-12)


# -- Mandelbrot --------------------------------------------------------------------------------

def _mandelbrot():
    try:
        from oclsci.mandelbrot import reference as mandelbrot_reference
        from oclsci.mandelbrot import renderer as mandelbrot
    except ImportError:
        pytest.skip("oclsci.mandelbrot has not landed")
    return mandelbrot, mandelbrot_reference


@st.composite
def windows(draw):
    centre_x = draw(st.floats(-2.2, 0.6))
    centre_y = draw(st.floats(-1.2, 1.2))
    span = 10 ** draw(st.floats(-5, 0.6))
    aspect = draw(st.floats(0.3, 3))
    return {"xmin": centre_x - span, "xmax": centre_x + span,
            "ymin": centre_y - span * aspect, "ymax": centre_y + span * aspect,
            "width": draw(st.integers(1, 80)), "height": draw(st.integers(1, 40)),
            "maxiter": draw(st.integers(1, 150))}


def _takes_unroll(module) -> bool:
    import inspect

    return "unroll" in inspect.signature(module.mandelbrot).parameters


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mandelbrot_agrees_with_numpy(compute, dtype):
    mandelbrot, reference = _mandelbrot()
    if dtype == "float64" and not compute.supports_fp64:
        pytest.skip("no fp64")

    @examples(12)
    @given(window=windows(), vector_width=st.sampled_from([None, 1, 2, 4, 8, 16]),
           unroll=st.sampled_from([None, 1, 2, 3, 8]))
    def check(window, vector_width, unroll):
        extra = {"unroll": unroll} if unroll is not None and _takes_unroll(mandelbrot) else {}
        result = mandelbrot.mandelbrot(**window, dtype=dtype, device=compute,
                                       vector_width=vector_width, **extra)
        counts, _ = reference.mandelbrot_numpy(**window, dtype=dtype)
        assert result.counts.shape == counts.shape
        agree = np.count_nonzero(result.counts == counts)
        # 99.5% of the pixels (one pixel may differ on tiny images).
        assert agree >= min(0.995 * counts.size, counts.size - 1), \
            (window, vector_width, unroll, counts.size - agree)

    check()


def test_mandelbrot_bands_make_the_whole_image(compute):
    mandelbrot, _ = _mandelbrot()

    @examples(6)
    @given(window=windows(), parts=st.integers(1, 5))
    def check(window, parts):
        parts = min(parts, window["height"])
        whole = mandelbrot.mandelbrot(**window, device=compute)
        bands = [mandelbrot.mandelbrot(**window, device=compute,
                                       rows=mandelbrot.row_band(window["height"], parts, i))
                 for i in range(parts)]
        np.testing.assert_array_equal(np.concatenate([b.counts for b in bands]), whole.counts)
        np.testing.assert_array_equal(np.concatenate([b.smooth for b in bands]), whole.smooth)

    check()


# -- elementwise -------------------------------------------------------------------------------

def _elementwise():
    try:
        from oclsci.elementwise import kernels as elementwise
        from oclsci.elementwise import ops as elementwise_ops
    except ImportError:
        pytest.skip("oclsci.elementwise has not landed")
    return elementwise, elementwise_ops


def _random_values(rng, dtype: np.dtype, size: int) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    return (rng.standard_normal(size) * 10 ** rng.uniform(-3, 3)).astype(dtype)


def test_elementwise_ops_equal_numpy(compute):
    """Every ready-made operation, random dtype, size, elements per work-item, host or device
    arrays: exactly NumPy's result (integers wrap around as in NumPy)."""
    elementwise, ops = _elementwise()
    dtypes = [name for name in elementwise.TYPE_NAMES
              if name != "float64" or compute.supports_fp64]

    @examples(40)
    @given(op_name=st.sampled_from(sorted(ops.OPS)), dtype=st.sampled_from(dtypes),
           size=st.one_of(st.integers(0, 40), st.integers(200, 3000)),
           per_item=st.sampled_from([1, 1, 2, 3, 8]), on_device=st.booleans(),
           seed=st.integers(0, 2**32 - 1))
    def check(op_name, dtype, size, per_item, on_device, seed):
        import pyopencl.array as cla

        assume(size > 0 or not on_device)  # known bug: test_elementwise_on_empty_device_arrays
        op = ops.OPS[op_name]
        dtype = np.dtype(dtype)
        rng = np.random.default_rng(seed)
        host = {name: _random_values(rng, dtype, size) for name in op.arrays}
        scalar = dtype.type(rng.integers(-5, 6) if dtype.kind == "i" else
                            rng.integers(0, 6) if dtype.kind == "u" else rng.uniform(-4, 4))
        reference_args = [host[name].copy() for name in op.arrays]
        if op.scalar_position is not None:
            reference_args.insert(op.scalar_position, scalar)
        with np.errstate(over="ignore"):
            expected = op.reference(*reference_args)
        kernel = op.kernel if per_item == 1 else op.kernel.variant(per_item=per_item)
        arrays = ({k: cla.to_device(compute.queue, v) for k, v in host.items()} if on_device
                  else dict(host))
        args = [arrays[name] for name in op.arrays]
        if op.scalar_position is not None:
            args.insert(op.scalar_position, scalar)
        result = kernel(*args, device=compute)
        if op.written in arrays:
            result = arrays[op.written]
        got = result.get() if on_device else result
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)

    check()


def test_elementwise_on_empty_device_arrays(compute):
    import pyopencl.array as cla

    _, ops = _elementwise()
    x = cla.zeros(compute.queue, 0, np.float32)
    y = cla.zeros(compute.queue, 0, np.float32)
    assert ops.add(x, y, device=compute).size == 0


def test_elementwise_user_kernel_equals_numpy(compute):
    """A user kernel with a placeholder type, a typed scalar, several outputs, in place."""
    elementwise, _ = _elementwise()
    kernel = elementwise.ElementwiseKernel("T x, T y, int32 k", "T x, T d",
                                           "d = x - y * k; x = x + y;", "user_kernel")
    dtypes = [name for name in elementwise.TYPE_NAMES
              if name != "float64" or compute.supports_fp64]

    @examples(15)
    @given(dtype=st.sampled_from(dtypes), size=st.integers(1, 1000),
           k=st.integers(-3, 3), seed=st.integers(0, 2**32 - 1))
    def check(dtype, size, k, seed):
        dtype = np.dtype(dtype)
        rng = np.random.default_rng(seed)
        x, y = _random_values(rng, dtype, size), _random_values(rng, dtype, size)
        before = x.copy()
        with np.errstate(over="ignore"):
            want_d = (before.astype(np.int64) - y.astype(np.int64) * k).astype(dtype) \
                if dtype.kind in "iu" else before - y * dtype.type(k)
            want_x = before + y
        x_out, d = kernel(x, y, np.int32(k), device=compute)
        assert x_out is x
        np.testing.assert_array_equal(x, want_x)
        np.testing.assert_array_equal(d, want_d)

    check()
