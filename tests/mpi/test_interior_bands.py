"""A rank's interior in bands of rows on queues of their own (oclsci/mpi/overlap.py with a
:class:`~oclsci.mpi.concurrent.ConcurrentBands` interior): the rows between the bands and the
strips go through the bands that own them, and every result is bit-identical to one device,
on one node and on two, through checkpoints, a tolerance and a stop signal.
``OCLSCI_QUEUE_BANDS`` forces the bands on PoCL, where the band rule leaves them off."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest
from conftest import DEVICE_SPECS, cli_command, tool_missing
from mpi_launch import (
    assert_converged_alike,
    assert_ok,
    launch_env,
    mpi_missing,
    mpiexec_command,
    run_oclsci,
)
from signal_helpers import finish, wait_until_ranks_compute

from oclsci.jacobi.kernels import choose_config
from oclsci.jacobi.overlap import JacobiPieces
from oclsci.mpi.concurrent import GHOST_LAUNCHES, ConcurrentBands, bands_that_fit

DEVICE = DEVICE_SPECS[0] if DEVICE_SPECS else None
BANDS = {"OCLSCI_MPI_OVERLAP": "1", "OCLSCI_QUEUE_BANDS": "3"}
STEPS = 53  # ends between exchanges and between band refreshes


@pytest.fixture
def rhs(tmp_path):
    if mpi_missing():
        tool_missing(mpi_missing())
    path = tmp_path / "rhs.npy"
    np.save(path, np.random.default_rng(38).standard_normal((1021, 37)) * 10)
    return path


def test_bands_that_fit_leave_room_for_the_exchanged_rows():
    # Each band: 2 (H + 1) rows for the exchange at an edge, plus its 2 S ghost rows.
    least = 2 * 17 + GHOST_LAUNCHES * 16
    assert bands_that_fit(4 * least, 4, 16, edge=17) == 4
    assert bands_that_fit(4 * least - 1, 4, 16, edge=17) == 3
    assert bands_that_fit(2 * least - 1, 4, 16, edge=17) == 1  # one band: none
    assert bands_that_fit(100, 6, 16) == 6  # no outside exchange: one row a band will do


class _Rows:
    """A band solver that only knows its queue (what :meth:`ConcurrentBands.holding` reads)."""

    def __init__(self, compute, rows):
        self.compute, self.rows, self.dtype = compute, rows, np.dtype(np.float32)


class _Adapter:
    def solver(self, compute, rows):
        return _Rows(compute, rows)

    def levels(self, solver):
        return []

    def row_stride(self, solver):
        return 8


class _Compute:
    context = None

    def with_own_queue(self):
        return _Compute()


def test_holding_names_the_band_that_owns_the_rows_or_the_fixed_row_beyond():
    bands = ConcurrentBands(_Compute(), 300, 5, _Adapter(), bands=3, steps_per_launch=4)
    first, middle, last = bands.solvers
    assert bands.holding(-1, 17) == (first, 0)  # the fixed row above the grid, then rows
    assert bands.holding(95, 100) == (first, 96)
    assert bands.holding(100, 110)[0] is middle
    assert bands.holding(283, 301)[0] is last  # rows, then the fixed row below
    with pytest.raises(ValueError, match="rows 95..104 are not all held by one band"):
        bands.holding(95, 105)


def test_every_band_of_an_interior_has_a_queue_apart_from_the_strips(any_compute,
                                                                      monkeypatch):
    """The strips' queue waits for the rows from other ranks once a period: no band of the
    interior runs there (where it would wait for them too)."""
    monkeypatch.setenv("OCLSCI_QUEUE_BANDS", "3")
    rhs = np.random.default_rng(5).standard_normal((300, 24)).astype(np.float32)
    config = choose_config(any_compute, "coalesced", np.float32, rhs.shape)
    pieces = JacobiPieces(any_compute, rhs, None, dtype=np.float32, config=config, period=8)
    interior = pieces.solver(slice(0, 300), False, slice(9, 291))
    assert isinstance(interior, ConcurrentBands)
    queues = [band.compute.queue for band in interior.solvers]
    assert len(queues) == 3
    assert all(queue is not any_compute.queue for queue in queues)
    assert len({id(queue) for queue in queues}) == 3


@pytest.mark.mpi
@pytest.mark.parametrize("kernel", ["coalesced", "temporal", "streaming"])
def test_interior_in_bands_bit_identical(rhs, tmp_path, kernel):
    common = [rhs, "-n", STEPS, "--kernel", kernel, "--device", DEVICE]
    assert_ok(run_oclsci(["jacobi", *common, "-q", "-o", tmp_path / "one.npy"]))
    reference = np.load(tmp_path / "one.npy")
    for ranks, node_ranks in ((2, ""), (3, ""), (4, "2")):
        out = tmp_path / f"p{ranks}.npy"
        result = assert_ok(run_oclsci(
            ["jacobi", *common, "-o", out], ranks=ranks,
            extra_env={**BANDS, "OCLSCI_MPI_NODE_RANKS": node_ranks}))
        assert re.search(r"the interior in 3 bands of \d+(-\d+)? rows on 3 queues",
                         result.stdout), result.stdout
        assert np.array_equal(np.load(out), reference), f"P={ranks} differs ({kernel})"


# Bands at the thinnest that bands_that_fit allows (2 (H + 1) + 2 S rows each): rows,
# kernel, OCLSCI_MPI_EXCHANGE_EVERY ("": the default period), the band height expected.
THIN = [(255, "streaming", "5", 28), (597, "temporal", "", 66)]


@pytest.mark.mpi
@pytest.mark.parametrize("rows,kernel,every,height", THIN)
def test_bands_at_their_thinnest_bit_identical(tmp_path, rows, kernel, every, height):
    """Three ranks, three bands of the least height each interior allows: the rows that the
    exchange writes into the edge bands stay out of the next bands' ghost rows."""
    if mpi_missing():
        tool_missing(mpi_missing())
    path = tmp_path / "thin.npy"
    np.save(path, np.random.default_rng(rows).standard_normal((rows, 13)))
    common = [path, "-n", 41, "--kernel", kernel, "--device", DEVICE]
    assert_ok(run_oclsci(["jacobi", *common, "-q", "-o", tmp_path / "one.npy"]))
    result = assert_ok(run_oclsci(["jacobi", *common, "-o", tmp_path / "p3.npy"], ranks=3,
                                  extra_env={**BANDS, "OCLSCI_MPI_EXCHANGE_EVERY": every}))
    assert f"3 bands of {height}" in result.stdout, result.stdout
    assert np.array_equal(np.load(tmp_path / "p3.npy"), np.load(tmp_path / "one.npy"))


RESIDUAL_SCRIPT = """
import sys, numpy as np
from oclsci import mpi
from oclsci.jacobi.distributed import DistributedJacobi
from oclsci.jacobi.reference import laplacian
from oclsci.jacobi.runner import relative_residual
from oclsci.runtime.device import create_context
world = mpi.mpi_world()
compute = create_context(sys.argv[1])
rhs = np.load(sys.argv[2]).astype(np.float32)
job = DistributedJacobi(world, compute, rhs.shape, rhs if world.is_root else None,
                        kernel="coalesced")
job.start(0)
job.run(int(sys.argv[3]), residual=False)
residual = relative_residual(job.solver, job.halo)
x = job.gather()
if world.is_root:
    assert "the interior in 3 bands" in job.describe(), job.describe()
    x = x.astype(np.float64)
    want = np.linalg.norm(laplacian(x) - rhs) / np.linalg.norm(rhs.astype(np.float64))
    print(repr(float(residual)), repr(float(want)))
"""


@pytest.mark.mpi
@pytest.mark.parametrize("steps", [21, 22])
def test_residual_of_bands_reads_fresh_ghost_rows(rhs, tmp_path, steps):
    """The residual over banded interiors (``coalesced``: ghost rows for 2 steps, the odd
    bands refreshed at even steps, the even ones at odd steps) and the strips, summed over
    the ranks: equal to NumPy's on the gathered iterate."""
    script = tmp_path / "residual.py"
    script.write_text(RESIDUAL_SCRIPT)
    command = [*mpiexec_command(), "-n", "2", sys.executable, str(script), DEVICE, str(rhs),
               str(steps)]
    result = assert_ok(subprocess.run(command, env=launch_env(BANDS), capture_output=True,
                                      text=True, timeout=180, stdin=subprocess.DEVNULL))
    got, want = map(float, result.stdout.split())
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.mpi
def test_interior_in_bands_tolerance_and_resume_with_other_bands(rhs, tmp_path):
    """--tol reads the bands' residuals (stale ghost rows refreshed first); a checkpoint of
    bands resumes on another count of ranks and bands."""
    common = ["--kernel", "temporal", "--device", DEVICE, "-q"]
    tol = [rhs, "-n", 3000, "--tol", "0.05", "--check-every", 48, *common[:-1]]
    one = assert_ok(run_oclsci(["jacobi", *tol, "-o", tmp_path / "one.npy"]))
    two = assert_ok(run_oclsci(["jacobi", *tol, "-o", tmp_path / "two.npy"], ranks=2,
                               extra_env=BANDS))
    assert_converged_alike(one, two)
    assert np.array_equal(np.load(tmp_path / "two.npy"), np.load(tmp_path / "one.npy"))

    checkpoint = tmp_path / "run.npz"
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 37, *common, "--checkpoint", checkpoint,
                          "--checkpoint-every", 20], ranks=3, extra_env=BANDS))
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 90, *common, "-o", tmp_path / "ref.npy"]))
    assert_ok(run_oclsci(["jacobi", "--resume", checkpoint, "-n", 90, *common,
                          "-o", tmp_path / "p2.npy"], ranks=2,
                         extra_env={**BANDS, "OCLSCI_QUEUE_BANDS": "2"}))
    assert np.array_equal(np.load(tmp_path / "p2.npy"), np.load(tmp_path / "ref.npy"))


@pytest.mark.mpi
def test_a_stop_with_interiors_in_bands_checkpoints_and_resumes(rhs, tmp_path):
    """SIGTERM to one of 3 ranks whose interiors run in bands, split into two nodes: every
    rank stops (exit 75) after the checkpoint; resumed without bands it ends where one device
    ends."""
    checkpoint = tmp_path / "run.npz"
    env = launch_env({**BANDS, "OCLSCI_MPI_NODE_RANKS": "2"})
    command = cli_command("jacobi", rhs, "-n", 10**9, "--kernel", "coalesced", "--device",
                          DEVICE, "--checkpoint", checkpoint, "-o", tmp_path / "never.npy",
                          launcher=[*mpiexec_command(), "-n", "3"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    pids = wait_until_ranks_compute(process, 3)
    os.kill(pids[0], signal.SIGTERM)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert not (tmp_path / "never.npy").exists()
    with np.load(checkpoint) as state:
        total = int(state["iteration"]) + 29
    common = ["-n", total, "--kernel", "coalesced", "--device", DEVICE, "-q"]
    assert_ok(run_oclsci(["jacobi", rhs, *common, "-o", tmp_path / "one.npy"]))
    assert_ok(run_oclsci(["jacobi", "--resume", checkpoint, *common, "-o", tmp_path / "p1.npy"]))
    assert np.array_equal(np.load(tmp_path / "p1.npy"), np.load(tmp_path / "one.npy"))
