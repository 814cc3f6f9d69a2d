"""The temporally blocked stencil kernels (``tiled``, ``stream``, ``column``) equal the NumPy
reference bit for bit on each test device: every stencil of the issue's list, float32 and
float64, odd sizes, tiles that do not divide the grid, step counts that leave a remainder
launch; and the choice of kernels (auto, defaults, given parameters, refusals)."""

from __future__ import annotations

import numpy as np
import pytest
from test_stencil_kernels import CASES, DTYPES, _inputs, _skip_without_fp64

from oclsci.errors import InvalidArgumentError, UnknownNameError
from oclsci.stencil import Stencil
from oclsci.stencil.kernels import KERNELS, auto_kernel, configurations
from oclsci.stencil.solver import NeededLayers, StencilSolver, WorkGroupTooLarge, stencil_geometry
from oclsci.stencil.specs import Geometry

STEPS = 7  # leaves a remainder after launches of 2 or 3 steps


def _check(compute, stencil, u0, fields, steps, kernel, kernel_params=None):
    got = stencil.run(u0, steps, fields=fields, device=compute, kernel=kernel,
                      kernel_params=kernel_params)
    want = stencil.reference(u0, steps, fields=fields)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise AssertionError(f"{kernel} {kernel_params} {stencil!r} {u0.dtype} {u0.shape}: "
                             f"{len(bad)} cells differ, first {bad[0].tolist()}")


def small_config(kernel: str, dims: int, radius: int) -> dict:
    """Small spans, so that the test grids hold several tiles (and partial ones), with as
    many steps a launch as the halo allows."""
    steps = 3 if radius <= 1 else 2
    if kernel == "tiled":
        if dims == 2:
            return {"local_w": 8, "local_h": 4, "cells_x": 2, "cells_y": 4, "max_steps": steps}
        return {"local_w": 8, "local_h": 4, "local_d": 2, "cells_y": 2, "cells_z": 4,
                "max_steps": 2}
    if kernel == "column":
        return {"local_w": 4, "local_h": 4, "cells_x": 3, "cells_y": 2, "max_steps": 2,
                "seg": 3}
    if dims == 2:
        return {"local_w": 16, "max_steps": steps, "seg": 5}
    return {"local_w": 8, "local_h": 4, "cells_y": 2, "max_steps": 2, "seg": 3}


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kernel", ["tiled", "stream", "column"])
def test_blocked_kernels_equal_numpy(compute, kernel, case, dtype):
    _skip_without_fp64(compute, dtype)
    stencil, names, shapes = CASES[case]
    expression = stencil.expression
    if KERNELS[kernel].handles(stencil_geometry(expression, shapes[0], dtype)):
        pytest.skip(f"{kernel} does not take {case}")
    for shape in shapes:
        u0, fields = _inputs(shape, names, dtype)
        params = small_config(kernel, len(shape), expression.radius)
        _check(compute, stencil, u0, fields, STEPS, kernel=kernel, kernel_params=params)


@pytest.mark.parametrize("case,variant", [
    ("heat-3d-7-point", {"prefetch": True}), ("wave-3d-prev", {"pack_x": True}),
    ("wave-3d-prev", {"pack_x": True, "prefetch": True, "cells_x": 2})])
def test_column_variants(compute, case, variant):
    """``column`` loading the next plane ahead (segments of 3 planes: the plane loaded past a
    segment's end, and past the grid's, is never used) and with a work-item's columns
    consecutive (reads along the row from the rings): the same bits."""
    stencil, names, shapes = CASES[case]
    for shape in shapes:
        u0, fields = _inputs(shape, names, np.float64)
        _check(compute, stencil, u0, fields, STEPS, kernel="column",
               kernel_params={**small_config("column", 3, 1), **variant})


@pytest.mark.parametrize("kernel", ["tiled", "stream"])
@pytest.mark.parametrize("steps", [1, 2, 5])
def test_one_step_launches_and_short_runs(compute, kernel, steps):
    """One step a launch, and runs shorter than a launch (only a remainder launch)."""
    stencil = CASES["wave-2d-prev-boundary"][0]
    u0, _ = _inputs((9, 23), (), np.float32)
    _check(compute, stencil, u0, {}, steps, kernel=kernel,
           kernel_params={**small_config(kernel, 2, 1), "max_steps": 1})
    _check(compute, stencil, u0, {}, steps, kernel=kernel,
           kernel_params={**small_config(kernel, 2, 1), "max_steps": 6})


@pytest.mark.parametrize("kernel", ["auto", "step", "tiled", "stream", "column"])
def test_defaults_for_the_device(compute, kernel):
    """Each kernel with its defaults for the device, a 2-D and a 3-D grid."""
    for case, shape in (("jacobi-5-point-rhs", (45, 70)), ("heat-3d-7-point", (9, 12, 20))):
        stencil, names, _ = CASES[case]
        if kernel == "column" and len(shape) == 2:
            continue
        u0, fields = _inputs(shape, names, np.float32)
        _check(compute, stencil, u0, fields, 9, kernel=kernel)


def test_radius_4_and_radius_0(compute):
    box = Stencil("u + 0.05 * (u[-4, 0] + u[0, 4] + u[3, -2] - 3 * u)")
    constant = Stencil("0.5 * u + 1")
    u0, _ = _inputs((19, 40), (), np.float32)
    for kernel, params in (("tiled", {"local_w": 16, "local_h": 4, "cells_y": 5,
                                      "max_steps": 1}),
                           ("stream", {"local_w": 32, "max_steps": 2, "seg": 4})):
        _check(compute, box, u0, {}, 5, kernel=kernel, kernel_params=params)
        _check(compute, constant, u0, {}, 5, kernel=kernel, kernel_params=params)


@pytest.mark.parametrize("groups", [{"gpu_groups": 1}, {"cpu_groups": 1}, {}],
                         ids=["gpu-groups", "cpu-groups", "runtime"])
def test_step_work_groups_equal_numpy(compute, groups):
    """``step``'s work-groups: GPU ones over a rounded-up grid (work-items beyond it return),
    CPU rows over the grid exactly (rows with and without a divisor to take), the runtime's."""
    for case, shape in (("jacobi-5-point-rhs", (29, 47)), ("jacobi-5-point-rhs", (6, 7)),
                        ("heat-3d-7-point", (11, 6, 32)), ("wave-3d-prev", (5, 8, 7))):
        stencil, names, _ = CASES[case]
        u0, fields = _inputs(shape, names, np.float32)
        _check(compute, stencil, u0, fields, STEPS, kernel="step", kernel_params=groups)


def test_step_cpu_work_groups():
    """Rows of up to 256 cells that divide the row, 2 rows (2 x 2) where they divide; the
    runtime's below 16 cells; GPU and CPU groups at once refused."""
    step = KERNELS["step"]
    cpu = step.resolve({"cpu_groups": 1})
    assert step.launch(cpu, Geometry((2048, 2048), 1)) == ((2048, 2048), (256, 2))
    assert step.launch(cpu, Geometry((256, 256, 256), 1)) == ((256,) * 3, (256, 2, 2))
    assert step.launch(cpu, Geometry((7, 9, 1000), 1)) == ((1000, 9, 7), (250, 1, 1))
    assert step.launch(cpu, Geometry((8, 1021), 1)) == ((1021, 8), None)
    both = step.resolve({"cpu_groups": 1, "gpu_groups": 1})
    assert "exclude each other" in step.problem(both, Geometry((64, 64), 1), CPU)


CPU = {"is_cpu": True, "cus": 2, "max_wg": 4096, "local_mem": 1 << 20}
GPU = {"is_cpu": False, "cus": 132, "max_wg": 1024, "local_mem": 48 * 1024}


def test_auto_per_device_kind_and_grid():
    assert auto_kernel(CPU, Geometry((2048, 2048), 1)) == "step"
    assert auto_kernel(GPU, Geometry((100, 100), 1)) == "tiled"
    assert auto_kernel(GPU, Geometry((16384, 16384), 1)) == "tiled"  # reads not known
    assert auto_kernel(GPU, Geometry((64, 64, 64), 1)) == "stream"  # reads not known
    star = frozenset({("u", (0, 0, 0)), ("u", (1, 0, 0)), ("u", (0, 0, -1))})
    assert auto_kernel(GPU, Geometry((64, 64, 64), 1, reads=star)) == "column"
    assert configurations(GPU, "auto", Geometry((64, 64, 64), 1))[-1].name == "step"


def test_parameters_not_given_take_the_device_default():
    """A parameter given alone keeps the device default's others (its span, its segment);
    where they clash with it, the others' own defaults; under auto, a parameter that the
    kernel auto runs does not take names that kernel."""
    geo = Geometry((40, 40, 40), 1)
    default = configurations(GPU, "stream", geo)[0]
    given = configurations(GPU, "stream", geo, {"max_steps": 1})[0]
    assert given.params == {**default.params, "max_steps": 1}
    assert configurations(CPU, "stream", geo, {"max_steps": 1})[0].params["local_h"] > 1
    # step's CPU default (cpu_groups) and gpu_groups exclude each other: gpu_groups alone.
    assert configurations(CPU, "step", geo, {"gpu_groups": 1})[0].params == \
        {"gpu_groups": 1, "cpu_groups": 0}
    with pytest.raises(InvalidArgumentError, match="--kernel auto runs step here, which has "
                                                   "no parameter 'max_steps'"):
        configurations(CPU, "auto", geo, {"max_steps": 2})


@pytest.mark.parametrize("facts", [CPU, GPU], ids=["cpu", "gpu"])
@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("radius", [0, 1, 2, 4])
@pytest.mark.parametrize("itemsize", [4, 8])
def test_defaults_and_tuning_spaces_fit(facts, dims, radius, itemsize):
    """Every default and candidate of every kernel fits the device and leaves a tile."""
    star = frozenset(("u", tuple(distance if axis == along else 0 for axis in range(dims)))
                     for along in range(dims) for distance in range(-radius, radius + 1))
    geo = Geometry((300,) * dims, radius, uses_prev=radius == 1, itemsize=itemsize, reads=star)
    for spec in KERNELS.values():
        if spec.handles(geo):
            assert not spec.defaults(facts, geo) and not spec.candidates(facts, geo)
            continue
        found = [spec.resolve(p) for p in spec.defaults(facts, geo)
                 if spec.problem(spec.resolve(p), geo, facts) is None]
        assert found, (spec.name, geo)
        for p in (spec.candidates(facts, geo) if spec.candidates else []):
            assert spec.problem(spec.resolve(p), geo, facts) is None, (spec.name, p)
            assert spec.cost(spec.resolve(p), geo, facts) > 0


def test_column_takes_3d_star_stencils_only(compute):
    u0, _ = _inputs((5, 6, 7), (), np.float32)
    for case, why in (("box-3d-27-point", r"star stencils only, this one reads u\[-1, -1, -1\]"),
                      ("jacobi-5-point-rhs", "takes 3-D stencils only, this one is 2-D")):
        stencil = CASES[case][0]
        grid = u0 if stencil.expression.radius and "3d" in case else u0[0]
        with pytest.raises(InvalidArgumentError, match=why):
            stencil.run(grid, 1, device=compute, kernel="column",
                        fields={name: grid for name in stencil.expression.fields})


def test_refusals_in_one_line(compute):
    stencil = CASES["heat-3d-7-point"][0]
    u0, _ = _inputs((5, 6, 7), (), np.float32)
    with pytest.raises(UnknownNameError, match="unknown stencil kernel 'fast'"):
        stencil.run(u0, 1, device=compute, kernel="fast")
    with pytest.raises(InvalidArgumentError, match="leaves no tile"):
        stencil.run(u0, 1, device=compute, kernel="tiled",
                    kernel_params={"local_w": 4, "local_h": 2, "local_d": 2, "max_steps": 3})
    with pytest.raises(InvalidArgumentError, match="has no parameter 'rows'"):
        stencil.run(u0, 1, device=compute, kernel="stream", kernel_params={"rows": 2})


@pytest.mark.parametrize("expression", [JACOBI_PREV := "2 * u - u.prev + 0.1 * "
                                        "(u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)",
                                        "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1])"],
                         ids=["with-prev", "without-prev"])
def test_auto_falls_back_to_the_one_step_kernel(compute, monkeypatch, expression):
    """On a GPU whose built kernels allow fewer work-items than every blocked default asks,
    auto runs the one-step kernel (with its own buffers), bit for bit."""
    import oclsci.stencil.kernels as kernels_module
    import oclsci.stencil.solver as solver_module

    def gpu_configurations(facts, kernel, geo, params=None):
        return configurations({**facts, "is_cpu": False}, kernel, geo, params)

    def group_limit(compute_context, kernel):  # only the one-step kernel builds big enough
        return 1024 if kernel.function_name == "stencil_step" else 1

    monkeypatch.setattr(kernels_module, "configurations", gpu_configurations)
    monkeypatch.setattr(solver_module.programs, "kernel_work_group_size", group_limit)
    stencil = Stencil(expression)
    u0 = np.random.default_rng(5).uniform(-1, 1, (37, 70)).astype(np.float32)
    solver = solver_module.StencilSolver(compute, stencil.problem(u0, 9))
    assert solver.config.spec.name == "step"
    solver.advance(9)
    assert np.array_equal(solver.read(), stencil.reference(u0, 9))


@pytest.mark.parametrize("kernel,case,shape,params", [
    ("column", "heat-3d-7-point", (23, 6, 7), None),
    ("column", "wave-3d-prev", (23, 5, 6), None),
    ("stream", "star-13-point-radius-2", (31, 18), None),
    ("stream", "heat-3d-7-point", (23, 6, 7), None),
    ("tiled", "heat-3d-7-point", (23, 6, 7), None),
    ("tiled", "wave-3d-prev", (23, 5, 6), None),
    ("tiled", "star-13-point-radius-2", (31, 18), None),
    ("step", "heat-3d-7-point", (23, 6, 7), {"gpu_groups": 1}),
    ("step", "wave-3d-prev", (23, 5, 6), {"cpu_groups": 1}),
    ("step", "star-13-point-radius-2", (31, 18), {"gpu_groups": 1}),
    ("step", "box-9-point-coefficient", (29, 33), {"gpu_groups": 0, "cpu_groups": 0})])
def test_needed_layers_only(compute, kernel, case, shape, params):
    """With :class:`NeededLayers` (an MPI sub-slab's owned layers, all others refreshed at
    every exchange), the kernels that can write some layers only give the needed layers'
    bits after every chunk of steps (chunks that cut launches and periods), and leave the
    layers beyond the launch's reach as they were."""
    stencil, names, _ = CASES[case]
    u0, fields = _inputs(shape, names, np.float64)
    prev = np.roll(u0, 1) if stencil.expression.uses_prev else None
    problem = stencil.problem(u0, 8, fields=fields, prev=prev, dtype=np.float64)
    radius, period, needed = stencil.expression.radius, 4, slice(10, 13)
    solver = StencilSolver(compute, problem, kernel,
                           small_config(kernel, len(shape), radius) if params is None
                           else params,
                           needed=NeededLayers(needed.start, needed.stop, period))
    launch = solver.steps_per_launch
    assert solver.windowed and launch == (1 if kernel == "step" else 2)
    solver.advance(2)  # the first launch writes the needed layers and radius x the steps left
    untouched = slice(0, needed.start - radius * (period - launch))
    before = [u0] if prev is None else [u0, prev]  # what the buffers were made with
    assert any(np.array_equal(solver.read()[untouched], level[untouched]) for level in before)
    done = 2
    for chunk in (1, 1, 3, 1):  # as a run cuts them: never across an exchange
        solver.advance(chunk)
        done += chunk
        want = stencil.reference(u0, done, fields=fields, prev=prev, dtype=np.float64)
        got = solver.read()
        assert np.array_equal(got[needed], want[needed]), f"after {done} steps"
        if done % period == 0:  # the exchange: every other layer refreshed
            refresh(solver, want, stencil.reference(u0, done - 1, fields=fields, prev=prev,
                                                    dtype=np.float64))


def refresh(solver: StencilSolver, current: np.ndarray, previous: np.ndarray) -> None:
    """Overwrite every level the next step reads with the reference's (what an exchange does
    to the ghost layers)."""
    for level, values in zip(solver.halo_levels, (previous, current)[-len(solver.halo_levels):],
                             strict=True):
        padded = np.full(solver.layout, solver.problem.boundary, dtype=solver.dtype)
        padded[tuple(slice(solver.radius, solver.radius + s) for s in values.shape)] = values
        level.write_rows(0, padded)


def test_needed_layers_fall_back_to_all_layers(compute, monkeypatch):
    """Where the kernel built to write some layers is refused (its work-group too large for
    that program), the solver writes every layer instead: same bits, nothing stale."""
    stencil, names, _ = CASES["heat-3d-7-point"]
    u0, fields = _inputs((23, 6, 7), names, np.float64)
    build = StencilSolver._build

    def refuse_windows(self, config, window):
        if window != self._all_layers:
            raise WorkGroupTooLarge("work-groups too large here")
        return build(self, config, window)

    monkeypatch.setattr(StencilSolver, "_build", refuse_windows)
    problem = stencil.problem(u0, 4, fields=fields, dtype=np.float64)
    solver = StencilSolver(compute, problem, "column", small_config("column", 3, 1),
                           needed=NeededLayers(10, 13, 4))
    solver.advance(4)
    assert solver.needed is None
    assert np.array_equal(solver.read(), stencil.reference(u0, 4, fields=fields,
                                                           dtype=np.float64))
