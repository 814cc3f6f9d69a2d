"""Periodic boundaries (``boundary="periodic"``, ``--boundary periodic``): the NumPy reference
against updates written with ``np.roll``, every kernel against the reference bit for bit
(grids narrower than the ghost cells, u.prev, fields, remainder launches), the command's
summary, checkpoints and refusals."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import DEVICE_SPECS, assert_one_line_error, run_cli

from oclsci.errors import InputError, InvalidArgumentError
from oclsci.stencil import Stencil
from oclsci.stencil.checkpoint import load_checkpoint
from oclsci.stencil.periodic import PeriodicGrid
from oclsci.stencil.runner import run_steps
from oclsci.stencil.solver import StencilSolver

pytestmark = pytest.mark.skipif(not DEVICE_SPECS, reason="no OpenCL device")

HEAT_2D = "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
DRIFT = "u + c * (u[0, -1] - u) + 0.1 * (u[1, 0] - u)"
CASES = {  # name: (expression, params, fields, shapes)
    "heat-2d": (HEAT_2D, {"k": 0.2}, (), [(13, 21), (1, 7)]),
    "box-9-point-coefficient": (
        "u + c * (u[-1, -1] + u[-1, 0] + u[-1, 1] + u[0, -1] + u[0, 1] + u[1, -1] + u[1, 0]"
        " + u[1, 1] - 8 * u)", {}, ("c",), [(9, 14)]),
    "star-13-point-radius-2": (
        "u + 0.05 * (u[-2, 0] + u[-1, 0] + u[1, 0] + u[2, 0] + u[0, -2] + u[0, -1] + u[0, 1]"
        " + u[0, 2] - 8 * u)", {}, (), [(11, 3), (2, 9), (1, 7)]),
    "heat-3d-7-point": (
        "u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
        " + u[0, 0, 1] - 6 * u)", {"k": 0.1}, (), [(7, 5, 9), (3, 3, 3)]),
    "box-3d-27-point": (
        " + ".join(f"u[{i}, {j}, {k}]" for i in (-1, 0, 1) for j in (-1, 0, 1)
                   for k in (-1, 0, 1)) + " - 26 * u", {}, (), [(5, 6, 4)]),
    "wave-3d-prev": (
        "2 * u - u.prev + 0.1 * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0]"
        " + u[0, 0, -1] + u[0, 0, 1] - 6 * u)", {}, (), [(6, 4, 5)]),
}
KERNELS = ["auto", "step", "tiled", "stream", "column"]


def _inputs(shape, fields, dtype, seed=3):
    rng = np.random.default_rng(seed)
    u0 = rng.uniform(-1, 1, shape).astype(dtype)
    return u0, {name: rng.uniform(0, 0.1, shape).astype(dtype) for name in fields}


def test_reference_wraps_as_np_roll():
    """The reference's periodic heat and coefficient updates equal the same updates written
    with ``np.roll``, operation for operation."""
    u0, fields = _inputs((6, 9), ("c",), np.float32)
    k, four = np.float32(0.2), np.float32(4)
    u = u0.copy()
    for _ in range(7):
        u = u + k * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1)
                     + np.roll(u, -1, 1) - four * u)
    heat = Stencil(HEAT_2D, params={"k": 0.2}, boundary="periodic")
    assert np.array_equal(heat.reference(u0, 7), u)

    c = fields["c"]
    u = u0.copy()
    for _ in range(3):  # the coefficient read beside the cell wraps too
        u = u + np.roll(c, 1, 1) * np.roll(u, 1, 1) - c * u
    drift = Stencil("u + c[0, -1] * u[0, -1] - c * u", fields=["c"], boundary="periodic")
    assert np.array_equal(drift.reference(u0, 3, fields={"c": c}), u)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("case", list(CASES))
def test_every_kernel_equals_the_reference(compute, case, kernel, dtype):
    if dtype == np.float64 and not compute.supports_fp64:
        pytest.skip("no float64 on this device")
    expression, params, names, shapes = CASES[case]
    stencil = Stencil(expression, params=params, fields=names, boundary="periodic")
    for shape in shapes:
        u0, fields = _inputs(shape, names, dtype)
        try:
            got = stencil.run(u0, 11, fields=fields, device=compute, kernel=kernel)
        except InvalidArgumentError as error:  # a kernel for other stencils or dimensions
            assert kernel in ("column", "stream", "tiled") and "takes" in str(error)
            continue
        assert np.array_equal(got, stencil.reference(u0, 11, fields=fields)), shape


def test_jacobi_streaming_wraps(compute):
    """The seed's Jacobi as a stencil on ``streaming`` (Jacobi's register kernel), a field
    read at the cell: every 2 x 3 launches of 3 steps."""
    jacobi = Stencil("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)",
                     boundary="periodic")
    u0, fields = _inputs((19, 40), ("b",), np.float32)
    params = {"cols": 2, "local_w": 8, "max_steps": 3, "seg_h": 4}
    got = jacobi.run(u0, 14, fields=fields, device=compute, kernel="streaming",
                     kernel_params=params)
    assert np.array_equal(got, jacobi.reference(u0, 14, fields=fields))


def test_refreshes_between_chunks_and_at_the_period(compute):
    """Run in chunks that cut launches: the ghost cells are refreshed every period only, and
    the grid's cells are right after every chunk (what a checkpoint reads)."""
    expression, params, names, _ = CASES["wave-3d-prev"]
    stencil = Stencil(expression, params=params, boundary="periodic")
    u0, _ = _inputs((5, 6, 7), (), np.float64 if compute.supports_fp64 else np.float32)
    problem = stencil.problem(u0, 17)
    grid = PeriodicGrid(compute, problem, kernel="tiled",
                        kernel_params={"local_w": 8, "local_h": 4, "local_d": 2, "cells_y": 2,
                                       "cells_z": 4, "max_steps": 2}, period=4)
    assert grid.steps_between_exchanges == 4 and grid.widening == 4 and grid.depth == 5
    done = 0
    for chunk in (3, 6, 8):
        done = run_steps(grid.solver, done + chunk, halo=grid)
        assert np.array_equal(grid.read(), stencil.reference(u0, done))
        assert np.array_equal(grid.read_prev(), stencil.reference(u0, done - 1))
    assert grid.exchanges == 17 // 4


@pytest.mark.parametrize("kernel,period,widening", [("step", None, 0), ("step", 3, 2),
                                                     ("stream", None, 2)])
def test_the_one_step_kernel_reads_the_ring(compute, kernel, period, widening):
    """The one-step kernel computes the grid alone at one step a refresh (its ring refreshed
    every step), ``r (S - 1)`` ghost cells more at S steps; a blocked kernel ``r S``. Fields
    read at offsets beyond the grid get the other side's cells."""
    stencil = Stencil(DRIFT, fields=["c"], boundary="periodic")
    u0, fields = _inputs((7, 5), ("c",), np.float32)
    params = {"local_w": 16, "max_steps": 2, "seg": 3} if kernel == "stream" else None
    grid = PeriodicGrid(compute, stencil.problem(u0, 9, fields=fields), kernel=kernel,
                        kernel_params=params, period=period)
    assert grid.widening == widening
    run_steps(grid.solver, 9, halo=grid)
    assert np.array_equal(grid.read(), stencil.reference(u0, 9, fields=fields))


def test_a_fallback_kernel_finds_its_ghost_cells(compute, monkeypatch):
    """Where the first configuration (a one-step kernel) is refused and a blocked one
    follows, the ghost cells are the blocked kernel's: same bits."""
    import oclsci.stencil.periodic as periodic_module
    import oclsci.stencil.solver as solver_module
    from oclsci.stencil.kernels import StencilConfig

    tiled = StencilConfig("tiled", {"local_w": 8, "local_h": 4, "local_d": 1, "cells_x": 1,
                                    "cells_y": 2, "cells_z": 1, "max_steps": 2})
    step = StencilConfig("step", {"gpu_groups": 1, "cpu_groups": 0})
    monkeypatch.setattr(periodic_module, "choose", lambda *args, **kwargs: [step, tiled])
    monkeypatch.setattr(solver_module.programs, "kernel_work_group_size",
                        lambda compute, kernel: 1 if kernel.function_name == "stencil_step"
                        else 1024)
    stencil = Stencil(HEAT_2D, params={"k": 0.2}, boundary="periodic")
    u0, _ = _inputs((9, 13), (), np.float32)
    grid = PeriodicGrid(compute, stencil.problem(u0, 7))
    assert grid.solver.config == tiled and grid.widening == 1
    run_steps(grid.solver, 7, halo=grid)
    assert np.array_equal(grid.read(), stencil.reference(u0, 7))


def test_tuning_a_periodic_stencil_times_its_kernels(compute):
    """A search for a periodic stencil runs the kernels a periodic run launches (on a fixed
    boundary: the widened grid is theirs)."""
    stencil = Stencil(HEAT_2D, params={"k": 0.2}, boundary="periodic")
    report = stencil.tune((12, 16), device=compute, budget=1.0, kernels=["step"], save=False)
    assert report.best is not None and report.best.config.name == "step"


def test_boundary_is_checked(compute):
    with pytest.raises(InvalidArgumentError, match="must be a number or 'periodic'"):
        Stencil(HEAT_2D, params={"k": 0.1}, boundary="wrap")
    with pytest.raises(TypeError, match="must be a number or 'periodic', got NoneType"):
        Stencil(HEAT_2D, params={"k": 0.1}, boundary=None)
    assert Stencil("u", boundary=" Periodic ").boundary == "periodic"
    # The one-device solver alone would run it with a fixed boundary: refused.
    problem = Stencil(HEAT_2D, params={"k": 0.1}, boundary="periodic").problem(
        np.zeros((4, 5), np.float32), 3)
    with pytest.raises(InvalidArgumentError, match="runs on oclsci.stencil.periodic"):
        StencilSolver(compute, problem)


@pytest.fixture
def files(tmp_path):
    u0, fields = _inputs((10, 12), ("c",), np.float32)
    np.save(tmp_path / "u0.npy", u0)
    np.save(tmp_path / "c.npy", fields["c"])
    return tmp_path, u0, fields



def test_command_runs_periodic_and_resumes(files, invoke_cli):
    folder, u0, fields = files
    stencil = Stencil(DRIFT, fields=["c"], boundary="periodic")

    def command(steps, *extra):
        return invoke_cli("stencil", DRIFT, folder / "u0.npy", "-n", steps, "--field",
                          f"c={folder / 'c.npy'}", "--boundary", "periodic", "--device",
                          DEVICE_SPECS[0], *extra)

    code, stdout, _ = command(9, "-o", folder / "a.npy", "--checkpoint", folder / "c.npz")
    assert code == 0, stdout
    line = re.search(r"\n  boundary periodic \((\d+) ghost cells a side on every axis, "
                     r"(\d+) of them computed; refreshed every (\d+) steps: (\d+) "
                     r"refreshes\)\n", stdout)
    assert line, stdout
    depth, computed, period, refreshes = map(int, line.groups())
    assert refreshes == 9 // period and depth == computed + 1  # radius 1: the ring
    assert np.array_equal(np.load(folder / "a.npy"), stencil.reference(u0, 9, fields=fields))
    assert load_checkpoint(folder / "c.npz").periodic
    code, _, _ = command(23, "-o", folder / "b.npy", "--resume", folder / "c.npz", "-q")
    assert code == 0
    assert np.array_equal(np.load(folder / "b.npy"), stencil.reference(u0, 23, fields=fields))
    # The checkpoint of a periodic run goes on periodic only, and the other way round.
    code, _, err = invoke_cli("stencil", DRIFT, "-n", 12, "--resume", folder / "c.npz",
                              "-o", folder / "x.npy", "--device", DEVICE_SPECS[0])
    assert code == InputError.exit_code and "was made for periodic boundaries" in err, err
    assert not (folder / "x.npy").exists()


@pytest.mark.parametrize("value,words", [
    ("wrap", "'wrap' is neither a number nor 'periodic'"),
    ("1_0", "'1_0' is neither a number nor 'periodic'"),
    ("nan", "'nan' is not a finite number"), ("1e400", "'1e400' is not a finite number")])
def test_command_refuses_a_bad_boundary(files, value, words):
    folder, _, _ = files
    result = run_cli("stencil", "u", "u0.npy", "-n", 2, "-o", "out.npy", "--boundary",
                     value, cwd=folder)
    assert_one_line_error(result, words, code=2)  # a usage error, as any bad option value
    assert not (folder / "out.npy").exists()


def test_a_checkpoint_both_periodic_and_with_a_value_is_refused(tmp_path):
    u = np.zeros((3, 4), np.float32)
    np.savez(tmp_path / "c.npz", expression=np.array("u"), u=u, boundary=np.float32(3),
             periodic=np.array(True), step=np.array(2), format_version=np.array(1))
    with pytest.raises(InputError, match="periodic, yet with the boundary value 3"):
        load_checkpoint(tmp_path / "c.npz")
