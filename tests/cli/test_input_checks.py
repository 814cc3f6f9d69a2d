"""Issue 13, inputs and options: resume state, image values, ranges, exit codes, PoCL's cache,
the tuning cache, the Python API's argument errors and device variables; issue 33: large,
multi-page and gray+alpha images, PyOpenCL's cache, folders and inputs named as outputs.

Every test here failed on the main branch before the fixes (findings 7-12, 14, 16-18).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import struct
import zlib

import numpy as np
import pytest
from conftest import DEVICE_SPECS, REPO_ROOT, assert_one_line_error, run_cli, start_cli
from PIL import Image
from signal_helpers import time_limit

from oclsci.errors import (
    EXIT_NO_PLATFORM,
    EXIT_USAGE,
    ArgumentTypeError,
    InputError,
    InvalidArgumentError,
    NonFiniteResultError,
    NoPlatformError,
)
from oclsci.io import read_array
from oclsci.jacobi.reference import jacobi_numpy

README = REPO_ROOT / "README.md"


@pytest.fixture
def rhs_file(tmp_path):
    rhs = np.random.default_rng(7).standard_normal((19, 13))
    np.save(tmp_path / "b.npy", rhs)
    return rhs, tmp_path / "b.npy"


# -- 7, 8: --resume -------------------------------------------------------------------------

@pytest.mark.slow
def test_resume_goes_on_in_the_checkpoints_dtype(rhs_file, tmp_path):
    rhs, path = rhs_file
    first = run_cli("jacobi", path, "-n", 40, "--dtype", "float64", "--checkpoint", "c.npz",
                    "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    resumed = run_cli("jacobi", "--resume", "c.npz", "-n", 90, "-o", "x.npy", "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    x = np.load(tmp_path / "x.npy")
    assert x.dtype == np.float64
    np.testing.assert_array_equal(x, jacobi_numpy(rhs, 90, dtype=np.float64))
    contradicting = run_cli("jacobi", "--resume", "c.npz", "-n", 90, "--dtype", "float32",
                            "-o", "y.npy", cwd=tmp_path)
    assert_one_line_error(contradicting, "--dtype float32", "c.npz", "float64", code=1)
    assert not (tmp_path / "y.npy").exists()


@pytest.mark.slow
def test_resume_refuses_fewer_iterations_than_done(rhs_file, tmp_path):
    _, path = rhs_file
    assert run_cli("jacobi", path, "-n", 30, "--checkpoint", "c.npz", "-q",
                   cwd=tmp_path).returncode == 0
    result = run_cli("jacobi", "--resume", "c.npz", "-n", 10, "-o", "x.npy", cwd=tmp_path)
    assert_one_line_error(result, "c.npz", "iteration 30", "--iterations 10", code=1)
    assert not (tmp_path / "x.npy").exists()


@pytest.mark.slow
def test_absurd_iteration_counts_are_refused(rhs_file, tmp_path):
    from oclsci.jacobi.checkpoint import load_checkpoint

    rhs, path = rhs_file
    np.savez(tmp_path / "c.npz", x=rhs, rhs=rhs, iteration=np.int64(2**62),
             format_version=np.int64(1))
    with pytest.raises(InputError, match="out of range"):
        load_checkpoint(tmp_path / "c.npz")
    result = run_cli("jacobi", "--resume", "c.npz", "-n", 2**53, "-o", "x.npy", cwd=tmp_path)
    assert_one_line_error(result, "c.npz", "out of range", code=1)
    result = run_cli("jacobi", path, "-n", 2**62, "-o", "x.npy", cwd=tmp_path)
    assert_one_line_error(result, "--iterations", code=1)
    assert not (tmp_path / "x.npy").exists()


# -- 9: image values as stored --------------------------------------------------------------

def _png_gray(values: np.ndarray, bits: int) -> bytes:
    """A gray PNG of ``bits`` bits per sample, written by hand (Pillow cannot write 2 or 4)."""
    rows = b""
    for row in values:
        if bits < 8:
            text = "".join(format(int(v), f"0{bits}b") for v in row)
            text += "0" * (-len(text) % 8)
            rows += b"\0" + int(text, 2).to_bytes(len(text) // 8, "big")
        else:
            rows += b"\0" + row.astype(">u2" if bits == 16 else "u1").tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    height, width = values.shape
    header = struct.pack(">IIBBBBB", width, height, bits, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


STORED = np.array([[0, 50, 100], [7, 99, 1]])
IMAGES = {
    "maxval100.pgm": (b"P5\n3 2\n100\n" + STORED.astype(np.uint8).tobytes(), STORED),
    "maxval1000.pgm": (b"P5 # a comment\n3 2\n1000\n" + (STORED * 10).astype(">u2").tobytes(),
                       STORED * 10),
    "plain.pgm": (b"P2\n# c\n3 2\n100\n0 50 100\n7 99 1\n", STORED),
    "plain.pbm": (b"P1\n3 2\n010\n1 1 0\n", np.array([[0, 1, 0], [1, 1, 0]])),
    "raw.pbm": (b"P4\n3 2\n" + bytes([0b01000000, 0b11000000]), np.array([[0, 1, 0], [1, 1, 0]])),
    "2bit.png": (_png_gray(STORED % 4, 2), STORED % 4),
    "4bit.png": (_png_gray(STORED % 16, 4), STORED % 16),
    "1bit.png": (_png_gray(STORED % 2, 1), STORED % 2),
    "16bit.png": (_png_gray(STORED * 600, 16), STORED * 600),
}


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_images_read_as_their_stored_integers(tmp_path, name):
    data, expected = IMAGES[name]
    (tmp_path / name).write_bytes(data)
    array = read_array(tmp_path / name)
    np.testing.assert_array_equal(array, expected)
    assert np.issubdtype(array.dtype, np.integer)


def test_min_is_white_tiff_reads_as_stored(tmp_path):
    stored = np.array([[0, 1, 1], [1, 0, 0]], dtype=np.uint8)
    image = Image.fromarray(stored.astype(bool))
    buffer = io.BytesIO()
    image.save(buffer, format="TIFF")
    (tmp_path / "bilevel.tif").write_bytes(buffer.getvalue())
    np.testing.assert_array_equal(read_array(tmp_path / "bilevel.tif"), stored)


def test_jacobi_cli_uses_the_stored_pgm_values(tmp_path):
    (tmp_path / "b.pgm").write_bytes(IMAGES["maxval100.pgm"][0])
    result = run_cli("jacobi", "b.pgm", "-n", 25, "--dtype", "float64", "-o", "x.npy", "-q",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"),
                                  jacobi_numpy(STORED.astype(np.float64), 25, dtype=np.float64))


def test_damaged_pgm_is_one_line_error(tmp_path):
    (tmp_path / "bad.pgm").write_bytes(b"P5\n3 2\n100\n\x01\x02")
    (tmp_path / "over.pgm").write_bytes(b"P2\n2 1\n10\n3 11\n")
    (tmp_path / "colour.ppm").write_bytes(b"P6\n1 1\n255\n\x00\x00\x00")
    for name, fragment in (("bad.pgm", "truncated"), ("over.pgm", "exceeds maxval"),
                           ("colour.ppm", "colour")):
        with pytest.raises(InputError, match=fragment):
            read_array(tmp_path / name)


# -- 10: values beyond the dtype, results that overflow ------------------------------------

def test_values_beyond_the_dtype_are_refused_before_computing(tmp_path):
    np.save(tmp_path / "big.npy", np.full((5, 4), 1e300))
    result = run_cli("jacobi", "big.npy", "-n", 10, "-o", "x.npy", cwd=tmp_path)
    assert_one_line_error(result, "big.npy", "float32", code=1)
    assert "device" not in result.stderr  # refused before choosing a device
    assert not (tmp_path / "x.npy").exists()


def test_overflowing_results_write_nothing(tmp_path):
    np.save(tmp_path / "b38.npy", np.full((5, 4), 3e38, dtype=np.float32))
    result = run_cli("jacobi", "b38.npy", "-n", 100, "-o", "x.npy", "--checkpoint", "c.npz",
                     "-q", cwd=tmp_path)
    assert_one_line_error(result, "NaN or infinite", "float32", code=1)
    assert not (tmp_path / "x.npy").exists() and not (tmp_path / "c.npz").exists()
    np.save(tmp_path / "huge.npy", np.full((5, 4), 1.5e308))
    result = run_cli("laplacian", "huge.npy", "-o", "l.npy", cwd=tmp_path)
    assert_one_line_error(result, "Laplacian", "float64", code=1)
    assert "RuntimeWarning" not in result.stderr and not (tmp_path / "l.npy").exists()


@pytest.mark.slow
def test_mandelbrot_refuses_windows_that_overflow(tmp_path):
    for dtype in ("float32", "float64"):
        result = run_cli("mandelbrot", "--xmin", "-1e300", "--xmax", "1e300", "--dtype", dtype,
                         "-o", "m.png", "--counts", "c.npy", cwd=tmp_path)
        assert_one_line_error(result, "xmin", dtype, code=1)
    assert not list(tmp_path.iterdir())


def test_api_refuses_values_beyond_the_dtype_and_overflow(any_compute):
    from oclsci.jacobi.runner import jacobi

    with pytest.raises(InvalidArgumentError, match="float32"):
        jacobi(np.full((4, 4), 1e300), 10, device=any_compute)
    with pytest.raises(NonFiniteResultError):
        jacobi(np.full((4, 4), 3e38), 100, device=any_compute)


# -- 11: exit codes, every row of README's table --------------------------------------------

def readme_exit_codes() -> list[str]:
    """The codes of README's "Exit codes" table, as written (``128+N`` included)."""
    section = README.read_text(encoding="utf-8").split("## Exit codes", 1)[1]
    return re.findall(r"^\| (\d+(?:\+N)?) \|", section.split("\n## ", 1)[0], flags=re.M)


def test_exit_code_table_is_the_one_tested():
    from oclsci.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR

    assert readme_exit_codes() == ["0", "1", "2", "69", "75", "128+N"]
    assert (EXIT_USER_ERROR, EXIT_USAGE, EXIT_NO_PLATFORM, EXIT_INTERRUPTED) == (1, 2, 69, 75)


def test_exit_0_and_1(rhs_file, tmp_path):
    assert run_cli("jacobi", "b.npy", "-n", 3, "-o", "x.npy", "-q", cwd=tmp_path).returncode == 0
    assert_one_line_error(run_cli("jacobi", "missing.npy", "-n", 3, cwd=tmp_path),
                          "missing.npy", code=1)


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["jacobi", "--no-such-option"],
    ["jacobi", "-n", "1.5"],
    ["no-such-command"],
    ["elementwise", "no-such-op"],
    ["jacobi", "b.npy", "-o", "folder"],
    ["jacobi", "--resume", "folder"],
    ["mandelbrot", "--width", "wide"],
])
def test_exit_2_for_usage_errors(rhs_file, tmp_path, args):
    (tmp_path / "folder").mkdir()
    result = run_cli(*args, cwd=tmp_path)
    assert_one_line_error(result, code=EXIT_USAGE)


def test_exit_69_without_a_usable_device(tmp_path):
    """PoCL alone, with a cache folder it cannot create: 69 and the folder named."""
    (tmp_path / "a-file").write_text("")
    env = dict(os.environ, POCL_CACHE_DIR=str(tmp_path / "a-file" / "cache"))
    for name in ("PYOPENCL_CTX", "PYOPENCL_TEST"):
        env.pop(name, None)
    devices = run_cli("devices", cwd=tmp_path, env=env)
    if devices.returncode == 0:  # other platforms (Oclgrind in CI) still have devices
        assert "no usable device" in devices.stdout and "a-file" in devices.stdout
        result = run_cli("jacobi", "-n", 1, "--device", "portable", "-o", "x.npy", cwd=tmp_path,
                         env=env)
        assert_one_line_error(result, "no usable device", "a-file", "POCL_CACHE_DIR", code=1)
    else:
        assert_one_line_error(devices, "a-file", "POCL_CACHE_DIR", code=EXIT_NO_PLATFORM)
        result = run_cli("jacobi", "-n", 1, "-o", "x.npy", cwd=tmp_path, env=env)
        assert_one_line_error(result, "a-file", "not usable", code=EXIT_NO_PLATFORM)
    assert not (tmp_path / "x.npy").exists()


LONG = str(10**9)  # steps: far more than a run does before its signal


@pytest.mark.slow
def test_exit_75_and_128_plus_n(rhs_file, tmp_path):
    """75: a signal after a checkpoint; 128+N: a signal (SIGHUP) with no checkpoint."""
    np.save(tmp_path / "b.npy", np.random.default_rng(1).standard_normal((16, 16)))
    process = start_cli("jacobi", "b.npy", "-n", LONG, "--kernel", "seed", "--checkpoint",
                        "c.npz", "--checkpoint-every", "2000", "-q", "-o", "x.npy", cwd=tmp_path)
    try:
        _wait_for(lambda: (tmp_path / "c.npz").exists(), process)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 75, stderr
    assert not (tmp_path / "x.npy").exists()
    process = start_cli("jacobi", "b.npy", "-n", LONG, "--kernel", "seed", "-o", "x.npy",
                        cwd=tmp_path)
    try:
        assert "device" in process.stderr.readline()  # the banner: handlers are in place
        process.send_signal(signal.SIGHUP)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGHUP, stderr
    assert "SIGHUP" in stderr and not (tmp_path / "x.npy").exists()


def _wait_for(condition, process, seconds: float = 240.0) -> None:
    """Poll ``condition`` every 0.05 s while ``process`` runs (a generous, fixed limit)."""
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, "the run ended before it was signalled"
        assert time.monotonic() < deadline, "the run wrote no checkpoint"
        time.sleep(0.05)


# -- 12: PoCL's cache -----------------------------------------------------------------------

def test_pocl_cache_problems_are_named(tmp_path, monkeypatch):
    import shutil

    from oclsci.runtime import health as device_health

    env = {"POCL_CACHE_DIR": str(tmp_path / "cache")}
    assert device_health.pocl_cache_problem(env) is None
    (tmp_path / "file").write_text("")
    problem = device_health.pocl_cache_problem({"POCL_CACHE_DIR": str(tmp_path / "file" / "x")})
    assert "not usable" in problem and str(tmp_path / "file" / "x") in problem

    class Usage:
        free = 1024

    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage)
    problem = device_health.pocl_cache_problem(env)
    assert "full" in problem and str(tmp_path / "cache") in problem


def test_full_pocl_cache_is_refused_before_building(monkeypatch, tmp_path):
    import shutil

    from oclsci.errors import DeviceError
    from oclsci.runtime import health as device_health
    from oclsci.runtime.selection import get_platforms

    pocl = [p for p in get_platforms() if device_health.is_pocl(p)]
    if not pocl:
        pytest.skip("PoCL is not installed")
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(1, 1, 0))
    with pytest.raises(DeviceError, match="full file system"):
        device_health.check_before_build(pocl[0])


# -- 14: outputs checked before computing ---------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", [
    (["mandelbrot", "-o", "m.jpg"], "m.jpg"),
    (["mandelbrot", "--no-image", "--counts", "c.txt"], "c.txt"),
    (["mandelbrot", "-o", "missing/m.png"], "does not exist"),
    (["jacobi", "b.npy", "-o", "x.png", "--compare", "x.png"], "--compare"),
    (["jacobi", "b.npy", "-o", "x.png", "--compare", "./x.png"], "--compare"),
])
def test_outputs_are_checked_before_computing(rhs_file, tmp_path, args, fragment):
    (tmp_path / "folder.png").mkdir()
    result = run_cli(*args, "--width", 10, "--height", 10, cwd=tmp_path) \
        if args[0] == "mandelbrot" else run_cli(*args, "-n", 5, cwd=tmp_path)
    assert_one_line_error(result, fragment, code=1)
    assert "device" not in result.stderr  # nothing computed, no device even chosen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.npy", "folder.png"]


# -- 16: the tuning cache -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("params", [
    {"band_h": 8, "band_w": 0, "max_steps": 2**40, "workers": 2},
    {"band_h": 8, "band_w": 0, "max_steps": 100000, "workers": 2},
    {"band_h": 2**20, "band_w": 2**20, "max_steps": 1024, "workers": 65536},
])
def test_out_of_range_tuning_entries_are_ignored_with_one_warning(tmp_path, any_compute,
                                                                  params):
    from oclsci.kernelspec.registry import cache_key

    rhs = np.random.default_rng(2).standard_normal((24, 20)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    entry = {"kernel": "bands", "params": params}
    cache = tmp_path / "tuning.json"
    key = cache_key(any_compute, np.float32, rhs.shape)
    cache.write_text(json.dumps({"format": 1, "entries": {key: {"best": entry}}}))
    env = dict(os.environ, OCLSCI_TUNE_CACHE=str(cache))
    result = run_cli("jacobi", "b.npy", "-n", 20, "-o", "x.npy", "-q", "--device",
                     any_compute.spec, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: warning:") and str(cache) in lines[0]
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), jacobi_numpy(rhs, 20))


def test_tune_cache_off_writes_nothing(tmp_path, monkeypatch):
    from oclsci.kernelspec.registry import cache_disabled, load_cache, save_entry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", "off")
    assert cache_disabled() and load_cache() == {}
    assert save_entry("key", {"best": {"kernel": "seed"}}) is None
    assert list(tmp_path.iterdir()) == []


# -- 17: the Python API's argument errors ---------------------------------------------------

@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"iterations": 1.5}, ArgumentTypeError, "iterations"),
    ({"iterations": True}, ArgumentTypeError, "iterations"),
    ({"iterations": -1}, InvalidArgumentError, "iterations"),
    ({"dtype": np.int32}, InvalidArgumentError, "dtype"),
    ({"dtype": np.uint8}, InvalidArgumentError, "dtype"),
    ({"dtype": np.float16}, InvalidArgumentError, "dtype"),
    ({"dtype": "no-such-type"}, ArgumentTypeError, "dtype"),
    ({"device": 42}, ArgumentTypeError, "device"),
    ({"x0": np.ones((3, 3))}, InvalidArgumentError, "x0 has shape"),
    ({"tol": 0.0}, InvalidArgumentError, "tol"),
    ({"tol": -1e-3}, InvalidArgumentError, "tol"),
    ({"tol": float("nan")}, InvalidArgumentError, "tol"),
    ({"tol": 1e-3, "check_every": 0}, InvalidArgumentError, "check_every"),
])
def test_api_arguments_get_typed_one_line_errors(any_compute, kwargs, error, fragment):
    from oclsci.jacobi.runner import jacobi

    rhs = np.random.default_rng(5).standard_normal((8, 6))
    arguments = {"iterations": 10, "device": any_compute, **kwargs}
    with time_limit(120, "jacobi()"), pytest.raises(error, match=fragment) as raised:
        jacobi(rhs, **arguments)
    assert isinstance(raised.value, ValueError if error is InvalidArgumentError else TypeError)
    assert "\n" not in str(raised.value)


# -- 18: device variables named in errors ---------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("variable", ["PYOPENCL_CTX", "PYOPENCL_TEST"])
def test_bad_device_variable_is_named(tmp_path, variable):
    env = {k: v for k, v in os.environ.items() if k not in ("PYOPENCL_CTX", "PYOPENCL_TEST")}
    env[variable] = "no-such-platform"
    result = run_cli("jacobi", "-n", 1, "-o", "x.npy", cwd=tmp_path, env=env)
    assert_one_line_error(result, f"{variable} 'no-such-platform'", code=1)


@pytest.mark.parametrize(("error", "plain", "typed"), [
    (ValueError("bad value\nsecond line"), "bad value", "ValueError: bad value"),
    (ValueError(""), "ValueError", "ValueError"),
    (OSError("\n\n  disk full \n"), "disk full", "OSError: disk full"),
    (KeyError(), "KeyError", "KeyError"),
])
def test_first_line_is_one_non_empty_line(error, plain, typed):
    from oclsci.errors import first_line

    assert first_line(error) == plain
    assert first_line(error, with_type=True) == typed


# -- Issue 33 (found on PoCL): images, caches and rough edges --------------------------------

def _one_line(err: str, *fragments: str) -> str:
    """The single ``oclsci: error:`` line of ``err``, holding every fragment."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def test_images_beyond_pillows_pixel_limit_are_read(tmp_path, monkeypatch):
    """Pillow's decompression-bomb limit (here lowered to 10 pixels) is not oclsci's."""
    stored = (np.arange(600) % 251).astype(np.uint8).reshape(20, 30)
    for name in ("wide.png", "wide.tif"):
        Image.fromarray(stored).save(tmp_path / name)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10)
    for name in ("wide.png", "wide.tif"):
        np.testing.assert_array_equal(read_array(tmp_path / name), stored)
    assert Image.MAX_IMAGE_PIXELS == 10  # restored after each read


def test_images_too_large_for_memory_are_refused(tmp_path, monkeypatch):
    Image.fromarray(np.zeros((20, 30), np.uint8)).save(tmp_path / "b.png")
    monkeypatch.setattr("oclsci.runtime.memory.available_host_bytes",
                        lambda: (5000, "MemAvailable"))
    with pytest.raises(InputError, match=r"b\.png: a 30x20 image .* needs 5.86 KiB .* but "
                                         r"4.88 KiB is available") as raised:
        read_array(tmp_path / "b.png")
    assert "\n" not in str(raised.value)


def test_multi_page_tiff_and_gray_with_alpha_are_refused(tmp_path):
    pages = [Image.fromarray(np.full((4, 5), value, np.uint8)) for value in (1, 2, 3)]
    pages[0].save(tmp_path / "pages.tif", save_all=True, append_images=pages[1:])
    Image.fromarray(np.zeros((4, 5), np.uint8)).convert("LA").save(tmp_path / "alpha.png")
    with pytest.raises(InputError, match="pages.tif: holds 3 images"):
        read_array(tmp_path / "pages.tif")
    with pytest.raises(InputError, match="alpha.png: grayscale image with an alpha channel"):
        read_array(tmp_path / "alpha.png")


def test_oclsci_alone_prints_its_help(invoke_cli):
    code, out, err = invoke_cli()
    assert (code, err) == (0, "")
    assert out.startswith("Usage: oclsci") and "jacobi" in out


def test_checkpoint_every_without_checkpoint_is_refused(invoke_cli, tmp_path):
    code, _, err = invoke_cli("jacobi", "-n", 2, "--checkpoint-every", 5, "-o",
                              tmp_path / "x.npy")
    assert code == 1
    _one_line(err, "--checkpoint-every 5", "--checkpoint FILE.npz")
    assert not (tmp_path / "x.npy").exists()


def test_a_folder_for_a_file_is_a_usage_error_in_every_command(invoke_cli, tmp_path,
                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder.npy").mkdir()
    (tmp_path / "folder.png").mkdir()
    (tmp_path / "in.csv").write_text("0,1\n1,0\n2,1\n")
    np.save(tmp_path / "b.npy", np.ones((4, 5)))
    for args in (["lombscargle", "folder.npy", "--freqs", "1:2:3"],
                 ["lombscargle", "in.csv", "--freqs", "1:2:3", "-o", "folder.npy"],
                 ["lombscargle", "in.csv", "--freqs-file", "folder.npy"],
                 ["mandelbrot", "-o", "folder.png"],
                 ["mandelbrot", "--no-image", "--counts", "folder.npy"],
                 ["jacobi", "folder.npy"],
                 ["jacobi", "b.npy", "-o", "folder.npy"],
                 ["laplacian", "folder.npy", "-o", "x.npy"],
                 ["poisson", "folder.npy"]):
        code, _, err = invoke_cli(*args)
        assert code == EXIT_USAGE, (args, err)
        _one_line(err, "folder")


def test_an_output_naming_the_input_is_refused(invoke_cli, tmp_path, monkeypatch):
    from oclsci.io import check_inputs_kept
    from oclsci.jacobi.job import JacobiJob, check_job
    from oclsci.lombscargle.files import check_output

    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "b.npy", np.ones((4, 5)))
    before = (tmp_path / "b.npy").read_bytes()
    for args in (["jacobi", "b.npy", "-n", 2, "-o", "b.npy"],
                 ["jacobi", "b.npy", "-n", 2, "-o", tmp_path / "." / "b.npy"],
                 ["laplacian", "b.npy", "-o", "b.npy"]):
        code, _, err = invoke_cli(*args)
        assert code == 1, (args, err)
        _one_line(err, "--output names the input file")
    assert (tmp_path / "b.npy").read_bytes() == before
    (tmp_path / "s.csv").write_text("0,1\n1,0\n")
    (tmp_path / "link.csv").hardlink_to(tmp_path / "s.csv")
    with pytest.raises(InputError, match="link.csv: --output names the input file"):
        check_output("link.csv", {"INPUT": "s.csv"})
    (tmp_path / "c.npz").write_bytes(b"")
    with pytest.raises(InputError, match="--resume"):
        check_inputs_kept({"--resume": "c.npz"}, output="c.npz")
    check_job(JacobiJob(resume="c.npz", checkpoint="c.npz"))  # goes on writing it: allowed


def test_laplacian_errors_speak_of_the_image(invoke_cli, tmp_path):
    np.save(tmp_path / "line.npy", np.ones(5))
    code, _, err = invoke_cli("laplacian", tmp_path / "line.npy", "-o", tmp_path / "x.npy")
    assert code == 1
    assert "right-hand side" not in _one_line(err, "image", "line.npy", "2-D")


def test_a_full_disk_is_said_so(tmp_path):
    import errno

    from oclsci.errors import OutputError
    from oclsci.io import atomic_path

    for error, said in ((OSError("106400 requested and 16352 written"),
                         "disk full: only 16352 of 106400 bytes could be written"),
                        (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "disk full: ")):
        with pytest.raises(OutputError, match=f"out.npy: cannot write \\({said}"):
            with atomic_path(tmp_path / "out.npy"):
                raise error
    assert list(tmp_path.iterdir()) == []


def test_pocl_cache_dir_naming_a_file_is_exit_69(tmp_path, monkeypatch):
    from oclsci.runtime import health

    (tmp_path / "file").write_text("")
    problem = health.pocl_cache_problem({"POCL_CACHE_DIR": str(tmp_path / "file")})
    assert "a file, not a folder" in problem and str(tmp_path / "file") in problem
    pocl = [p for p in health_platforms() if health.is_pocl(p)]
    if not pocl:
        pytest.skip("PoCL is not installed")
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "file"))
    with pytest.raises(NoPlatformError, match="POCL_CACHE_DIR") as raised:
        health.check_before_build(pocl[0])
    assert raised.value.exit_code == EXIT_NO_PLATFORM


def health_platforms() -> list:
    """The OpenCL platforms, none when there is none."""
    from oclsci.runtime.selection import get_platforms

    try:
        return get_platforms()
    except NoPlatformError:
        return []


def test_unwritable_pyopencl_cache_runs_without_it_with_one_warning(tmp_path):
    """XDG_CACHE_HOME naming a file: PyOpenCL's caches are off, one warning, no traceback."""
    from oclsci.runtime.health import pocl_cache_dir

    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device: pip install 'oclsci[pocl]'")
    (tmp_path / "a-file").write_text("")
    env = {"XDG_CACHE_HOME": str(tmp_path / "a-file"), "PYOPENCL_NO_CACHE": "0",
           "POCL_CACHE_DIR": str(pocl_cache_dir())}  # PoCL's usual cache: nothing to build
    result = run_cli("jacobi", "-n", 3, "-o", "x.npy", "-q", "--device", DEVICE_SPECS[0],
                     cwd=tmp_path, extra_env=env)
    assert result.returncode == 0, result.stderr
    # Warning lines only (oclsci's ICD folder, under XDG_CACHE_HOME too, may add one where
    # Intel's runtime is pip-installed); one says PyOpenCL runs without its caches.
    lines = result.stderr.strip().splitlines()
    assert all(line.startswith("oclsci: warning:") for line in lines), result.stderr
    about = [line for line in lines if "PyOpenCL's cache" in line]
    assert len(about) == 1 and "a-file" in about[0], result.stderr
    assert (tmp_path / "x.npy").exists()
