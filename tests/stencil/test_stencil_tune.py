"""Tuning stencils: candidates, the exactness check, the budget, the cache that ``auto``
reads, ``Stencil.tune`` and ``oclsci tune --stencil`` (tiny grids and budgets; the limits are
driven with a fake clock, never measured)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from conftest import assert_one_line_error, run_cli

from oclsci.errors import InvalidArgumentError
from oclsci.kernelspec.search import save_report
from oclsci.stencil import Stencil, StencilSolver, kernels, tuner
from oclsci.stencil.kernels import StencilConfig, structure
from oclsci.stencil.solver import geometry

HEAT = "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
HEAT_3D = ("u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1]"
           " + u[0, 0, 1] - 6 * u)")
JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"
TILED = StencilConfig("tiled", {"local_w": 16, "local_h": 4, "local_d": 1, "cells_x": 1,
                                "cells_y": 2, "cells_z": 1, "max_steps": 2})
STREAM = StencilConfig("stream", {"local_w": 32, "local_h": 1, "cells_x": 1, "cells_y": 1,
                                  "max_steps": 3, "seg": 8})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "tuning.json"
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(path))
    return path


def ticking_clock(step: float = 1.0):
    """A clock that advances ``step`` seconds each time it is read."""
    counter = itertools.count()
    return lambda: step * next(counter)


def test_candidates_fit_are_ordered_and_interleaved():
    facts = {"is_cpu": False, "cus": 100, "max_wg": 1024, "local_mem": 48 * 1024}
    problem = Stencil(HEAT, params={"k": 0.1}).problem(np.zeros((512, 512)), 1,
                                                       dtype=np.float32)
    geo = geometry(problem, problem.dtype)
    found = tuner.candidates(facts, geo)
    assert [c.name for c in found[:3]] == ["step", "tiled", "stream"]
    for name in ("tiled", "stream"):
        mine = [c for c in found if c.name == name]
        spec = kernels.get(name)
        assert all(spec.problem(c.params, geo, facts) is None for c in mine)
        assert mine[0].params == spec.resolve(spec.defaults(facts, geo)[0])
        assert len({json.dumps(c.to_json(), sort_keys=True) for c in mine}) == len(mine)
        # After the defaults, the tuning space in the cost model's order.
        space = [c for c in mine if c.params not in
                 [spec.resolve(p) for p in spec.defaults(facts, geo)]]
        costs = [spec.cost(c.params, geo, facts) for c in space]
        assert costs == sorted(costs) and len(space) > 10
    cpu = dict(facts, is_cpu=True)
    assert {c.name for c in tuner.candidates(cpu, geo)} == {"step"}


def test_structure_tells_stencils_apart():
    def key(text, shape, **kwargs):
        stencil = Stencil(text, **kwargs)
        problem = stencil.problem(np.zeros(shape), 1, fields={
            name: np.zeros(shape) for name in stencil.expression.fields})
        return structure(stencil.expression, geometry(problem, problem.dtype))

    assert key(HEAT, (4, 4), params={"k": 0.1}) == "stencil 2-D 5-point star radius 1"
    assert key(HEAT, (4, 4), params={"k": 0.1}) == key(HEAT.replace("4 * u", "4.0 * u"),
                                                       (9, 9), params={"k": 0.3})
    assert key(JACOBI, (4, 4)) == "stencil 2-D 4-point star radius 1, 1 field"
    assert key(HEAT_3D, (3, 3, 3), params={"k": 0.1}) == "stencil 3-D 7-point star radius 1"
    assert key("2 * u - u.prev", (5, 5)) == "stencil 2-D 1-point star radius 0, u.prev"


def test_search_checks_times_and_auto_takes_the_winner(any_compute, cache):
    stencil = Stencil(HEAT, params={"k": 0.2})
    report = tuner.tune(any_compute, stencil, (24, 40), budget=60,
                        configs=[tuner.REFERENCE, TILED, STREAM], min_seconds=0.002,
                        finalists=1)
    assert [t.status for t in report.trials] == ["ok"] * 3
    assert all(t.seconds_per_step > 0 for t in report.trials)
    assert set(report.best_by_kernel()) == {"step", "tiled", "stream"}
    assert "stencil 2-D 5-point star radius 1" in report.key and "float32" in report.key
    # Make the tiled kernel the winner, whatever the timings said.
    report.trials = [t for t in report.trials if t.config.name != "step"]
    report.trials[0].seconds_per_step = 1e-9
    assert save_report(report) == cache
    u0 = np.random.default_rng(4).uniform(0, 1, (26, 37)).astype(np.float32)
    solver = StencilSolver(any_compute, stencil.problem(u0, 11), kernel="auto")
    assert solver.config == TILED
    # A kernel asked for by name takes its own tuned configuration; given params, none.
    assert StencilSolver(any_compute, stencil.problem(u0, 11), kernel="stream").config == STREAM
    asked = StencilSolver(any_compute, stencil.problem(u0, 11), kernel="tiled",
                          kernel_params={"max_steps": 1})
    assert asked.config.params["max_steps"] == 1
    assert np.array_equal(stencil.run(u0, 11, device=any_compute), stencil.reference(u0, 11))
    # Another structure, dtype or size class does not see the entry.
    other = Stencil(HEAT_3D, params={"k": 0.1})
    assert StencilSolver(any_compute, other.problem(np.zeros((3, 5, 7), np.float32), 1),
                         kernel="auto").config.name == kernels.auto_kernel(
                             any_compute.facts.kernel_facts(),
                             geometry(other.problem(np.zeros((3, 5, 7)), 1), np.float32))
    big = np.zeros((400, 400), np.float32)
    assert StencilSolver(any_compute, stencil.problem(big, 1), kernel="auto").config != TILED


def test_an_unfitting_or_malformed_entry_is_ignored_with_a_warning(any_compute, cache):
    stencil = Stencil(HEAT, params={"k": 0.2})
    u0 = np.zeros((24, 40), np.float32)
    problem = stencil.problem(u0, 3)
    key = kernels.tuning_key(any_compute, stencil.expression, geometry(problem, u0.dtype),
                             u0.dtype)
    wide = StencilConfig("tiled", dict(TILED.params, max_steps=20))  # no tile inside its halo
    for best, fragment in [(wide.to_json(), "no tile"), ({"kernel": "nope", "params": {}},
                                                          "unknown stencil kernel")]:
        cache.parent.mkdir(exist_ok=True)
        cache.write_text(json.dumps({"format": 1, "entries": {key: {"best": best}}}))
        with pytest.warns(UserWarning, match=fragment):
            solver = StencilSolver(any_compute, problem, kernel="auto")
        assert solver.config != wide


def test_budget_screens_the_first_candidate_at_least(any_compute, cache):
    stencil = Stencil(HEAT, params={"k": 0.2})
    report = tuner.tune(any_compute, stencil, (16, 16), budget=1.5,
                        configs=[tuner.REFERENCE, TILED, STREAM], min_seconds=0.001,
                        clock=ticking_clock())
    assert len(report.trials) == 1 and report.trials[0].ok


def test_a_wrong_candidate_is_dropped(any_compute, monkeypatch):
    stencil = Stencil(JACOBI, fields=["b"])
    real = tuner.differing_cells
    calls = itertools.count()
    # The second candidate's result disagrees with the reference in one cell.
    monkeypatch.setattr(tuner, "differing_cells",
                        lambda a, b: real(a, b) + (next(calls) == 1))
    report = tuner.tune(any_compute, stencil, (12, 20), budget=60,
                        configs=[tuner.REFERENCE, TILED], min_seconds=0.001)
    assert report.trials[0].ok and report.trials[1].status == "WRONG: 1 cells differ"
    assert set(report.best_by_kernel()) == {"step"}


def test_differing_cells_sees_bits():
    a = np.array([0.0, np.nan, 1.0], np.float32)
    b = np.array([-0.0, np.nan, 1.0], np.float32)
    assert tuner.differing_cells(a, a.copy()) == 0 and tuner.differing_cells(a, b) == 1


def test_stencil_tune_saves_and_refuses_a_wrong_grid(any_compute, cache):
    stencil = Stencil(HEAT_3D, params={"k": 0.1})
    report = stencil.tune((6, 5, 9), device=any_compute, budget=0.5, kernels=["step"])
    assert report.best is not None and report.best.config.name == "step"
    assert report.key in json.loads(cache.read_text())["entries"]
    with pytest.raises(InvalidArgumentError, match="3-D"):
        stencil.tune((6, 5), device=any_compute, budget=0.5, save=False)


def test_cli_tunes_a_stencil(tmp_path):
    cache = tmp_path / "tuning.json"
    result = run_cli("tune", "--stencil", JACOBI, "--size", "12x17", "--budget", "1",
                     "--kernel", "step", "--kernel", "stream", "--json",
                     extra_env={"OCLSCI_TUNE_CACHE": str(cache)}, check_exit=0)
    data = json.loads(result.stdout)
    assert data["shape"] == [12, 17] and "1 field" in data["key"]
    assert data["best"]["kernel"] in ("step", "stream") and data["cache"] == str(cache)
    assert {t["kernel"] for t in data["trials"]} <= {"step", "stream"}
    assert data["key"] in json.loads(cache.read_text())["entries"]


@pytest.mark.parametrize("args, code, fragment", [
    (["--stencil", HEAT, "--param", "k=0.1", "--size", "4x4x4"], 1, "2-D"),
    (["--stencil", HEAT, "--param", "k=0.1", "--kernel", "temporal"], 2, "not a stencil"),
    (["--kernel", "stream"], 2, "not a Jacobi kernel"),
    (["--param", "k=1"], 1, "--param is for --stencil"),
    (["--size", "4x4x4"], 1, "2-D"),
    (["--stencil", "u ** 2"], 1, "refused"),
    (["--stencil", HEAT, "--param", "k=x"], 1, "takes a number"),
])
def test_cli_refusals_are_one_line(args, code, fragment, tmp_path):
    result = run_cli("tune", *args, "--budget", "1", "--no-save")
    assert_one_line_error(result, fragment, code=code)
