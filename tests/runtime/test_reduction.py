"""The reduction helper (oclsci.runtime.reduction, kernels/reduce.cl.mako) against NumPy: sums,
minima, maxima and counts over sizes of one item, less than a work-group, not a multiple of
it and several groups; float32 and float64; both walks over the items (strided, chunked).
Sums are also compared bit for bit with a NumPy model of the kernel's order."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

from oclsci.errors import InvalidArgumentError
from oclsci.runtime.reduction import GroupReduction, group_count, map_reduction

SIZES = (1, 5, 63, 64, 65, 1000, 4099)


def _upload(compute, values: np.ndarray):
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(compute.context, flags, hostbuf=values)


def _dtypes(compute):
    return (np.float32, np.float64) if compute.supports_fp64 else (np.float32,)


def _model_sum(values: np.ndarray, result_dtype, group_size: int, groups: int,
               chunked: bool) -> np.float64:
    """The kernel's order: each work-item's items in turn, the group's tree, then np.sum."""
    items = groups * group_size
    acc = np.zeros(items, dtype=result_dtype)
    count = len(values)
    for item in range(items):
        if chunked:
            chunk = -(-count // items)
            share = values[item * chunk:min(item * chunk + chunk, count)]
        else:
            share = values[item::items]
        for value in share.astype(result_dtype):
            acc[item] = acc[item] + value
    partial = np.empty(groups, dtype=result_dtype)
    for group in range(groups):
        tree = acc[group * group_size:(group + 1) * group_size].copy()
        width = group_size // 2
        while width:
            tree[:width] = tree[:width] + tree[width:2 * width]
            width //= 2
        partial[group] = tree[0]
    return np.sum(partial, dtype=np.float64)


@pytest.mark.parametrize("chunked", [False, True], ids=["strided", "chunked"])
@pytest.mark.parametrize("size", SIZES)
def test_sum_equals_numpy_bit_for_bit_in_the_kernels_order(any_compute, size, chunked):
    rng = np.random.default_rng(size)
    for dtype in _dtypes(any_compute):
        values = rng.standard_normal(size).astype(dtype)
        reduction = map_reduction(any_compute, params=[("a", dtype, True)], map_expr="a[k]",
                                  result_dtype=dtype, dtype=dtype, chunked=chunked,
                                  group_size=8)
        got = reduction(_upload(any_compute, values), size)
        assert got.dtype == np.float64
        want = _model_sum(values, dtype, 8, reduction.groups, chunked)
        assert got == want, (float(got).hex(), float(want).hex())
        assert np.isclose(got, np.sum(values, dtype=np.float64),
                          rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("size", SIZES)
def test_min_and_max_equal_numpy(any_compute, size):
    rng = np.random.default_rng(100 + size)
    for dtype in _dtypes(any_compute):
        values = (rng.standard_normal(size) * 1e3).astype(dtype)
        buffer = _upload(any_compute, values)
        for combine, neutral, finish, want in (("fmin", "INFINITY", "min", values.min()),
                                               ("fmax", "-INFINITY", "max", values.max())):
            reduction = map_reduction(any_compute, params=[("a", dtype, True)],
                                      map_expr="a[k]", result_dtype=dtype, dtype=dtype,
                                      combine=combine, neutral=neutral, finish=finish)
            got = reduction(buffer, size)
            assert got.dtype == dtype and got == want


@pytest.mark.parametrize("size", SIZES)
def test_count_with_a_scalar_argument_equals_numpy(any_compute, size):
    values = np.random.default_rng(200 + size).standard_normal(size).astype(np.float32)
    reduction = map_reduction(any_compute, params=[("a", np.float32, True),
                                                   ("threshold", np.float32, False)],
                              map_expr="(result_t)(a[k] > threshold)", result_dtype=np.uint32,
                              group_size=64, chunked=False)
    got = reduction(_upload(any_compute, values), 0.25, size)  # Python numbers: typed here
    assert isinstance(got, np.uint64) and int(got) == int(np.count_nonzero(values > 0.25))


def test_a_launch_of_fewer_items_than_groups_reads_only_its_groups(any_compute):
    values = np.arange(1, 1001, dtype=np.float32)
    reduction = map_reduction(any_compute, params=[("a", np.float32, True)], map_expr="a[k]",
                              result_dtype=np.float32, dtype=np.float32, group_size=4)
    buffer = _upload(any_compute, values)
    assert reduction(buffer, 1000) == values.sum(dtype=np.float64)
    assert reduction(buffer, 3) == 6 and reduction.groups == 1


def test_several_fields_finish_each_its_own_way(any_compute):
    """A kernel writing several fields per group (here the Mandelbrot colouring's extremes,
    min and max of two quantities) finishes each field as asked."""
    from oclsci.mandelbrot.device_shading import EXTREMES_GROUP_SIZE
    from oclsci.runtime import programs

    real = np.dtype(np.float32)
    smooth = np.random.default_rng(7).random((37, 29)).astype(real) * 40
    kernel = programs.get_kernel(any_compute, "mandelbrot_shade",
                                 name="mandelbrot_shade_extremes", dtype=real,
                                 src_dtype=real, group_size=EXTREMES_GROUP_SIZE)
    reduction = GroupReduction(any_compute, kernel, group_size=EXTREMES_GROUP_SIZE,
                               arg_types=(None, np.int32, np.int32, np.int32, real, real, real),
                               result_dtype=real, finish=("min", "max", "min", "max"))
    low, high, dim, bright = reduction(_upload(any_compute, smooth), 37, 29, 1, 0.0, 0.0, 1.0,
                                       items=smooth.size)
    assert (low, high) == (smooth.min(), smooth.max())
    assert dim <= bright


def test_group_count_fills_the_device_or_the_items():
    compute = SimpleNamespace(facts=SimpleNamespace(compute_units=3))
    assert group_count(compute, 64) == 12
    assert group_count(compute, 64, per_unit=8) == 24
    assert group_count(compute, 64, items=65) == 2
    assert group_count(compute, 64, items=0) == 1
    assert group_count(compute, 64, items=10**6) == 12
    assert group_count(SimpleNamespace(facts=SimpleNamespace(compute_units=0)), 16) == 4


def test_bad_finishes_and_argument_counts_are_refused(any_compute):
    reduction = map_reduction(any_compute, params=[("a", np.float32, True)], map_expr="a[k]",
                              result_dtype=np.float32, dtype=np.float32)
    with pytest.raises(InvalidArgumentError, match="takes 2 arguments"):
        reduction.enqueue(1)
    with pytest.raises(InvalidArgumentError, match="finishes each field"):
        GroupReduction(any_compute, reduction.kernel, group_size=16, arg_types=(None,),
                       result_dtype=np.float32, finish=("mean",))
