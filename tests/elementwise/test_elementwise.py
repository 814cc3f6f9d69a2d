"""CuPy-style elementwise kernels: every dtype, placeholders, scalars, in place, errors, CLI."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

from oclsci.cli import main
from oclsci.elementwise.kernels import TYPE_NAMES, ElementwiseKernel, parse_params
from oclsci.elementwise.ops import add, axpy, increment, multiply_them
from oclsci.errors import DeviceError, InputError, InvalidArgumentError, KernelBuildError

AXPY_LIKE = ElementwiseKernel("T a, T x, T y", "T z", "z = a * x + y", "axpy_like")


def _random(rng, size, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    return rng.standard_normal(size).astype(dtype)


def _skip_without_fp64(compute, dtype):
    if np.dtype(dtype) == np.float64 and not compute.supports_fp64:
        pytest.skip(f"{compute.name} has no fp64")


@pytest.mark.parametrize("dtype", TYPE_NAMES)
def test_every_dtype_with_placeholders_and_a_scalar(compute, dtype):
    _skip_without_fp64(compute, dtype)
    rng = np.random.default_rng(1)
    x, y = _random(rng, 1000, dtype), _random(rng, 1000, dtype)
    a = np.dtype(dtype).type(3)
    z = AXPY_LIKE(a, x, y, device=compute)
    assert z.dtype == np.dtype(dtype) and z.shape == x.shape
    with np.errstate(over="ignore"):
        assert np.array_equal(z, a * x + y)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float32", "float64"])
def test_ready_made_ops(any_compute, dtype):
    _skip_without_fp64(any_compute, dtype)
    rng = np.random.default_rng(2)
    a, b = _random(rng, 777, dtype), _random(rng, 777, dtype)
    with np.errstate(over="ignore"):
        assert np.array_equal(multiply_them(a, b, device=any_compute), a * b)
        assert np.array_equal(add(a, b, device=any_compute), a + b)
        expected = a + np.dtype(dtype).type(3)
        x = a.copy()
        assert increment(x, 3, device=any_compute) is x
        assert np.array_equal(x, expected)
        y = b.copy()
        axpy(np.dtype(dtype).type(2), a, y, device=any_compute)
        assert np.array_equal(y, np.dtype(dtype).type(2) * a + b)


def test_seed_hadamard_kernel_and_in_place_by_passing_the_same_array(any_compute):
    """The seed's CuPy kernel: 'float32 x, float32 val' -> 'float32 y', 'y = x + val'."""
    hadamard = ElementwiseKernel("float32 x, float32 val", "float32 y", "y = x + val",
                                 "hadamard_kern")
    x = np.ones(256, dtype=np.float32)
    y = np.ones(256, dtype=np.float32)
    assert hadamard(x, np.float32(3.0), y, device=any_compute) is y
    assert np.all(y == 4.0) and np.all(x == 1.0)
    hadamard(x, 3.0, x, device=any_compute)  # the output is the input: in place
    assert np.all(x == 4.0)
    fresh = hadamard(x, 1, device=any_compute)  # an int scalar for a float32 parameter
    assert fresh.dtype == np.float32 and np.all(fresh == 5.0)


def test_seed_increment_by_three_in_place(any_compute):
    x = np.ones(256, dtype=np.float32)
    increment(x, np.float32(3.0), device=any_compute)
    assert not np.any(abs(x - 4.0) > 1e-12)
    wrap = np.array([126, 127, -128], dtype=np.int8)
    increment(wrap, 3, device=any_compute)
    assert wrap.tolist() == [-127, -126, -125]


def test_pyopencl_arrays_stay_on_the_device(any_compute):
    queue = any_compute.queue
    x = cla.to_device(queue, np.arange(100, dtype=np.float32))
    y = cla.to_device(queue, np.ones(100, dtype=np.float32))
    z = add(x, y, device=any_compute)
    assert isinstance(z, cla.Array) and z.context == any_compute.context
    assert np.array_equal(z.get(), np.arange(100) + 1.0)
    axpy(np.float32(2), x, y, device=any_compute)
    assert np.array_equal(y.get(), 2 * np.arange(100, dtype=np.float32) + 1)
    # A contiguous slice (an offset into the buffer) is fine.
    tail = x[10:]
    increment(tail, 1, device=any_compute)
    assert np.array_equal(x.get(), np.r_[np.arange(10), np.arange(10, 100) + 1].astype(np.float32))
    # Mixing NumPy and pyopencl arrays: the NumPy one is copied in, the output stays on device.
    w = multiply_them(x, np.full(100, 2, dtype=np.float32), device=any_compute)
    assert isinstance(w, cla.Array) and np.array_equal(w.get(), 2 * x.get())


def test_non_contiguous_arrays(any_compute):
    base = np.arange(40, dtype=np.int32)
    strided = base[::2]
    assert np.array_equal(add(strided, strided, device=any_compute), 2 * strided)
    increment(strided, 100, device=any_compute)  # written back into the strided view
    assert np.array_equal(base[::2], np.arange(0, 40, 2) + 100)
    assert np.array_equal(base[1::2], np.arange(1, 40, 2))
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = add(matrix.T, matrix.T, device=any_compute)
    assert out.shape == (4, 3) and np.array_equal(out, 2 * matrix.T)
    device_matrix = cla.to_device(any_compute.queue, matrix)
    with pytest.raises(InputError, match="contiguous"):
        add(device_matrix[:, ::2], device_matrix[:, ::2], device=any_compute)


def test_multiple_outputs_and_index(any_compute):
    kernel = ElementwiseKernel("T x", "T doubled, int64 index", "doubled = 2 * x; index = i",
                               "two_outputs")
    doubled, index = kernel(np.arange(5, dtype=np.float64 if any_compute.supports_fp64
                                      else np.float32), device=any_compute)
    assert doubled.tolist() == [0, 2, 4, 6, 8]
    assert index.dtype == np.int64 and index.tolist() == [0, 1, 2, 3, 4]
    fill = ElementwiseKernel("int32 value", "int32 out", "out = value + (int)i", "fill")
    assert fill(7, size=4, device=any_compute).tolist() == [7, 8, 9, 10]


def test_kernels_are_memoised(any_compute):
    x = np.arange(10, dtype=np.float32)
    add(x, x, device=any_compute)
    builds = getattr(any_compute, "build_count", 0)
    add(x, x, device=any_compute)
    add(x + 1, x, device=any_compute)
    assert getattr(any_compute, "build_count", 0) == builds


@pytest.mark.parametrize("in_params, out_params, message", [
    ("flaot32 x", "float32 y", "unknown type name 'flaot32'"),
    ("float32", "float32 y", "TYPE NAME"),
    ("float32 x, float32 x", "float32 y", "declared twice"),
    ("float32 i", "float32 y", "reserved"),
    ("float32 x", "", "at least one output"),
    ("float32 x", "int32 x", "in-place"),
    ("T x", "T 2y", "valid parameter name"),
])
def test_bad_declarations(in_params, out_params, message):
    with pytest.raises(InputError, match=message):
        ElementwiseKernel(in_params, out_params, "y = x", "bad")


def test_bad_calls(any_compute):
    f32 = np.ones(10, dtype=np.float32)
    with pytest.raises(InputError, match="shape mismatch"):
        add(f32, np.ones(11, dtype=np.float32), device=any_compute)
    with pytest.raises(InputError, match="dtype mismatch"):
        add(f32, np.ones(10, dtype=np.int32), device=any_compute)
    typed = ElementwiseKernel("float32 x", "float32 y", "y = x", "copy_f32")
    with pytest.raises(InputError, match="dtype mismatch"):
        typed(np.ones(3, dtype=np.float64), device=any_compute)
    with pytest.raises(InputError, match="argument"):
        typed(f32, f32, f32, device=any_compute)
    with pytest.raises(InputError, match="must be an array"):
        increment(3.0, 1, device=any_compute)
    with pytest.raises(InputError, match="does not fit"):
        increment(np.ones(3, dtype=np.uint8), 300, device=any_compute)
    with pytest.raises(InputError, match="floating-point value"):
        increment(np.ones(3, dtype=np.int32), 1.5, device=any_compute)
    with pytest.raises(InputError, match="booleans"):
        increment(np.ones(3, dtype=np.int32), True, device=any_compute)
    with pytest.raises(InputError, match="not supported|dtype mismatch"):
        add(np.ones(3, dtype=np.complex64), np.ones(3, dtype=np.complex64), device=any_compute)
    with pytest.raises(InputError, match="size=N"):
        ElementwiseKernel("T a", "T b", "b = a", "scalar_only")(np.float32(1), device=any_compute)
    with pytest.raises(InputError, match="a NumPy or pyopencl array"):
        add([1, 2], [3, 4], device=any_compute)


def test_read_only_array_written_is_refused_before_the_device(any_compute, monkeypatch):
    """A read-only NumPy array to write (in place or as a given output) is a typed error
    naming it, before any device work; read-only inputs are fine."""
    frozen = np.ones(5, dtype=np.float32)
    frozen.flags.writeable = False
    monkeypatch.setattr(ElementwiseKernel, "_run", lambda *args: pytest.fail("device work"))
    for call, name in ((lambda: increment(frozen, 1, device=any_compute), "'x'"),
                       (lambda: axpy(2.0, frozen, frozen, device=any_compute), "'y'"),
                       (lambda: add(frozen, frozen, frozen, device=any_compute), "'z'")):
        with pytest.raises(InvalidArgumentError, match=f"{name} is written .* read-only"):
            call()
    monkeypatch.undo()
    assert np.array_equal(add(frozen, frozen, device=any_compute), frozen + frozen)


def test_float64_refused_without_fp64(any_compute, monkeypatch):
    monkeypatch.setattr(type(any_compute), "supports_fp64", property(lambda self: False))
    with pytest.raises(DeviceError, match="fp64"):
        add(np.ones(3), np.ones(3), device=any_compute)


def test_syntax_error_shows_build_log_and_source(any_compute):
    broken = ElementwiseKernel("float32 x", "float32 y", "y = x +* 2", "broken_op")
    with pytest.raises(KernelBuildError) as info:
        broken(np.ones(4, dtype=np.float32), device=any_compute)
    error = info.value
    assert "broken_op" not in str(error) or "elementwise" in str(error)
    assert error.build_log and error.source_path
    with open(error.source_path) as source:
        assert "y = x +* 2" in source.read()


def test_parse_params():
    params = parse_params("float32 x, T  y ,uint8 z")
    assert [(p.type_name, p.name, p.is_placeholder) for p in params] == [
        ("float32", "x", False), ("T", "y", True), ("uint8", "z", False)]


def _run_cli(capsys, *args):
    code = 0
    try:
        main(list(args))
    except SystemExit as stop:
        code = stop.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("op, dtype", [("axpy", "float32"), ("increment", "int8"),
                                       ("multiply", "uint32"), ("add", "float64")])
def test_cli_runs_and_checks(any_compute, capsys, op, dtype):
    _skip_without_fp64(any_compute, dtype)
    code, out, err = _run_cli(capsys, "elementwise", op, "--size", "5000", "--dtype", dtype,
                              "--repeat", "2", "--device", any_compute.spec)
    assert code == 0, err
    assert "passed" in out and "GB/s" in out and "ms" in out


@pytest.mark.parametrize("args, word", [
    (["axpy", "--size", "0"], "size"),
    (["axpy", "--repeat", "0"], "repeat"),
])
def test_cli_bad_input(any_compute, capsys, args, word):
    code, out, err = _run_cli(capsys, "elementwise", *args, "--device", any_compute.spec)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: error:") and word in lines[0], err


def test_cli_failed_check_exits_non_zero(any_compute, capsys, monkeypatch):
    from oclsci.elementwise import ops as elementwise_ops

    op = elementwise_ops.OPS["add"]
    monkeypatch.setitem(elementwise_ops.OPS, "add",
                        elementwise_ops.Op("add", op.kernel, op.arrays, lambda x, y: x - y,
                                           op.bytes_per_element, op.written, None))
    code, out, err = _run_cli(capsys, "elementwise", "add", "--size", "100", "--repeat", "1",
                              "--device", any_compute.spec)
    assert code != 0
    # The device line, then one error line.
    lines = [line for line in err.strip().splitlines() if not line.startswith("oclsci: device")]
    assert len(lines) == 1 and "differs from NumPy" in lines[0], err


def test_run_operation_returns_the_checked_figures(any_compute):
    """The API behind `oclsci elementwise`: a record of the run, the device line to notify."""
    from oclsci.elementwise import run_operation

    lines = []
    result = run_operation("axpy", 3001, "int32", device=any_compute.spec, repeat=2,
                           per_item=4, notify=lines.append)
    assert lines == [any_compute.banner()]
    assert (result.op, result.size, result.dtype, result.spec, result.repeat,
            result.per_item) == ("axpy", 3001, "int32", any_compute.spec, 2, 4)
    assert result.bytes == 3 * 3001 * 4
    assert result.kernel_seconds > 0 and result.gb_per_s > 0 and result.copy_gb_per_s > 0
    assert result.percent_of_copy == pytest.approx(100 * result.gb_per_s / result.copy_gb_per_s)
