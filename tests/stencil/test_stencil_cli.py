"""``oclsci stencil``: the written field equals the NumPy reference bit for bit; bad
expressions, options and inputs end in one line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DEVICE_SPECS, assert_one_line_error, run_cli

from oclsci.stencil import Stencil

JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"
pytestmark = pytest.mark.skipif(not DEVICE_SPECS, reason="no OpenCL device")


@pytest.fixture
def grid(tmp_path):
    rng = np.random.default_rng(5)
    u0 = rng.standard_normal((11, 17))
    b = rng.standard_normal((11, 17))
    np.save(tmp_path / "u0.npy", u0)
    np.save(tmp_path / "b.npy", b)
    return tmp_path, u0, b


def test_writes_the_reference_result(grid, invoke_cli):
    folder, u0, b = grid
    out = folder / "out.npy"
    code, stdout, _ = invoke_cli("stencil", JACOBI, folder / "u0.npy", "-n", 9, "-o", out,
                                 "--field", f"b={folder / 'b.npy'}", "--dtype", "float64",
                                 "--device", DEVICE_SPECS[0], "-q")
    assert code == 0 and stdout == ""
    want = Stencil(JACOBI).reference(u0, 9, fields={"b": b}, dtype=np.float64)
    assert np.array_equal(np.load(out), want)


def test_params_prev_and_boundary(grid, invoke_cli):
    folder, u0, _ = grid
    out = folder / "out.npy"
    wave = "2 * u - u.prev + c2 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
    code, stdout, _ = invoke_cli("stencil", wave, folder / "u0.npy", "-n", 5, "-o", out,
                                 "--param", "c2=0.2", "--prev", folder / "b.npy",
                                 "--boundary", "0.5", "--device", DEVICE_SPECS[0])
    assert code == 0, stdout
    assert "2-D, 5-point star, radius 1, previous time level" in stdout
    assert "\n  per step " in stdout and " us (the steps' wall time " in stdout
    prev = np.load(folder / "b.npy")
    want = Stencil(wave, params={"c2": 0.2}, boundary=0.5).reference(
        u0, 5, prev=prev)  # INPUT's dtype, as the command keeps it
    assert np.array_equal(np.load(out), want)


@pytest.mark.parametrize("kernel", [("tiled", "max_steps=3"), ("stream", "seg=4")],
                         ids=["tiled", "stream"])
def test_kernel_choice(grid, invoke_cli, kernel):
    folder, u0, b = grid
    out = folder / "out.npy"
    name, param = kernel
    code, stdout, _ = invoke_cli("stencil", JACOBI, folder / "u0.npy", "-n", 7, "-o", out,
                                 "--field", f"b={folder / 'b.npy'}", "--kernel", name,
                                 "--kernel-param", param, "--device", DEVICE_SPECS[0])
    assert code == 0, stdout
    assert f"kernel {name}(" in stdout and param in stdout
    want = Stencil(JACOBI).reference(u0, 7, fields={"b": b})  # INPUT's dtype
    assert np.array_equal(np.load(out), want)


@pytest.mark.parametrize(("args", "fragment"), [
    (["u ** 2"], "operator Pow is not supported"),
    (["u + k * u[1, 0]"], "unknown name 'k'"),
    (["u + k * u[1, 0]", "--param", "k=x"], "--param k takes a number, got 'x'"),
    (["u + k * u[1, 0]", "--param", "k"], "--param takes NAME=VALUE"),
    (["u + b", "--field", "b=missing.npy"], "missing.npy: no such file"),
    (["u[0, 0, 1]"], "u0 must be a 3-D array, got 2 dimensions"),
    (["u", "--kernel", "fast"], "unknown stencil kernel 'fast'"),
    (["u", "--kernel-param", "max_steps=two"], "--kernel-param max_steps takes an integer"),
    (["u[0, 0, 1]", "--kernel", "column", "--kernel-param", "prefetch=2"],
     "--kernel-param prefetch takes true or false, not '2'"),
    (["u", "--kernel", "stream", "--kernel-param", "rows=2"], "has no parameter 'rows'"),
])
def test_errors_are_one_line(grid, args, fragment):
    folder, _, _ = grid
    expression, *options = args
    result = run_cli("stencil", expression, "u0.npy", "-n", 2, "-o", "out.npy", *options,
                     cwd=folder)
    assert_one_line_error(result, fragment)
    assert not (folder / "out.npy").exists()
