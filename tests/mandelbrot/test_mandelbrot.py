"""Mandelbrot: agreement with the seed's NumPy code, bands of rows, the PNG, bad input."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from oclsci.errors import InputError
from oclsci.mandelbrot.reference import mandelbrot_numpy, mandelbrot_set_np, smooth_count
from oclsci.mandelbrot.renderer import MandelbrotRenderer, mandelbrot, parse_horizon, row_band

SMALL = {"width": 150, "height": 125, "maxiter": 400}
ZOOM = {"width": 96, "height": 80, "maxiter": 300, "xmin": -0.7485, "xmax": -0.7445,
        "ymin": 0.0985, "ymax": 0.1015}


def _needs_fp64(compute, dtype):
    if np.dtype(dtype) == np.float64 and not compute.supports_fp64:
        pytest.skip(f"{compute.name} has no fp64")


def test_seed_code_small_image_float32(compute):
    """Counts and final z as the seed's mandelbrot_set_np (150 x 125, float32)."""
    z_ref, n_ref = mandelbrot_set_np(-2.25, 0.75, -1.25, 1.25, 150, 125, 400, 2.0**40)
    result = mandelbrot(**SMALL, device=compute, return_z=True)
    assert result.counts.shape == (125, 150) and result.counts.dtype == np.int32
    assert np.mean(result.counts == n_ref) >= 0.995
    assert result.z.dtype == np.complex64
    escaped = np.abs(z_ref) >= 2.0**40
    assert np.mean(escaped == (np.abs(result.z) >= 2.0**40)) >= 0.995
    smooth_ref = smooth_count(n_ref, z_ref, 2.0**40)
    same = result.counts == n_ref
    assert np.allclose(result.smooth[same], smooth_ref[same], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("dtype, agreement", [("float32", 0.995), ("float64", 0.999)])
def test_zoomed_window(compute, dtype, agreement):
    _needs_fp64(compute, dtype)
    n_ref, z_ref = mandelbrot_numpy(**ZOOM, dtype=dtype)
    result = mandelbrot(**ZOOM, dtype=dtype, device=compute, return_z=True)
    assert np.mean(result.counts == n_ref) >= agreement
    assert result.z.dtype == z_ref.dtype
    assert result.smooth.dtype == np.dtype(dtype)
    # The window is not trivial: some pixels escape late, some never.
    assert n_ref.max() > 100 and np.any(n_ref == 0)


def test_one_pixel_per_work_item_matches_vectors(any_compute):
    """The GPU kernel shape (vector_width=1) gives the same counts as the CPU one."""
    scalar = mandelbrot(**ZOOM, device=any_compute, vector_width=1, return_z=True)
    vector = mandelbrot(**ZOOM, device=any_compute, vector_width=4, return_z=True)
    assert np.array_equal(scalar.counts, vector.counts)
    assert np.array_equal(scalar.z, vector.z)
    # The smooth count goes through log(); vector and scalar log may differ in the last bit
    # (seen on NVIDIA's driver).
    np.testing.assert_allclose(scalar.smooth, vector.smooth, rtol=1e-6, atol=0)


def test_bands_of_rows_make_the_image(any_compute):
    full = mandelbrot(**SMALL, device=any_compute)
    bands = [mandelbrot(**SMALL, device=any_compute, rows=row_band(125, 3, k)) for k in range(3)]
    assert [b.first_row for b in bands] == [0, 42, 84]
    assert [b.row_count for b in bands] == [42, 42, 41]
    assert np.array_equal(np.vstack([b.counts for b in bands]), full.counts)
    assert np.array_equal(np.vstack([b.smooth for b in bands]), full.smooth)


@pytest.mark.parametrize("vector_width", [1, 4])
def test_rows_too_costly_for_one_launch_go_in_pieces_along_them(any_compute, monkeypatch,
                                                                vector_width):
    """A row unit whose width x maxiter is over the launch budget (--maxiter 20000000: one
    launch of minutes, a signal waiting for it) goes in pieces of whole work-groups along
    its rows, each within the budget; the image is the same, bit for bit."""
    from oclsci.mandelbrot import renderer

    whole = mandelbrot(**ZOOM, device=any_compute, vector_width=vector_width, return_z=True)
    monkeypatch.setattr(renderer, "ITERATIONS_PER_LAUNCH", {"cpu": 4000, "gpu": 4000})
    plan = MandelbrotRenderer(any_compute, **ZOOM, vector_width=vector_width)
    launches = []
    enqueue = plan.enqueue
    monkeypatch.setattr(plan, "enqueue", lambda *a, **k: launches.append(k) or enqueue(*a, **k))
    pieces = plan.run(want_z=True)
    assert np.array_equal(pieces.counts, whole.counts)
    assert np.array_equal(pieces.z, whole.z)
    assert np.array_equal(pieces.smooth, whole.smooth)
    pixels = plan.vector_width * plan.unroll
    for launch in launches:
        items, rows = launch["items"][1], launch["rows"][1]
        group = plan.local_size or (1, 1)
        assert items * pixels * rows * ZOOM["maxiter"] <= 4000 or items == group[0]
    assert len(launches) > plan.row_count // plan.row_unit  # pieces, not rows


def test_row_band_covers_every_row():
    for height, parts in [(10, 3), (7, 7), (1250, 4), (5, 1)]:
        bands = [row_band(height, parts, k) for k in range(parts)]
        assert sum(count for _, count in bands) == height
        assert all(bands[k][0] + bands[k][1] == bands[k + 1][0] for k in range(parts - 1))
    with pytest.raises(InputError):
        row_band(10, 3, 3)


def test_renderer_times_repeated_runs(any_compute):
    plan = MandelbrotRenderer(any_compute, width=64, height=48, maxiter=50)
    seconds = plan.time_kernel(repeat=2)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)
    result = plan.run(want_smooth=False)
    assert result.smooth is None and result.z is None
    assert result.timings.total_seconds >= result.timings.kernel_seconds > 0


@pytest.mark.parametrize("text, value", [("2**40", 2.0**40), ("1e12", 1e12),
                                         (" 2.0 ** 10 ", 1024.0), (4, 4.0)])
def test_parse_horizon(text, value):
    assert parse_horizon(text) == value


@pytest.mark.parametrize("text", ["abc", "2**", "**3", "2**3**2", "__import__('os')", "1e999**2"])
def test_parse_horizon_refuses(text):
    with pytest.raises(InputError):
        parse_horizon(text)


def test_cli_writes_png_and_counts(any_compute, tmp_path, invoke_cli):
    from PIL import Image

    png, npy = tmp_path / "m.png", tmp_path / "counts.npy"
    code, out, err = invoke_cli("mandelbrot", "-o", str(png), "--counts", str(npy),
                                "--width", "120", "--height", "90", "--maxiter", "100",
                                "--renderer", "numpy", "--device", any_compute.spec)
    assert code == 0, err
    with Image.open(png) as image:
        assert image.size == (120, 90) and image.mode == "RGB"
    counts = np.load(npy)
    assert counts.shape == (90, 120)
    ref, _ = mandelbrot_numpy(width=120, height=90, maxiter=100)
    assert np.mean(counts == ref) >= 0.995
    assert "kernel" in out and "with copy back" in out and "120x90" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counts.npy", "m.png"]
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(png).st_mode & 0o777 == 0o666 & ~umask


BAD_INPUTS = [
    (["--maxiter", "0"], "maxiter"),
    (["--width", "0"], "width"),
    (["--height", "-3"], "height"),
    (["--xmin", "1", "--xmax", "0.5"], "xmin"),
    (["--ymin", "0.2", "--ymax", "0.2"], "ymin"),
    (["--xmin", "nan"], "finite"),
    (["--ymax", "inf"], "finite"),
    (["--horizon", "two"], "horizon"),
    (["--horizon", "0.5"], "horizon"),
    (["--horizon", "2**200"], "horizon"),
    (["-o", "/nonexistent-folder/m.png"], "does not exist"),
]


@pytest.mark.parametrize("args, word", BAD_INPUTS)
def test_cli_bad_input_one_line_error(any_compute, tmp_path, invoke_cli, monkeypatch, args,
                                      word):
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke_cli("mandelbrot", "--width", "8", "--height", "8",
                                "--device", any_compute.spec, *args)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: error:"), err
    assert word in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_api_bad_input(any_compute):
    with pytest.raises(InputError, match="rows"):
        mandelbrot(width=8, height=8, rows=(6, 4), device=any_compute)
    with pytest.raises(InputError, match="dtype"):
        mandelbrot(width=8, height=8, dtype="int32", device=any_compute)
    with pytest.raises(InputError, match="integer"):
        mandelbrot(width=8.5, height=8, device=any_compute)


def test_failed_png_write_leaves_nothing(tmp_path, monkeypatch):
    from PIL import Image

    from oclsci.errors import OutputError
    from oclsci.io import write_image

    def broken(image, temp, **options):
        Path(temp).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(Image.Image, "save", broken)
    with pytest.raises(OutputError, match="out.png: cannot write"):
        write_image(tmp_path / "out.png", np.zeros((4, 5, 3), dtype=np.uint8))
    assert list(tmp_path.iterdir()) == []


def test_numpy_colouring():
    from oclsci.mandelbrot import palette
    from oclsci.mandelbrot import shading as render

    assert np.allclose(palette.hot_colormap(np.array([0.0, 1.0])), [[0.0416, 0, 0], [1, 1, 1]])
    smooth = mandelbrot_numpy(width=40, height=30, maxiter=50)
    values = smooth_count(*smooth, 2.0**40)
    rgb = render.shade(values, renderer="numpy")
    assert rgb.shape == (30, 40, 3) and rgb.dtype == np.uint8
    upper = render.shade(values, renderer="numpy", origin="upper")
    assert not np.array_equal(rgb, upper) or np.array_equal(values, values[::-1])
    rng = np.random.default_rng(0)
    colours = rng.random((100, 3))
    assert np.allclose(palette.hsv_to_rgb(palette.rgb_to_hsv(colours)), colours)


def _colour_grids():
    """Smooth counts to colour: the seed's set, a zoom, noise, a constant, thin strips."""
    rng = np.random.default_rng(3)
    seed_like = smooth_count(*mandelbrot_numpy(width=61, height=47, maxiter=80), 2.0**40)
    # The kernel writes the largest finite value where |z| = 1 exactly (an infinite count):
    # the elevation overflows there, as in NumPy. And NaN, which the API may be given.
    huge, with_nan = seed_like.copy(), seed_like.copy()
    huge[20, 30] = np.finfo(np.float64).max
    with_nan[3, 4] = np.nan
    float32_huge = seed_like.astype(np.float32)
    float32_huge[10, 10] = np.finfo(np.float32).max
    return {"seed": seed_like, "noise": rng.random((9, 13)) * 50, "constant": np.full((5, 4), 7.0),
            "row": rng.random((1, 17)), "column": rng.random((11, 1)), "pixel": np.ones((1, 1)),
            "two": rng.random((2, 2)), "float32": seed_like.astype(np.float32), "huge": huge,
            "nan": with_nan, "float32 huge": float32_huge}


def _numpy_colours(smooth, origin="lower"):
    from oclsci.mandelbrot.shading import shade

    with np.errstate(all="ignore"):  # the overflowing cases warn in NumPy
        return shade(smooth, renderer="numpy", origin=origin).astype(int)


@pytest.mark.parametrize("origin", ["lower", "upper"])
def test_device_colouring_equals_numpy(compute, origin):
    """The device's colouring is NumPy's, byte for byte in float64 (allowing a rare last-bit
    difference of the device's pow at a colour-table boundary: one level, few pixels)."""
    from oclsci.mandelbrot.shading import shade

    for name, smooth in _colour_grids().items():
        want = _numpy_colours(smooth, origin)
        got = shade(smooth, renderer="device", origin=origin, compute=compute)
        assert got.shape == want.shape and got.dtype == np.uint8, name
        difference = np.abs(got.astype(int) - want)
        if compute.supports_fp64:
            assert difference.max() <= 1 and np.mean(difference > 0) <= 1e-3, name
        else:
            assert difference.max() <= 3, name


def test_device_colouring_in_float32(any_compute, monkeypatch):
    """Where the device has no fp64 the colouring runs in float32: within a few levels."""
    from oclsci.mandelbrot.shading import shade

    monkeypatch.setattr(type(any_compute), "supports_fp64", property(lambda self: False))
    for name, smooth in _colour_grids().items():
        want = _numpy_colours(smooth)
        with np.errstate(all="ignore"):  # the overflowing cases go to NumPy
            got = shade(smooth, renderer="device", compute=any_compute).astype(int)
        assert np.abs(got - want).max() <= 3 and np.mean(got != want) <= 0.05, name


def test_device_renderer_needs_a_context_and_auto_uses_it(any_compute):
    from oclsci.mandelbrot.shading import shade

    smooth = _colour_grids()["noise"]
    with pytest.raises(InputError, match="compute context"):
        shade(smooth, renderer="device")
    with pytest.raises(InputError, match="renderer must be one of"):
        shade(smooth, renderer="gpu")
    assert np.array_equal(shade(smooth, compute=any_compute),
                          shade(smooth, renderer="device", compute=any_compute))


def test_auto_colours_on_the_host_when_the_device_cannot(any_compute, monkeypatch):
    from oclsci.errors import DeviceError
    from oclsci.mandelbrot import device_shading
    from oclsci.mandelbrot.shading import shade

    def refused(*args):
        raise DeviceError("colouring on device 0:0: out of resources")

    monkeypatch.setattr(device_shading, "shade_on_device", refused)
    smooth = _colour_grids()["noise"]
    with pytest.warns(RuntimeWarning, match="out of resources"):
        picture = shade(smooth, renderer="auto", compute=any_compute)
    assert np.array_equal(picture, shade(smooth))  # as the host colours it
    with pytest.raises(DeviceError):
        shade(smooth, renderer="device", compute=any_compute)


def test_matplotlib_and_numpy_colouring_agree():
    pytest.importorskip("matplotlib")
    from oclsci.mandelbrot import shading as render

    values = smooth_count(*mandelbrot_numpy(width=60, height=50, maxiter=60), 2.0**40)
    a = render.shade(values, renderer="numpy").astype(int)
    b = render.shade(values, renderer="matplotlib").astype(int)
    assert np.abs(a - b).max() <= 1
