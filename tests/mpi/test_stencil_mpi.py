"""``oclsci stencil`` over MPI ranks (oclsci/stencil/distributed.py): slabs of rows (2-D) or
planes (3-D) with radius x period ghost layers, bit-identical to NumPy (and so to one device)
for every kernel, with fields and u.prev, slabs thinner than the ghost depth included;
checkpoints on a stop signal, resumed on another number of ranks.

The unmarked tests replay the slab algorithm in NumPy (no MPI); the ``mpi`` ones launch
``mpiexec -n P python -m oclsci stencil ...`` on PoCL ranks.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess

import numpy as np
import pytest
from conftest import DEVICE_SPECS, cli_command, tool_missing
from mpi_launch import assert_ok, launch_env, mpi_missing, mpiexec_command, run_oclsci
from signal_helpers import finish, wait_until_ranks_compute

from oclsci.mpi.slabs import Decomposition
from oclsci.stencil import Stencil
from oclsci.stencil.checkpoint import load_checkpoint
from oclsci.stencil.reference import stencil_numpy

DEVICE = DEVICE_SPECS[0] if DEVICE_SPECS else None
JACOBI = "0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)"
# Radius 2, u.prev and a field: a 13-point star wave with a coefficient.
WAVE_2D = ("2 * u - u.prev + c * (u[-2, 0] + u[-1, 0] + u[1, 0] + u[2, 0] + u[0, -2] "
           "+ u[0, -1] + u[0, 1] + u[0, 2] - 8 * u)")
HEAT_3D = "u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] " \
          "+ u[0, 0, 1] - 6 * u)"
WAVE_3D = "2 * u - u.prev + 0.05 * (u[-2, 0, 0] + u[2, 0, 0] + u[0, -1, 0] + u[0, 1, 0] " \
          "+ u[0, 0, -1] + u[0, 0, 1] - 4 * u)"


# ---------------------------------------------------------------------------------------------
# Without MPI: the slab algorithm replayed in NumPy


def replay_slabs(problem, parts: int, period: int):
    """``problem`` run as the ranks run it: every ``period`` steps each slab (owned layers and
    radius x period ghost layers, the boundary value beyond) steps on its own, then the owned
    layers are put together."""
    radius = problem.expression.radius
    d = Decomposition.build(problem.shape[0], problem.shape[1], parts, radius * period,
                            fixed=0, ring=radius)
    u, prev, done = problem.u0, problem.prev0, 0
    while done < problem.steps:
        chunk = min(period, problem.steps - done)
        new_u, new_prev = np.empty_like(u), None if prev is None else np.empty_like(u)
        for slab in d.slabs:
            rows = slice(slab.lo, slab.hi)
            local = dataclasses.replace(
                problem, u0=u[rows], prev0=None if prev is None else prev[rows],
                fields={name: f[rows] for name, f in problem.fields.items()}, steps=chunk)
            owned = slice(slab.first - slab.lo, slab.stop - slab.lo)
            new_u[slab.first:slab.stop] = stencil_numpy(local)[owned]
            if prev is not None:
                before = stencil_numpy(dataclasses.replace(local, steps=chunk - 1))
                new_prev[slab.first:slab.stop] = before[owned]
        u, prev, done = new_u, new_prev, done + chunk
    return u


CASES = {  # name: (expression, params, shape, fields)
    "2d-r1-field": (JACOBI, {}, (23, 17), ("b",)),
    "2d-r2-prev-field": (WAVE_2D.replace("c *", "c * k *"), {"c": 0.05}, (19, 13), ("k",)),
    "3d-r1-field": (HEAT_3D, {}, (11, 6, 7), ("k",)),
    "3d-r2-prev": (WAVE_3D, {}, (13, 5, 6), ()),
}


def case_problem(name: str, steps: int, dtype=np.float64):
    expression, params, shape, names = CASES[name]
    rng = np.random.default_rng(len(name))
    fields = {field: rng.uniform(0.05, 0.2, shape) for field in names}
    stencil = Stencil(expression, params=params, fields=list(names))
    prev = rng.standard_normal(shape) if stencil.expression.uses_prev else None
    return stencil, stencil.problem(rng.standard_normal(shape), steps, fields=fields,
                                    prev=prev, dtype=dtype)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("parts,period", [(2, 3), (3, 8), (4, 5)])
def test_slab_algorithm_in_numpy_is_exact(name, parts, period):
    """Thin slabs (fewer layers than the ghost depth) included: ghosts from further ranks."""
    _, problem = case_problem(name, 17)
    assert np.array_equal(replay_slabs(problem, parts, period), stencil_numpy(problem))


def test_stencil_decomposition_exchanges_no_fixed_rows():
    d = Decomposition.build(20, 5, 2, 6, fixed=0, ring=2)
    assert d.needed(0) == [(10, 16)] and d.needed(1) == [(4, 10)]
    assert d.slabs[1].local(d.slabs[1].first) == 2 + 6  # ring, then the ghost rows
    jacobi = Decomposition.build(20, 5, 2, 6)
    assert jacobi.needed(0) == [(10, 17)] and jacobi.slabs[1].local(4) == 1


# ---------------------------------------------------------------------------------------------
# With MPI: `mpiexec -n P python -m oclsci stencil ...` against NumPy


@pytest.fixture
def mpi_present():
    reason = mpi_missing()
    if reason is not None:
        tool_missing(reason)


def save_case(folder, name: str, steps: int, dtype=np.float32) -> tuple[list, object]:
    """The inputs of case ``name`` in ``folder``; the command's arguments and the problem."""
    stencil, problem = case_problem(name, steps, dtype)
    expression, params, _, _ = CASES[name]
    np.save(folder / "u0.npy", problem.u0)
    args = [expression, folder / "u0.npy", "-n", steps, "--dtype", np.dtype(dtype).name,
            "--device", DEVICE, "-q"]
    for field, array in problem.fields.items():
        np.save(folder / f"{field}.npy", array)
        args += ["--field", f"{field}={folder / f'{field}.npy'}"]
    if problem.prev0 is not None:
        np.save(folder / "prev.npy", problem.prev0)
        args += ["--prev", folder / "prev.npy"]
    for param, value in params.items():
        args += ["--param", f"{param}={value}"]
    return args, problem


STEPS = 19  # not a multiple of the exchange period: ends between exchanges
RUNS = [  # case, kernel and its parameters, rank counts
    ("2d-r1-field", "step", (), (1, 2, 3)),
    ("2d-r1-field", "tiled", ("max_steps=3",), (2, 4)),
    ("2d-r1-field", "stream", ("max_steps=2", "seg=4"), (3,)),
    ("2d-r1-field", "streaming", ("cols=2", "local_w=8", "max_steps=3", "seg_h=5", "skew=2"),
     (2, 3)),
    ("2d-r2-prev-field", "stream", ("max_steps=2",), (4,)),
    ("2d-r2-prev-field", "tiled", ("max_steps=2",), (2,)),
    ("3d-r1-field", "step", (), (2, 4)),
    ("3d-r1-field", "tiled", (), (3,)),
    ("3d-r2-prev", "stream", (), (3,)),
]


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("name,kernel,params,ranks", RUNS,
                         ids=[f"{c}-{k}-p{'.'.join(map(str, r))}" for c, k, _, r in RUNS])
def test_bit_identical_over_ranks(tmp_path, name, kernel, params, ranks):
    args, problem = save_case(tmp_path, name, STEPS)
    want = stencil_numpy(problem)
    args += ["--kernel", kernel, *[word for p in params for word in ("--kernel-param", p)]]
    for count in ranks:
        out = tmp_path / f"p{count}.npy"
        assert_ok(run_oclsci(["stencil", *args, "-o", out], ranks=count))
        assert np.array_equal(np.load(out), want), f"P={count} differs ({name}, {kernel})"


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_summary_and_ghosts_deeper_than_slabs(tmp_path):
    """4 ranks on 11 planes with 8 ghost planes a side: ghosts from ranks beyond the next."""
    args, problem = save_case(tmp_path, "3d-r1-field", STEPS)
    want = stencil_numpy(problem)
    result = assert_ok(run_oclsci(["stencil", *[a for a in args if a != "-q"], "-o",
                                   tmp_path / "p4.npy"], ranks=4))
    assert np.array_equal(np.load(tmp_path / "p4.npy"), want)
    assert "mpi 4 ranks, slabs of 2-3 planes" in result.stdout, result.stdout
    assert "8 ghost planes per side, exchange every 8 steps" in result.stdout


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_checkpoints_resume_on_another_rank_count(tmp_path):
    """Checkpoints every 10 steps and at the end on 3 ranks; resumed on 2 ranks and on one
    device, both end where the uninterrupted run ends (u.prev kept)."""
    args, problem = save_case(tmp_path, "2d-r2-prev-field", 23)
    want = stencil_numpy(dataclasses.replace(problem, steps=40))
    checkpoint = tmp_path / "run.npz"
    assert_ok(run_oclsci(["stencil", *args, "-o", tmp_path / "p3.npy", "--checkpoint",
                          checkpoint, "--checkpoint-every", 10], ranks=3))
    state = load_checkpoint(checkpoint)
    assert state.step == 23 and state.prev is not None
    resumed = [a if a != 23 else 40 for a in args]
    assert_ok(run_oclsci(["stencil", *resumed, "--resume", checkpoint, "-o",
                          tmp_path / "p2.npy"], ranks=2))
    assert_ok(run_oclsci(["stencil", *resumed, "--resume", checkpoint, "-o",
                          tmp_path / "one.npy"]))
    assert np.array_equal(np.load(tmp_path / "p2.npy"), want)
    assert np.array_equal(np.load(tmp_path / "one.npy"), want)


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_sigterm_to_one_rank_checkpoints_and_resumes_bit_identical(tmp_path):
    """SIGTERM to the last of 3 ranks: every rank stops at one step, the checkpoint is
    written (exit 75); resumed on 2 ranks and on 4, the result is the uninterrupted run's."""
    args, problem = save_case(tmp_path, "2d-r2-prev-field", 10**9)
    checkpoint = tmp_path / "run.npz"
    command = cli_command("stencil", *args, "--checkpoint", checkpoint, "-o",
                          tmp_path / "never.npy", launcher=[*mpiexec_command(), "-n", "3"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=launch_env(), cwd=tmp_path, text=True)
    pids = wait_until_ranks_compute(process, 3)
    os.kill(pids[-1], signal.SIGTERM)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert "stopped by SIGTERM" in stderr and "--resume" in stderr, stderr
    assert not (tmp_path / "never.npy").exists()
    stopped = load_checkpoint(checkpoint).step
    total = stopped + 13
    want = stencil_numpy(dataclasses.replace(problem, steps=total))
    resumed = [a if a != 10**9 else total for a in args]
    for ranks in (2, 4):
        out = tmp_path / f"p{ranks}.npy"
        assert_ok(run_oclsci(["stencil", *resumed, "--resume", checkpoint, "-o", out],
                             ranks=ranks))
        assert np.array_equal(np.load(out), want), f"resumed on P={ranks} differs"


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_both_levels_through_shared_memory_and_mpi(tmp_path):
    """u and u.prev's ghost rows through MPI between "nodes" of 2 ranks, through shared
    memory on one: every slot of both levels reused."""
    args, problem = save_case(tmp_path, "2d-r2-prev-field", 31)
    out = tmp_path / "p3.npy"
    assert_ok(run_oclsci(["stencil", *args, "--kernel", "step", "-o", out], ranks=3,
                         extra_env={"OCLSCI_MPI_NODE_RANKS": "2"}))
    assert np.array_equal(np.load(out), stencil_numpy(problem))
