"""``oclsci stencil`` over MPI ranks (oclsci/stencil/distributed.py): slabs of rows (2-D) or
planes (3-D) with radius x period ghost layers, bit-identical to NumPy (and so to one device)
for every kernel, with fields and u.prev, slabs thinner than the ghost depth included;
checkpoints on a stop signal, resumed on another number of ranks.

The unmarked tests replay the slab algorithm in NumPy (no MPI); the ``mpi`` ones launch
``mpiexec -n P python -m oclsci stencil ...`` on PoCL ranks.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import signal
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DEVICE_SPECS, cli_command, tool_missing
from gpu_profiles import PROFILES, described
from mpi_launch import assert_ok, launch_env, mpi_missing, mpiexec_command, run_oclsci
from signal_helpers import finish, wait_until_ranks_compute

from oclsci.errors import InputError
from oclsci.mpi.slabs import Decomposition
from oclsci.mpi.subslabs import sub_slabs
from oclsci.stencil import Stencil
from oclsci.stencil.checkpoint import load_checkpoint
from oclsci.stencil.distributed import MIN_PLANE_STEPS, DistributedStencil
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


def slab_decomposition(problem, parts: int, period: int) -> Decomposition:
    """The ranks' slabs of ``problem``: radius x period ghost layers a side."""
    radius = problem.expression.radius
    return Decomposition.build(problem.shape[0], problem.shape[1], parts, radius * period,
                               fixed=0, ring=radius)


def replay_slabs(problem, parts: int, period: int, d: Decomposition | None = None):
    """``problem`` run as the ranks run it: every ``period`` steps each slab of ``d``
    (default: ``parts`` ranks' slabs; owned layers and radius x period ghost layers, the
    boundary value beyond) steps on its own, then the owned layers are put together."""
    d = d or slab_decomposition(problem, parts, period)
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


def case_problem(name: str, steps: int, dtype=np.float64, shape=None):
    expression, params, case_shape, names = CASES[name]
    shape = shape or case_shape
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


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("parts,period", [(2, 3), (3, 1)])
def test_sub_slab_algorithm_in_numpy_is_exact(name, parts, period):
    """The overlap's strips (radius x period layers facing another rank) and interiors as
    slabs of their own."""
    _, problem = case_problem(name, 17, shape=(6 * name.count("r2") + 21,)
                              + CASES[name][2][1:])
    pieces, owners = sub_slabs(slab_decomposition(problem, parts, period))
    edge = problem.expression.radius * period
    assert len(owners) == 3 * parts - 2
    assert all(piece.rows == edge for piece, owner, nxt in
               zip(pieces.slabs, owners, owners[1:], strict=False) if owner != nxt)
    assert np.array_equal(replay_slabs(problem, parts, period, pieces), stencil_numpy(problem))


@pytest.mark.parametrize("profile", PROFILES[-2:], ids=lambda p: p.name)
def test_overlapped_auto_chooses_per_piece(profile, monkeypatch, tmp_path):
    """With ``auto`` and the overlap, a GPU's interior of a big 2-D slab runs ``streaming``
    and its strips ``tiled``, at a period of both kernels' steps; a named kernel, given
    parameters or whole slabs keep one choice for all."""
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "tuning.json"))
    _, problem = case_problem("2d-r1-field", 1)
    job = object.__new__(DistributedStencil)
    job.world, job.shape, job.radius = SimpleNamespace(size=2), (2048, 2048), 1
    compute = described(profile)
    interior, strips = job._choose(compute, problem, "auto", None, True, None)
    assert (interior[0].name, strips[0].name) == ("streaming", "tiled")
    period = job._period(interior, strips, None, True)
    assert period % interior[0].steps_per_launch == period % strips[0].steps_per_launch == 0
    for kernel, params, overlap in (("auto", None, False), ("tiled", None, True),
                                    ("auto", {"max_steps": 2}, True)):
        whole, same = job._choose(compute, problem, kernel, params, overlap, None)
        assert whole == same, (kernel, params, overlap)


@pytest.mark.parametrize("profile", PROFILES[-2:], ids=lambda p: p.name)
@pytest.mark.parametrize("ranks", [2, 4, 16, 32])
def test_overlapped_3d_periods_update_enough_planes(profile, ranks, monkeypatch, tmp_path):
    """Overlapped in 3-D, the period is the fewest whole launches of both kernels whose
    slab updates MIN_PLANE_STEPS planes (a strip's ghost planes are recomputed at every
    step: fewer is cheaper, unless the exchange outlasts a thin slab's period), at most a
    quarter of the slab's planes in steps; else ghost layers of 8 steps or more. A strip's
    kernel covers its owned and ghost planes (3 r S) in one segment."""
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "tuning.json"))
    _, problem = case_problem("3d-r1-field", 1, dtype=np.float32)
    job = object.__new__(DistributedStencil)
    job.world, job.shape, job.radius = SimpleNamespace(size=ranks), (512, 512, 512), 1
    interior, strips = job._choose(described(profile), problem, "auto", None, True, None)
    assert (interior[0].name, strips[0].name) == ("column", "column")
    period = job._period(interior, strips, None, True)
    launch = math.lcm(interior[0].steps_per_launch, strips[0].steps_per_launch)
    planes = 512 // ranks
    assert period % launch == 0 and period <= max(planes // 4, launch)
    assert period * planes >= MIN_PLANE_STEPS or period + launch > planes // 4
    assert period == launch or (period - launch) * planes < MIN_PLANE_STEPS
    if ranks == 4:
        assert period > launch  # 128 planes a rank: more than one launch
    assert strips[0].params["seg"] == 3 * period
    assert job._period(interior, strips, None, False) >= 8


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


def save_case(folder, name: str, steps: int, dtype=np.float32,
              shape=None) -> tuple[list, object]:
    """The inputs of case ``name`` (on a grid of ``shape``, default the case's) in
    ``folder``; the command's arguments and the problem."""
    stencil, problem = case_problem(name, steps, dtype, shape)
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
@pytest.mark.parametrize("boundary,env", [("0", {}), ("periodic", {
    "OCLSCI_MPI_OVERLAP": "1", "OCLSCI_MPI_EXCHANGE_EVERY": "1"})],
                         ids=["fixed", "periodic-overlapped"])
def test_checkpoints_resume_on_another_rank_count(tmp_path, boundary, env):
    """Checkpoints every 10 steps and at the end on 3 ranks (a periodic grid's with the
    exchange overlapped); resumed on 2 ranks (whole slabs) and on one device, both end where
    the uninterrupted run ends (u.prev kept)."""
    args, problem = save_case(tmp_path, "2d-r2-prev-field", 23)
    args += ["--boundary", boundary]
    want = stencil_numpy(dataclasses.replace(problem, steps=40,
                                             periodic=boundary == "periodic"))
    checkpoint = tmp_path / "run.npz"
    assert_ok(run_oclsci(["stencil", *args, "-o", tmp_path / "p3.npy", "--checkpoint",
                          checkpoint, "--checkpoint-every", 10], ranks=3, extra_env=env))
    state = load_checkpoint(checkpoint)
    assert state.step == 23 and state.prev is not None
    resumed = [a if a != 23 else 40 for a in args]
    assert_ok(run_oclsci(["stencil", *resumed, "--resume", checkpoint, "-o",
                          tmp_path / "p2.npy"], ranks=2))
    assert_ok(run_oclsci(["stencil", *resumed, "--resume", checkpoint, "-o",
                          tmp_path / "one.npy"]))
    assert np.array_equal(np.load(tmp_path / "p2.npy"), want)
    assert np.array_equal(np.load(tmp_path / "one.npy"), want)


# The overlap on PoCL ranks, with slabs thick enough for strips: ghost layers of r x 1.
OVERLAP = {"OCLSCI_MPI_OVERLAP": "1", "OCLSCI_MPI_EXCHANGE_EVERY": "1"}


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("env", [{}, OVERLAP], ids=["slabs", "overlapped"])
def test_sigterm_to_one_rank_checkpoints_and_resumes_bit_identical(tmp_path, env):
    """SIGTERM to the last of 3 ranks: every rank stops at one step, the checkpoint is
    written (exit 75); resumed on 2 ranks and on 4, the result is the uninterrupted run's
    (overlapped: strips and interiors, the 4 ranks' slabs too thin for them)."""
    args, problem = save_case(tmp_path, "2d-r2-prev-field", 10**9)
    checkpoint = tmp_path / "run.npz"
    command = cli_command("stencil", *args, "--checkpoint", checkpoint, "-o",
                          tmp_path / "never.npy", launcher=[*mpiexec_command(), "-n", "3"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=launch_env(env), cwd=tmp_path,
                               text=True)
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
        result = assert_ok(run_oclsci(["stencil", *[a for a in resumed if a != "-q"],
                                       "--resume", checkpoint, "-o", out], ranks=ranks,
                                      extra_env=env))
        assert np.array_equal(np.load(out), want), f"resumed on P={ranks} differs"
        assert ("sub-slabs of" in result.stdout) == (env == OVERLAP and ranks == 2), \
            result.stdout


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


# Periodic grids over ranks: case, kernel and its parameters, rank counts, grid (None: the
# case's), OCLSCI_MPI_NODE_RANKS, steps between exchanges where overlapped ("": whole
# slabs). Grids of enough layers that no rank's ghost layers wrap around to its own.
PERIODIC = [
    ("2d-r1-field", ("step",), (2, 3), None, "", ""),
    ("2d-r1-field", ("tiled", "max_steps=3"), (4,), (31, 17), "2", ""),
    ("2d-r2-prev-field", ("stream", "max_steps=2"), (2, 4), None, "", ""),
    ("3d-r1-field", ("column", "local_w=8", "local_h=4", "cells_y=2", "max_steps=2", "seg=5"),
     (3,), (37, 6, 7), "1", ""),
    ("3d-r2-prev", ("stream",), (2,), (27, 5, 6), "", ""),
    ("2d-r1-field", ("tiled", "max_steps=2"), (2, 3), (61, 17), "1", "2"),
    ("2d-r2-prev-field", ("step",), (4,), (83, 13), "2", "3"),
    ("3d-r1-field", ("column", "local_w=8", "local_h=4", "cells_y=2", "max_steps=2", "seg=5"),
     (3,), (49, 6, 7), "", "4"),
    ("3d-r2-prev", ("stream",), (2,), (41, 5, 6), "", "3"),
]


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("name,kernel,ranks,shape,node_ranks,every", PERIODIC,
                         ids=[f"{c}-{k[0]}-p{'.'.join(map(str, r))}" + ("-overlapped" * bool(e))
                              for c, k, r, _, _, e in PERIODIC])
def test_periodic_bit_identical_over_ranks(tmp_path, name, kernel, ranks, shape, node_ranks,
                                           every):
    """The first and last ranks exchange ghost layers across the grid's ends, every rank
    wraps its slab (or each of its strips and interior, where the exchange runs behind the
    interior's steps) along the other axes: equal to NumPy's wrapped reference."""
    args, problem = save_case(tmp_path, name, STEPS, shape=shape)
    want = stencil_numpy(dataclasses.replace(problem, periodic=True))
    args += ["--boundary", "periodic", "--kernel", kernel[0],
             *[word for p in kernel[1:] for word in ("--kernel-param", p)]]
    loud = [word for word in args if word != "-q"]  # the summary's boundary line
    for count in ranks:
        out = tmp_path / f"p{count}.npy"
        env = {"OCLSCI_MPI_NODE_RANKS": node_ranks, "OCLSCI_MPI_OVERLAP": "1" if every else "0",
               "OCLSCI_MPI_EXCHANGE_EVERY": every}
        result = assert_ok(run_oclsci(["stencil", *loud, "-o", out], ranks=count,
                                      extra_env=env))
        assert ("exchanges overlapped" in result.stdout) == bool(every), result.stdout
        line = (r"boundary +periodic \(ghost layers from the ranks around the grid's ends; "
                r"\d+ ghost cells a side on the other ax[ie]s")
        assert re.search(line, result.stdout), result.stdout
        assert np.array_equal(np.load(out), want), f"P={count} differs ({name}, {kernel})"


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_periodic_ghost_layers_that_would_wrap_to_their_own_rank_are_refused(tmp_path):
    """8 ghost rows a side on 2 ranks of a 10-row periodic grid would reach a rank's own
    rows: one line and the input error's code, nothing written."""
    args, _ = save_case(tmp_path, "2d-r1-field", 5, shape=(10, 9))
    out = tmp_path / "p.npy"
    result = run_oclsci(["stencil", *args, "--boundary", "periodic", "-o", out], ranks=2)
    assert result.returncode == InputError.exit_code, result.stderr
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith("oclsci: rank")]
    assert len(lines) == 1 and "ghost layers would wrap around to its own; use at least 5 " \
        "ranks" in lines[0], result.stderr
    assert not out.exists()
    # A stencil that reads no neighbour has no ghost layers to wrap: it runs.
    point = Stencil("0.5 * u - 0.25 * u.prev", boundary="periodic")
    problem = point.problem(np.load(tmp_path / "u0.npy"), 5, dtype=np.float32)
    assert_ok(run_oclsci(["stencil", "0.5 * u - 0.25 * u.prev", tmp_path / "u0.npy", "-n", 5,
                          "--boundary", "periodic", "--device", DEVICE, "-q", "-o", out],
                         ranks=2))
    assert np.array_equal(np.load(out), stencil_numpy(problem))


# Case, kernel and its parameters, ranks, OCLSCI_MPI_NODE_RANKS, steps between exchanges
# (stale u.prev ghost layers would reach owned ones from 3 on), grid (None: the case's),
# resumed on.
OVERLAPPED = [
    ("2d-r1-field", ("tiled", "max_steps=2"), 2, "1", 2, None, None),
    ("2d-r2-prev-field", ("step",), 2, "", 3, (25, 13), None),
    ("3d-r1-field", ("step",), 3, "1", 1, None, 2),
    ("3d-r2-prev", ("stream",), 2, "", 3, (25, 5, 6), None),
    ("3d-r1-field", ("column", "local_w=8", "local_h=4", "cells_y=2", "max_steps=2", "seg=5"),
     3, "", 4, (37, 6, 7), 2),
    ("2d-r1-field", ("auto",), 4, "", 1, None, 3),
]


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("name,kernel,ranks,node_ranks,every,shape,resumed_on", OVERLAPPED,
                         ids=[f"{c}-{k[0]}-p{p}-node{n or 'all'}" for c, k, p, n, *_
                              in OVERLAPPED])
def test_overlapped_exchange_bit_identical(tmp_path, name, kernel, ranks, node_ranks, every,
                                           shape, resumed_on):
    """``OCLSCI_MPI_OVERLAP=1``: strips and interiors, the exchange behind the interior's
    steps, both levels with u.prev, every row through MPI or through shared memory; the
    result equals NumPy's. Resumed from the last checkpoint on another number of ranks
    (through more steps), it still does."""
    args, problem = save_case(tmp_path, name, STEPS, shape=shape)
    args = [a for a in args if a != "-q"] + ["--kernel", kernel[0]]
    args += [word for p in kernel[1:] for word in ("--kernel-param", p)]
    env = {**OVERLAP, "OCLSCI_MPI_EXCHANGE_EVERY": str(every),
           "OCLSCI_MPI_NODE_RANKS": node_ranks}
    checkpoint = tmp_path / "run.npz"
    out = tmp_path / f"p{ranks}.npy"
    result = assert_ok(run_oclsci(["stencil", *args, "-o", out, "--checkpoint", checkpoint,
                                   "--checkpoint-every", 7], ranks=ranks, extra_env=env))
    assert np.array_equal(np.load(out), stencil_numpy(problem)), result.stdout
    assert re.search(r"sub-slabs of [\d+]+ (rows|planes), exchanges overlapped with the "
                     r"interior's steps, rows through (MPI|shared memory) on rank 0\)",
                     result.stdout), result.stdout
    assert re.search(r"a device waited [\d.]+ s for the exchanges after its own steps",
                     result.stdout)
    if resumed_on:
        total = STEPS + 6
        resumed = [a if a != STEPS else total for a in args]
        out = tmp_path / f"resumed-p{resumed_on}.npy"
        assert_ok(run_oclsci(["stencil", *resumed, "--resume", checkpoint, "-o", out],
                             ranks=resumed_on, extra_env=env))
        want = stencil_numpy(dataclasses.replace(problem, steps=total))
        assert np.array_equal(np.load(out), want), f"resumed on P={resumed_on} differs"


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_overlap_wanted_but_slabs_too_thin(tmp_path):
    """Slabs too thin for strips and an interior: whole slabs, and the summary says why
    (ghost layers of 8 steps: overlapped 3-D runs otherwise exchange after every launch)."""
    args, problem = save_case(tmp_path, "3d-r1-field", STEPS)
    out = tmp_path / "p4.npy"
    result = assert_ok(run_oclsci(["stencil", *[a for a in args if a != "-q"], "-o", out],
                                  ranks=4, extra_env={"OCLSCI_MPI_OVERLAP": "1",
                                                      "OCLSCI_MPI_EXCHANGE_EVERY": "8"}))
    assert np.array_equal(np.load(out), stencil_numpy(problem))
    assert "whole slabs, too thin to overlap the exchange (strips of 8 planes" in \
        result.stdout, result.stdout
