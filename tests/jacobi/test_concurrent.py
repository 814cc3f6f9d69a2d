"""A grid as bands of rows on queues of their own (oclsci.jacobi.concurrent,
oclsci.mpi.concurrent) equals one solver of the whole grid, and NumPy, bit for bit.

On a GPU ``streaming`` runs in bands by the spec's rule; here ``OCLSCI_QUEUE_BANDS`` (or the
``bands`` argument) forces them on any device and kernel: bands of one row and bands thinner
than their ghost rows, step counts that end between refreshes, chunks of any size, a start at
an iteration that is not a multiple of the steps per launch (a resumed run), the command's
checkpoints and a stop signal.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest
from conftest import run_cli, start_cli
from signal_helpers import finish, wait_until_computing

from oclsci.errors import InputError, InvalidArgumentError
from oclsci.jacobi.checkpoint import load_checkpoint
from oclsci.jacobi.concurrent import ConcurrentJacobi
from oclsci.jacobi.kernels import KERNELS, KernelConfig
from oclsci.jacobi.reference import jacobi_numpy, laplacian
from oclsci.jacobi.runner import queue_bands, relative_residual, run, whole_grid_solver
from oclsci.jacobi.solver import JacobiSolver, choose_fitting_config
from oclsci.jacobi.specs.streaming import (
    AUTO_MIN_CELLS,
    MIN_BAND_ROWS,
    MIN_EXCHANGED_BAND_ROWS,
    QUEUE_BANDS,
)

# One configuration per kernel: its first example (several steps per launch where it has them).
CONFIGS = [KernelConfig(name, dict(spec.examples[0][0]), spec.examples[0][1])
           for name, spec in KERNELS.items()]


def _bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint8)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_bands_equal_numpy_bit_for_bit(compute, config):
    rng = np.random.default_rng(7)
    for shape, bands, dtype in [((29, 13), 3, np.float32), ((7, 5), 7, np.float64),
                                ((50, 3), 4, np.float32)]:
        if dtype == np.float64 and not compute.supports_fp64:
            continue
        rhs = (rng.standard_normal(shape) * 10).astype(dtype)
        x0 = rng.standard_normal(shape).astype(dtype)
        solver = ConcurrentJacobi(compute, rhs, x0, dtype=dtype, config=config, bands=bands)
        done = 0
        for steps in (1, 6, 19, 2):  # chunks ending anywhere between refreshes
            solver.advance(steps)
            done += steps
            want = jacobi_numpy(rhs, done, x0=x0, dtype=dtype)
            np.testing.assert_array_equal(_bits(solver.read()), _bits(want),
                                          err_msg=f"{shape} in {bands} bands, {done} steps")
        assert solver.iteration == done and solver.refreshes > 0


def test_resumed_iteration_and_residual(any_compute):
    """A run starting at an odd iteration (a resumed checkpoint) keeps the bits; the residual
    over the bands is the whole grid's, ghost rows refreshed first where they went stale."""
    rng = np.random.default_rng(8)
    rhs = rng.standard_normal((41, 17)).astype(np.float32)
    x0 = rng.standard_normal((41, 17)).astype(np.float32)
    config = choose_fitting_config(any_compute, "auto", np.float32, rhs.shape)
    bands = ConcurrentJacobi(any_compute, rhs, x0, dtype=np.float32, config=config, bands=3)
    whole = JacobiSolver(any_compute, rhs, x0=x0, dtype=np.float32, config=config)
    for solver in (bands, whole):
        solver.iteration = 1003
        result = run(solver, 1003 + 2 * bands.decomposition.halo + 3)
    np.testing.assert_array_equal(_bits(bands.read()), _bits(whole.read()))
    x = bands.read().astype(np.float64)
    want = np.linalg.norm(laplacian(x) - rhs) / np.linalg.norm(rhs.astype(np.float64))
    assert result.residual == pytest.approx(relative_residual(whole), rel=1e-12)
    assert relative_residual(bands) == pytest.approx(want, rel=1e-5)


def test_streaming_asks_for_bands_on_gpus_only(any_compute):
    config = KernelConfig("streaming", dict(KERNELS["streaming"].examples[0][0]))
    spec, values = config.spec, config.values()
    tall = (QUEUE_BANDS * MIN_BAND_ROWS, -(-AUTO_MIN_CELLS // (QUEUE_BANDS * MIN_BAND_ROWS)))
    assert spec.queue_bands(values, tall, True) == QUEUE_BANDS
    assert spec.queue_bands(values, (tall[0] - 1, tall[1] * 2), True) == 1  # bands too thin
    assert spec.queue_bands(values, (tall[0] * 2, 64), True) == 1  # auto takes temporal there
    assert spec.queue_bands(values, tall, False) == 1
    assert KERNELS["temporal"].queue_bands({}, tall, True) == 1
    # An MPI rank's interior: bands only where each gets MIN_EXCHANGED_BAND_ROWS rows.
    interior = (QUEUE_BANDS * MIN_EXCHANGED_BAND_ROWS, tall[1])
    assert spec.queue_bands(values, tall, True, exchanged=True) == 1
    assert spec.queue_bands(values, interior, True, exchanged=True) == QUEUE_BANDS
    assert KERNELS["temporal"].queue_bands({}, interior, True, exchanged=True) == 1
    assert queue_bands(any_compute, config, (10, 10), {"OCLSCI_QUEUE_BANDS": "3"}) == 3
    assert queue_bands(any_compute, config, (2, 10), {"OCLSCI_QUEUE_BANDS": "3"}) == 2
    assert queue_bands(any_compute, config, tall, {"OCLSCI_QUEUE_BANDS": "auto"}) == (
        QUEUE_BANDS if any_compute.is_gpu else 1)
    for bad in ("0", "-2", "many", "1.5"):
        with pytest.raises(InputError, match="OCLSCI_QUEUE_BANDS must be"):
            queue_bands(any_compute, config, tall, {"OCLSCI_QUEUE_BANDS": bad})


def test_whole_grid_solver_chooses_by_the_rule(any_compute, monkeypatch):
    rhs = np.ones((12, 5), np.float32)
    monkeypatch.setenv("OCLSCI_QUEUE_BANDS", "1")
    assert isinstance(whole_grid_solver(any_compute, rhs), JacobiSolver)
    monkeypatch.setenv("OCLSCI_QUEUE_BANDS", "2")
    solver = whole_grid_solver(any_compute, rhs, kernel="coalesced")
    assert isinstance(solver, ConcurrentJacobi) and solver.config.name == "coalesced"
    assert solver.describe().startswith("2 bands of 6 rows on 2 queues, 2 ghost rows a side")
    with pytest.raises(InputError, match="x0 has shape"):
        whole_grid_solver(any_compute, rhs, x0=np.ones((3, 3)))


def test_band_counts_checked_and_no_steps(any_compute):
    rhs = np.ones((6, 4), np.float32)
    config = choose_fitting_config(any_compute, "coalesced", np.float32, rhs.shape)
    for bands in (0, 7):
        with pytest.raises(InvalidArgumentError, match="each band needs at least one row"):
            ConcurrentJacobi(any_compute, rhs, dtype=np.float32, config=config, bands=bands)
    solver = ConcurrentJacobi(any_compute, rhs, dtype=np.float32, config=config, bands=6)
    assert solver.advance(0) is None and solver.iteration == 0


def test_a_long_advance_keeps_the_host_near_the_device(any_compute, monkeypatch):
    """advance() waits for the batch of rounds before last: the queues never hold more than
    about two batches (ROUNDS_PER_WAIT rounds each)."""
    from oclsci.mpi import concurrent

    monkeypatch.setattr(concurrent, "ROUNDS_PER_WAIT", 4)
    rhs = np.random.default_rng(13).standard_normal((20, 9)).astype(np.float32)
    config = choose_fitting_config(any_compute, "coalesced", np.float32, rhs.shape)
    solver = ConcurrentJacobi(any_compute, rhs, dtype=np.float32, config=config, bands=2)
    waited = []
    original = concurrent.deque.popleft

    class Batches(concurrent.deque):
        def popleft(self):
            event = original(self)
            waited.append(event)
            return event

    solver._batches = Batches()
    solver.advance(30)  # 30 rounds of one step: a wait at rounds 12, 16, 20, 24 and 28
    assert len(waited) == 5 and len(solver._batches) == 2
    np.testing.assert_array_equal(solver.read(), jacobi_numpy(rhs, 30))


def test_timed_over_every_queue(any_compute):
    """The stopwatch's device time runs to the end of the last band's work, on every band's
    queue (band 0's too: as an MPI rank's interior it is not on the stopwatch's queue)."""
    rhs = np.random.default_rng(9).standard_normal((30, 30)).astype(np.float32)
    config = choose_fitting_config(any_compute, "coalesced", np.float32, rhs.shape)
    solver = ConcurrentJacobi(any_compute, rhs, dtype=np.float32, config=config, bands=3)
    stopwatch = any_compute.stopwatch()
    solver.advance(40, stopwatch)
    seconds = stopwatch.stop()
    assert len(stopwatch.other_ends) == 3
    if stopwatch.source == "OpenCL events":
        ends = [event.profile.end for event in [stopwatch.last_event, *stopwatch.other_ends]]
        assert seconds == pytest.approx((max(ends) - stopwatch.first_event.profile.start) * 1e-9)


@pytest.mark.slow
def test_command_in_bands_checkpoints_and_resumes(tmp_path):
    rhs = np.random.default_rng(10).standard_normal((45, 19)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    banded = {"OCLSCI_QUEUE_BANDS": "3"}
    result = run_cli("jacobi", tmp_path / "b.npy", "-n", 77, "-o", tmp_path / "x.npy",
                     extra_env=banded, check_exit=0)
    assert "queues      3 bands of 15 rows on 3 queues" in result.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), jacobi_numpy(rhs, 77))
    run_cli("jacobi", tmp_path / "b.npy", "-n", 30, "--checkpoint", tmp_path / "ck.npz",
            "--quiet", extra_env=banded, check_exit=0)
    run_cli("jacobi", "--resume", tmp_path / "ck.npz", "-n", 77, "-o", tmp_path / "r.npy",
            "--quiet", extra_env={"OCLSCI_QUEUE_BANDS": "2"}, check_exit=0)
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), jacobi_numpy(rhs, 77))
    bad = run_cli("jacobi", tmp_path / "b.npy", "-n", 3, "-o", tmp_path / "y.npy",
                  extra_env={"OCLSCI_QUEUE_BANDS": "none"}, check_exit=1)
    assert "OCLSCI_QUEUE_BANDS must be" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "y.npy").exists()


@pytest.mark.slow
def test_signal_in_bands_leaves_a_usable_checkpoint(tmp_path):
    rhs = np.random.default_rng(11).standard_normal((64, 64)).astype(np.float32)
    np.save(tmp_path / "b.npy", rhs)
    process = start_cli("jacobi", tmp_path / "b.npy", "-n", 1_000_000_000, "--checkpoint",
                        tmp_path / "ck.npz", "-o", tmp_path / "x.npy", "--quiet",
                        extra_env={"OCLSCI_QUEUE_BANDS": "4"})
    wait_until_computing(process)
    process.send_signal(signal.SIGTERM)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert "checkpoint written" in stderr and "Traceback" not in stderr
    state = load_checkpoint(tmp_path / "ck.npz")
    assert 0 < state.iteration
    np.testing.assert_array_equal(state.x, jacobi_numpy(rhs, state.iteration))
