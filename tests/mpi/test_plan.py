"""The exchange plan chosen by a model (oclsci.mpi.plan) from measured constants
(oclsci.mpi.constants, `oclsci tune --mpi`), and `oclsci jacobi` and `oclsci stencil`
taking it under MPI."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest
from conftest import tool_missing
from mpi_launch import assert_ok, mpi_missing, run_oclsci

from oclsci.errors import OclsciWarning
from oclsci.mpi import constants as stored
from oclsci.mpi.plan import Constants, Run, choose_plan, exchange_us, step_us, strips_us
from oclsci.stencil import Stencil

# The 4x H200 host of docs/mpi.md ("A model of a run"): page-locked copies at 24 GB/s, the
# node's hand-over free, the strips' cost fitted on the 4-GPU weak run (148.058 us per step,
# interior 16350 x 16384 in bands at 1883.1 G cells/s), as benchmarks/mpi_model.py has them.
FITTED_C = (148.058 - 16350 * 16384 / 1883.1 / 1e3) / (2 * 16384) * 1e3  # ns per column
H200 = Constants(launch_us=0.0, d2h_bytes_per_s=24e9, h2d_bytes_per_s=24e9,
                 node_bytes_per_s=math.inf, node_latency_us=0.0, network_bytes_per_s=12e9,
                 network_latency_us=5.0, ranks_per_node=4, strip_ns_per_column=FITTED_C)
# Made-up but plausible constants of a GPU node, strips costed from their parts.
GPU = Constants(launch_us=5.0, d2h_bytes_per_s=20e9, h2d_bytes_per_s=20e9,
                node_bytes_per_s=50e9, node_latency_us=3.0, network_bytes_per_s=10e9,
                network_latency_us=5.0, ranks_per_node=4, d2d_bytes_per_s=1e12)


@pytest.mark.parametrize("m_interior,n,strips,rate,figure", [
    (16367, 16384, 1, 1883.1, 145.3), (8175, 16384, 1, 1739.2, 79.9),
    (4062, 16384, 2, 1418.9, 52.7), (8158, 32768, 2, 1874.9, 154.2)])
def test_the_model_gives_the_documented_check_figures(m_interior, n, strips, rate, figure):
    """docs/mpi.md's table "Against the runs above", within 0.1% (the figures' rounding)."""
    run = Run(m_interior + strips * 17, n, strips, 4 * n, rate * 1e9)
    assert step_us(H200, run, 16, True, 0.0) == pytest.approx(figure, rel=1e-3)


def test_an_exchange_over_the_network_as_documented():
    """S + 1 = 17 rows of 16384 float32 over 100 Gb/s with the copies: about 230 us."""
    run = Run(16384, 16384, 1, 4 * 16384, 1e12, remote=True)
    assert exchange_us(H200, run, 16) == pytest.approx(230, rel=0.05)


def middle_rank(remote: bool, rate: float = 1e12) -> Run:
    return Run(2048, 16384, 2, 4 * 16386, rate, steps_per_launch=4,
               strip_steps_per_launch=4, remote=remote)


def test_a_slow_network_asks_for_a_longer_period():
    fast = choose_plan(GPU, middle_rank(True))
    slow = choose_plan(dataclasses.replace(GPU, network_bytes_per_s=0.2e9,
                                           network_latency_us=500.0), middle_rank(True))
    assert slow.period > fast.period
    assert slow.us_per_step > fast.us_per_step


def test_a_cheap_exchange_takes_the_shortest_period():
    free = dataclasses.replace(GPU, d2h_bytes_per_s=1e15, h2d_bytes_per_s=1e15,
                               node_bytes_per_s=1e15, node_latency_us=0.0)
    plan = choose_plan(free, middle_rank(False))
    assert plan.period == 4


def test_overlap_pays_where_the_exchange_is_long_and_the_interior_longer():
    slow = dataclasses.replace(GPU, network_bytes_per_s=1e9, network_latency_us=200.0)
    plan = choose_plan(slow, middle_rank(True, rate=100e9))
    assert plan.overlapped
    assert not choose_plan(slow, middle_rank(True), overlap_possible=False).overlapped


def test_the_predicted_time_grows_as_the_network_slows():
    times = [choose_plan(dataclasses.replace(GPU, network_bytes_per_s=rate),
                         middle_rank(True)).us_per_step for rate in (50e9, 10e9, 2e9, 0.5e9)]
    assert times == sorted(times)


def test_no_plan_for_a_slab_thinner_than_a_launch():
    assert choose_plan(GPU, Run(3, 100, 2, 408, 1e9, steps_per_launch=8)) is None


def test_the_constants_round_trip_through_the_tuning_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "tuning.json"))
    stored.save_constants("dev | mpi, 4 ranks per node", GPU)
    assert stored.cached_constants("dev | mpi, 4 ranks per node") == GPU
    assert stored.cached_constants("dev | mpi, 2 ranks per node") is None


def test_a_malformed_entry_warns_once_and_is_ignored(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(path))
    path.write_text(json.dumps({"format": 1, "entries": {
        "bad": {"mpi_constants": {"launch_us": "fast"}}}}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert stored.cached_constants("bad") is None
    assert [str(w.message) for w in caught if w.category is OclsciWarning][0].startswith(
        "ignoring the MPI constants 'bad' in the tuning cache")


def test_either_variable_overrides_the_plan():
    assert not stored.plan_overridden({})
    assert stored.plan_overridden({"OCLSCI_MPI_OVERLAP": "auto"})
    assert stored.plan_overridden({"OCLSCI_MPI_EXCHANGE_EVERY": "8"})


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> tuple[dict, str]:
    """A tuning cache where `oclsci tune --mpi` on 2 ranks stored the constants: the
    environment naming it, and the command's output."""
    reason = mpi_missing()
    if reason is not None:
        tool_missing(reason)
    cache = tmp_path_factory.mktemp("tuned") / "tuning.json"
    env = {"OCLSCI_TUNE_CACHE": str(cache)}
    tuned = assert_ok(run_oclsci(["tune", "--mpi"], ranks=2, extra_env=env))
    assert "mpi_constants" in cache.read_text()
    return env, tuned.stdout


@pytest.mark.slow
def test_tune_mpi_then_jacobi_takes_the_plan(tmp_path, tuned):
    """`oclsci tune --mpi` on 2 ranks stores the constants; `oclsci jacobi` on 2 ranks takes
    its plan from them (bit-identical to one device), and the fixed rules when a variable
    says so."""
    env, stdout = tuned
    assert "launch:" in stdout and "saved to" in stdout
    b = np.random.default_rng(3).random((60, 40)).astype(np.float32)
    np.save(tmp_path / "b.npy", b)
    args = ["jacobi", tmp_path / "b.npy", "-n", "30"]
    assert_ok(run_oclsci([*args, "-q", "-o", tmp_path / "one.npy"], extra_env=env))
    planned = assert_ok(run_oclsci([*args, "-o", tmp_path / "two.npy"], ranks=2,
                                   extra_env=env))
    assert "plan: measured constants (period" in planned.stdout
    assert np.array_equal(np.load(tmp_path / "one.npy"), np.load(tmp_path / "two.npy"))
    fixed = assert_ok(run_oclsci([*args, "-o", tmp_path / "fixed.npy"], ranks=2,
                                 extra_env=dict(env, OCLSCI_MPI_OVERLAP="0")))
    assert "plan: fixed rules" in fixed.stdout
    assert np.array_equal(np.load(tmp_path / "one.npy"), np.load(tmp_path / "fixed.npy"))


@pytest.mark.slow
def test_tune_mpi_then_stencil_takes_the_plan(tmp_path, tuned):
    """`oclsci stencil` on 2 ranks takes its plan from the constants that `oclsci tune --mpi`
    stored (a 3-D stencil of radius 2 with u.prev: two levels travel), bit-identical to
    NumPy and so to one device; the fixed rules when a variable says so."""
    env, _ = tuned
    wave = ("2 * u - u.prev + 0.05 * (u[-2, 0, 0] + u[2, 0, 0] + u[0, -1, 0] + u[0, 1, 0] "
            "+ u[0, 0, -1] + u[0, 0, 1] - 4 * u)")
    u0 = np.random.default_rng(4).random((24, 6, 5)).astype(np.float32)
    np.save(tmp_path / "u0.npy", u0)
    want = Stencil(wave).reference(u0, 20)
    args = ["stencil", wave, tmp_path / "u0.npy", "-n", "20", "-o", tmp_path / "two.npy"]
    planned = assert_ok(run_oclsci(args, ranks=2, extra_env=env))
    assert "plan: measured constants (period" in planned.stdout
    assert np.array_equal(np.load(tmp_path / "two.npy"), want)
    fixed = assert_ok(run_oclsci(args, ranks=2, extra_env=dict(env, OCLSCI_MPI_OVERLAP="0")))
    assert "plan: fixed rules" in fixed.stdout
    assert np.array_equal(np.load(tmp_path / "two.npy"), want)


def test_strips_whose_launch_makes_the_period_cost_their_owned_rows():
    """One launch a period writes only the strips' S + 1 owned rows; more launches write all
    their 2 S + 1 rows (oclsci.mpi.plan.strips_us, costed from the parts)."""
    parts = dataclasses.replace(GPU, launch_us=0.0, d2d_bytes_per_s=math.inf)
    run = Run(4096, 16384, 2, 4 * 16384, 1e12, strip_steps_per_launch=16)
    owned = strips_us(parts, run, 16)
    assert owned == pytest.approx(2 * 17 * 16384 / 1e12 * 1e6)
    every_row = strips_us(parts, dataclasses.replace(run, strip_steps_per_launch=8), 16)
    assert every_row == pytest.approx(2 * 33 * 16384 / 1e12 * 1e6)


@pytest.mark.parametrize("cheap", [16, 32])
def test_timed_strips_decide_the_period(cheap):
    """Strips timed at each period (Run.strip_step_us, as a rank runs them) replace the
    model's estimate from their cells: the period whose strips are cheap wins."""
    timed = {period: 1.0 if period == cheap else 40.0 for period in (16, 32, 48, 64)}
    run = Run(8192, 16384, 2, 4 * 16384, 1.6e12, steps_per_launch=16,
              strip_steps_per_launch=16, strip_step_us=timed)
    plan = choose_plan(GPU, run)
    assert (plan.period, plan.overlapped) == (cheap, True)
    assert strips_us(GPU, run, cheap) < strips_us(GPU, run, 48)
