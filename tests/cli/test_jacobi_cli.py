"""`oclsci jacobi` / `oclsci laplacian` end to end: results, checkpoints, signals, bad input."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_one_line_error, run_cli, start_cli
from PIL import Image
from signal_helpers import finish, wait_until_computing

from oclsci.jacobi.checkpoint import load_checkpoint
from oclsci.jacobi.figure import comparison
from oclsci.jacobi.reference import jacobi_numpy, laplacian


def oclsci(*args, check=True, **kwargs):
    """Run the CLI; with ``check`` a non-zero exit fails the test (stderr in the message)."""
    return run_cli(*args, check_exit=0 if check else None, **kwargs)


@pytest.fixture
def picture(tmp_path):
    rng = np.random.default_rng(3)
    pixels = (rng.random((23, 31)) * 255).astype(np.uint8)
    path = tmp_path / "picture.png"
    Image.fromarray(pixels).save(path)
    return pixels, path


def test_npy_input_equals_numpy_reference(tmp_path):
    rhs = np.random.default_rng(0).standard_normal((37, 21)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    for kernel in ("seed", "coalesced", "blocked"):
        out = tmp_path / f"x_{kernel}.npy"
        oclsci("jacobi", tmp_path / "b.npy", "-n", 45, "--kernel", kernel, "-o", out, "--quiet")
        np.testing.assert_array_equal(np.load(out), jacobi_numpy(rhs, 45))


def test_float64_and_summary(tmp_path):
    rhs = np.random.default_rng(1).standard_normal((9, 14))
    np.save(tmp_path / "b.npy", rhs)
    result = oclsci("jacobi", tmp_path / "b.npy", "-n", 30, "--dtype", "float64",
                    "-o", tmp_path / "x.npy")
    out = np.load(tmp_path / "x.npy")
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, jacobi_numpy(rhs, 30, dtype=np.float64))
    for word in ("device", "grid        9 x 14 float64", "iterations  30", "us,",
                 "cell updates/s", "residual"):
        assert word in result.stdout


def test_driver_runs_a_job_in_process(tmp_path, any_compute):
    """run_job: the CLI's run without the CLI; it prints nothing, the callbacks get it all."""
    import contextlib

    from oclsci.jacobi.driver import JacobiJob, run_job

    rhs = np.random.default_rng(7).standard_normal((29, 18)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    job = JacobiJob(input=str(tmp_path / "b.npy"), iterations=45, device=any_compute.spec,
                    output=str(tmp_path / "x.npy"), checkpoint=str(tmp_path / "c.npz"))
    notes, bars = [], []

    @contextlib.contextmanager
    def progress(total, start):
        bars.append((total, start))
        yield lambda done, total: None

    outcome = run_job(job, progress=progress, notify=notes.append)
    np.testing.assert_array_equal(outcome.x, jacobi_numpy(rhs, 45))
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), outcome.x)
    assert outcome.written == [job.checkpoint, job.output] and outcome.distribution is None
    assert load_checkpoint(job.checkpoint).iteration == outcome.result.iterations == 45
    assert notes == [outcome.compute.banner()] and bars == [(45, 0)]


def test_laplacian_then_jacobi_returns_the_picture(tmp_path, picture):
    pixels, path = picture
    oclsci("laplacian", path, "-o", tmp_path / "lap.npy")
    lap = np.load(tmp_path / "lap.npy")
    np.testing.assert_array_equal(lap, laplacian(pixels))
    oclsci("jacobi", tmp_path / "lap.npy", "-n", 4000, "--dtype", "float64",
           "-o", tmp_path / "x.npy", "--quiet")
    np.testing.assert_allclose(np.load(tmp_path / "x.npy"), pixels, atol=1e-6)


def test_tol_stops_early_and_reports_it(tmp_path, picture):
    pixels, path = picture
    oclsci("laplacian", path, "-o", tmp_path / "lap.npy")
    result = oclsci("jacobi", tmp_path / "lap.npy", "-n", 100000, "--tol", "1e-4",
                    "--check-every", 50, "--dtype", "float64", "-o", tmp_path / "x.npy")
    assert "converged" in result.stdout
    iterations = int(result.stdout.split("iterations")[1].split()[0])
    assert iterations < 100000 and iterations % 50 == 0
    x = np.load(tmp_path / "x.npy")
    lap = np.load(tmp_path / "lap.npy")
    residual = np.linalg.norm(laplacian(x) - lap) / np.linalg.norm(lap)
    assert residual < 1e-4
    # The previous check (50 steps earlier) had not yet converged.
    before = jacobi_numpy(lap, iterations - 50, dtype=np.float64)
    assert np.linalg.norm(laplacian(before) - lap) / np.linalg.norm(lap) >= 1e-4


def test_image_outputs_and_compare_picture(tmp_path, picture):
    """-o .png is the result's gray picture; --compare the labelled picture of the input, the
    result and its residual, exactly as oclsci.jacobi.figure draws them from the outputs."""
    _, path = picture
    oclsci("laplacian", path, "-o", tmp_path / "lap.npy")
    oclsci("jacobi", tmp_path / "lap.npy", "-n", 10, "-o", tmp_path / "x.png", "--quiet")
    with Image.open(tmp_path / "x.png") as image:
        assert image.size == (31, 23) and image.mode == "L"
    oclsci("jacobi", tmp_path / "lap.npy", "-n", 10, "-o", tmp_path / "x.npy",
           "--compare", tmp_path / "both.png", "--quiet")
    want = comparison(np.load(tmp_path / "lap.npy"), np.load(tmp_path / "x.npy"))
    with Image.open(tmp_path / "both.png") as image:
        assert image.mode == "RGB" and np.array_equal(np.asarray(image), want)


@pytest.mark.slow
def test_checkpoint_resume_is_bit_identical(tmp_path):
    rhs = np.random.default_rng(2).standard_normal((40, 27)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    oclsci("jacobi", tmp_path / "b.npy", "-n", 74, "-o", tmp_path / "straight.npy", "--quiet",
           "--kernel", "blocked")
    oclsci("jacobi", tmp_path / "b.npy", "-n", 37, "--checkpoint", tmp_path / "ck.npz",
           "--quiet", "--kernel", "blocked")
    assert load_checkpoint(tmp_path / "ck.npz").iteration == 37
    oclsci("jacobi", "--resume", tmp_path / "ck.npz", "-n", 74, "-o", tmp_path / "resumed.npy",
           "--quiet", "--kernel", "coalesced")
    np.testing.assert_array_equal(np.load(tmp_path / "resumed.npy"),
                                  np.load(tmp_path / "straight.npy"))


def test_periodic_checkpoints(tmp_path):
    rhs = np.random.default_rng(4).standard_normal((12, 12)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    oclsci("jacobi", tmp_path / "b.npy", "-n", 100, "--checkpoint", tmp_path / "ck.npz",
           "--checkpoint-every", 30, "--quiet")
    state = load_checkpoint(tmp_path / "ck.npz")
    assert state.iteration == 100
    np.testing.assert_array_equal(state.x, jacobi_numpy(rhs, 100))


# Long enough on any device that the signal arrives mid-run.
ENDLESS = 1_000_000_000


def _start_then_signal(args, signum):
    """Run without a terminal, signal once the computation has begun, return (code, stderr)."""
    process = start_cli(*args)
    wait_until_computing(process)
    process.send_signal(signum)
    return finish(process)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1])
def test_signal_leaves_a_usable_checkpoint(tmp_path, signum):
    rhs = np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    code, stderr = _start_then_signal(
        ["jacobi", tmp_path / "b.npy", "-n", ENDLESS, "--checkpoint", tmp_path / "ck.npz",
         "-o", tmp_path / "x.npy", "--quiet"], signum)
    assert code == 75, stderr
    assert "checkpoint written" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "x.npy").exists()
    state = load_checkpoint(tmp_path / "ck.npz")
    assert 0 < state.iteration < ENDLESS
    # Resume for a few more steps: equal to a straight run of the same total, bit for bit.
    total = state.iteration + 5
    oclsci("jacobi", "--resume", tmp_path / "ck.npz", "-n", total, "-o", tmp_path / "x.npy",
           "--quiet")
    oclsci("jacobi", tmp_path / "b.npy", "-n", total, "-o", tmp_path / "straight.npy", "--quiet")
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), np.load(tmp_path / "straight.npy"))


def _bad_inputs(tmp_path: Path):
    np.save(tmp_path / "good.npy", np.ones((4, 4)))
    np.save(tmp_path / "three_d.npy", np.ones((2, 2, 2)))
    np.save(tmp_path / "empty.npy", np.ones((0, 5)))
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    np.save(tmp_path / "inf.npy", np.array([[1.0, np.inf]]))
    np.save(tmp_path / "text.npy", np.array([["a", "b"]]))
    (tmp_path / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    Image.new("RGB", (4, 4)).save(tmp_path / "colour.png")
    good = tmp_path / "good.npy"
    return [
        (["jacobi", tmp_path / "missing.npy"], "no such file"),
        (["jacobi", tmp_path / "three_d.npy"], "2-D"),
        (["jacobi", tmp_path / "empty.npy"], "empty"),
        (["jacobi", tmp_path / "nan.npy"], "NaN"),
        (["jacobi", tmp_path / "inf.npy"], "NaN or infinite"),
        (["jacobi", tmp_path / "text.npy"], "numbers"),
        (["jacobi", tmp_path / "corrupt.npy"], "corrupt.npy"),
        (["jacobi", tmp_path / "corrupt.png"], "not a readable image"),
        (["jacobi", tmp_path / "colour.png"], "colour image"),
        (["jacobi", good, "-n", "-3"], "--iterations"),
        (["jacobi", good, "--kernel", "nope"], "unknown kernel"),
        (["jacobi", good, "--device", "no-such-device"], "available: 0:0"),
        (["jacobi", good, "-o", tmp_path / "missing_dir" / "x.npy"], "does not exist"),
        (["jacobi", good, "-o", tmp_path / "x.txt"], "unknown output type"),
        (["jacobi", "--resume", tmp_path / "corrupt.npy"], "checkpoint"),
        (["laplacian", tmp_path / "colour.png", "-o", tmp_path / "x.npy"], "colour"),
        (["jacobi", good, "--no-such-option"], "--no-such-option"),
    ]


@pytest.mark.slow
def test_bad_inputs_give_one_line_errors_and_no_output(tmp_path):
    for args, fragment in _bad_inputs(tmp_path):
        extra = [] if "-o" in args else ["-o", tmp_path / "out.npy"]
        result = oclsci(*args, *extra, check=False)
        assert_one_line_error(result, fragment)
        assert not (tmp_path / "out.npy").exists(), args


def test_grid_larger_than_device_memory_is_refused_before_allocating(any_compute,
                                                                      monkeypatch):
    from oclsci.errors import DeviceError
    from oclsci.jacobi.solver import JacobiSolver
    from oclsci.runtime.device import ComputeContext

    memory = any_compute.device.global_mem_size
    with pytest.raises(DeviceError, match="GiB of global memory"):
        any_compute.check_allocation(memory + 1, "a grid")
    # The solver asks before it allocates: pretend the device has 1 KiB.
    real_check = ComputeContext.check_allocation
    monkeypatch.setattr(
        ComputeContext, "check_allocation",
        lambda self, nbytes, what: real_check(self, nbytes * (memory // 1024), what))
    with pytest.raises(DeviceError, match="64x64 float32 grid needs"):
        JacobiSolver(any_compute, np.ones((64, 64)), dtype=np.float32)


def test_fp64_refused_clearly_on_a_device_without_it(any_compute, monkeypatch):
    from oclsci.errors import DeviceError
    from oclsci.runtime.device import ComputeContext

    monkeypatch.setattr(ComputeContext, "supports_fp64", property(lambda self: False))
    with pytest.raises(DeviceError, match="float64"):
        any_compute.check_dtype(np.float64)


def test_default_run_reconstructs_builtin_picture(tmp_path):
    env = dict(os.environ)
    result = oclsci("jacobi", "-n", 3000, "-o", tmp_path / "x.npy", env=env)
    assert "built-in 400x266 picture" in result.stdout
    assert "against the original picture" in result.stdout
    assert np.load(tmp_path / "x.npy").shape == (266, 400)


def test_kernel_help_comes_from_the_registry():
    """--kernel's help names auto and every kernel of the registry, with its summary."""
    from oclsci.jacobi.kernels import KERNELS, choices_help

    text = choices_help()
    assert text.startswith("Kernel: auto (")
    for name, spec in KERNELS.items():
        assert spec.summary and f"{name} ({spec.summary})" in text
