"""oclsci.poisson and ``oclsci poisson``: multigrid, CG and Jacobi against SciPy's direct
solve and the NumPy reference, on every test device."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import scipy.sparse as sparse
import scipy.sparse.linalg as sparse_linalg
from conftest import DEVICE_SPECS, assert_one_line_error, run_cli, tool_missing
from mpi_launch import assert_ok, mpi_missing, run_oclsci

from oclsci.errors import ArgumentTypeError, InputError, Interrupted, InvalidArgumentError
from oclsci.jacobi.picture import builtin_picture
from oclsci.jacobi.reference import laplacian
from oclsci.poisson import PoissonSolver, solve, solve_numpy
from oclsci.poisson.hierarchy import Axis, Transfer, build_levels
from oclsci.poisson.kernels import KERNELS as POISSON_KERNELS
from oclsci.poisson.reference import cycle
from oclsci.poisson.solve import check_options


def laplacian_matrix(m: int, n: int) -> sparse.csr_matrix:
    """The 5-point Laplacian with zero boundary of an m x n grid (row-major unknowns)."""
    def second_difference(k: int) -> sparse.dia_matrix:
        return sparse.diags([np.ones(k - 1), -2 * np.ones(k), np.ones(k - 1)], [-1, 0, 1])
    return (sparse.kron(second_difference(m), sparse.identity(n))
            + sparse.kron(sparse.identity(m), second_difference(n))).tocsr()


def direct_solve(rhs: np.ndarray) -> np.ndarray:
    """SciPy's sparse direct solve of L x = rhs."""
    m, n = rhs.shape
    return sparse_linalg.spsolve(laplacian_matrix(m, n).tocsc(), rhs.ravel()).reshape(m, n)


SHAPES = [(1, 1), (1, 17), (23, 1), (2, 2), (5, 8), (16, 16), (17, 17), (31, 40), (64, 63),
          (100, 37)]


# -- the levels -------------------------------------------------------------------------------

@pytest.mark.parametrize("points", [1, 2, 3, 4, 7, 8, 10, 33, 64])
def test_restriction_is_the_share_weighted_transpose_of_interpolation(points):
    fine = Axis.uniform(points)
    if not fine.can_coarsen:
        return
    coarse = fine.coarsened()
    transfer = Transfer.between(fine, coarse)
    interpolation = np.zeros((fine.points, coarse.points))
    for i in range(fine.points):
        for side in (0, 1):
            c = transfer.lower[i] + side
            if 0 <= c < coarse.points:
                interpolation[i, c] += transfer.weights[i, side]
    restriction = np.zeros((coarse.points, fine.points))
    for c in range(coarse.points):
        for offset in range(3):
            i = transfer.step * c + transfer.step - 2 + offset
            if 0 <= i < fine.points:
                restriction[c, i] += transfer.restrict[c, offset]
            else:
                assert transfer.restrict[c, offset] == 0.0
    expected = (interpolation * fine.shares()[:, None]).T / coarse.shares()[:, None]
    np.testing.assert_allclose(restriction, expected, rtol=0, atol=1e-15)
    # Linear functions are interpolated exactly (zero at both boundaries: the hat pieces).
    assert np.allclose(interpolation.sum(axis=1)[1::2][:coarse.points], 1.0)


def test_uniform_axis_gives_full_weighting_and_unit_coefficients():
    fine = Axis.uniform(7)
    low, high = fine.coefficients()
    assert np.all(low == 1.0) and np.all(high == 1.0)
    transfer = Transfer.between(fine, fine.coarsened())
    np.testing.assert_array_equal(transfer.restrict, np.tile([0.25, 0.5, 0.25], (3, 1)))


@pytest.mark.parametrize("shape", [(1, 1), (1, 1000), (1000, 1), (3, 5000), (4097, 4097),
                                   (266, 400)])
def test_levels_end_small_for_every_shape(shape):
    levels = build_levels(shape)
    m, n = levels[-1].shape
    assert m * n <= 64 or (m == 1 and n == 1)
    assert all(a.shape[0] >= b.shape[0] and a.shape[1] >= b.shape[1]
               for a, b in zip(levels, levels[1:], strict=False))
    assert 1 <= levels[-1].coarse_sweeps() <= 1000


def test_impossible_shape_refused():
    with pytest.raises(ValueError, match="at least one row"):
        build_levels((0, 5))


# -- the NumPy reference ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
def test_reference_matches_the_direct_solve(shape):
    rhs = np.random.default_rng(sum(shape)).standard_normal(shape)
    x, history = solve_numpy(rhs, tol=1e-11)
    expected = direct_solve(rhs)
    assert history[-1] < 1e-11
    np.testing.assert_allclose(x, expected, rtol=0, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("shape", [(127, 127), (128, 128), (129, 130), (255, 100), (2, 500),
                                   (500, 3), (333, 257)])
@pytest.mark.parametrize("kind", ["V", "F"])
def test_reference_cycle_reduces_the_residual_by_0_15_or_more(shape, kind):
    rhs = np.random.default_rng(7).standard_normal(shape)
    _, history = solve_numpy(rhs, tol=1e-12, kind=kind)
    rates = [after / before for before, after in zip(history, history[1:], strict=False)]
    assert max(rates) <= 0.15, rates


def test_reference_f_cycle_is_a_v_cycle_plus_a_second_coarse_visit():
    rhs = np.random.default_rng(1).standard_normal((40, 40))
    levels = build_levels(rhs.shape)
    u_v, u_f = np.zeros_like(rhs), np.zeros_like(rhs)
    cycle(levels, u_v, rhs, kind="V")
    cycle(levels, u_f, rhs, kind="F")
    assert not np.array_equal(u_v, u_f)


# -- the device solver ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("method", ["multigrid", "cg"])
def test_float64_matches_the_direct_solve(compute, shape, method):
    if not compute.supports_fp64:
        pytest.skip("no fp64 on this device")
    rhs = np.random.default_rng(sum(shape)).standard_normal(shape)
    result = solve(rhs, 1e-11, method=method, dtype="float64", device=compute)
    expected = direct_solve(rhs)
    assert result.converged and result.residual < 1e-11
    np.testing.assert_allclose(result.x, expected, rtol=0, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("shape", [(31, 40), (64, 63), (1, 300), (200, 3)])
@pytest.mark.parametrize("kind, smoother", [("V", "rbgs"), ("F", "rbgs"), ("V", "jacobi")])
def test_device_follows_the_reference_cycle_by_cycle(compute, shape, kind, smoother):
    if not compute.supports_fp64:
        pytest.skip("no fp64 on this device")
    rhs = np.random.default_rng(3).standard_normal(shape)
    result = solve(rhs, 1e-10, dtype="float64", device=compute, cycle=kind, smoother=smoother)
    x, history = solve_numpy(rhs, tol=1e-10, kind=kind, smoother=smoother)
    assert len(result.residuals) == len(history)
    np.testing.assert_allclose(result.residuals, history, rtol=1e-6, atol=1e-14)
    np.testing.assert_allclose(result.x, x, rtol=0, atol=1e-9 * np.abs(x).max())


@pytest.mark.parametrize("shape", [(255, 255), (256, 300), (3, 2000)])
def test_device_rate_per_v_cycle_at_most_0_15(any_compute, shape):
    rhs = np.random.default_rng(11).standard_normal(shape)
    dtype = "float64" if any_compute.supports_fp64 else "float32"
    tol = 1e-10 if dtype == "float64" else 1e-5
    result = solve(rhs, tol, dtype=dtype, device=any_compute)
    assert result.converged
    rates = [b / a for a, b in zip(result.residuals, result.residuals[1:], strict=False)]
    assert max(rates) <= 0.15, rates


@pytest.mark.parametrize("method", ["multigrid", "cg"])
def test_float32_stops_at_its_floor(any_compute, method):
    """float32 cannot reach 1e-12: the run stops once the true residual stalls, and says so
    (CG's recurrence would go on falling below what its float32 x can give)."""
    rhs = np.random.default_rng(5).standard_normal((200, 200))
    result = solve(rhs, 1e-12, dtype="float32", device=any_compute, max_cycles=60,
                   method=method)
    assert result.stalled and not result.converged
    assert result.cycles < 60 and 1e-9 < result.residual < 1e-5
    assert result.x.dtype == np.float32
    true = np.linalg.norm(rhs - laplacian(result.x)) / np.linalg.norm(rhs)
    assert result.residual / 3 < true < 3 * result.residual  # rounding noise at the floor


def test_jacobi_method_is_oclsci_jacobi(any_compute):
    rhs = laplacian(np.random.default_rng(2).uniform(0, 1, (12, 9)))
    result = solve(rhs, 1e-6, method="jacobi", dtype="float32", device=any_compute)
    assert result.converged and result.extra["steps"] % 1000 == 0
    np.testing.assert_allclose(result.x, direct_solve(rhs), atol=1e-4)


def test_zero_right_hand_side_is_solved_at_once(any_compute):
    result = solve(np.zeros((10, 12)), device=any_compute)
    assert result.converged and result.cycles == 0 and not result.x.any()


def test_max_cycles_ends_the_run_unconverged(any_compute):
    rhs = np.random.default_rng(4).standard_normal((64, 64))
    result = solve(rhs, 1e-14, dtype="float32", device=any_compute, max_cycles=2)
    assert result.cycles == 2 and not result.converged


@pytest.mark.parametrize("rhs, options, message", [
    (np.ones(5), {}, "2-D"),
    (np.zeros((0, 3)), {}, "empty"),
    (np.array([[1.0, np.nan]]), {}, "NaN"),
    (np.ones((3, 3)), {"tol": 0.0}, "tol must be a positive"),
    (np.ones((3, 3)), {"tol": float("nan")}, "tol must be a positive"),
    (np.ones((3, 3)), {"max_cycles": 0}, "max_cycles"),
    (np.ones((3, 3)), {"method": "sor"}, "method must be"),
    (np.ones((3, 3)), {"cycle": "W"}, "cycle must be"),
    (np.ones((3, 3)), {"smoother": "ilu"}, "smoother must be"),
    (np.ones((3, 3)), {"pre": 0, "post": 0}, "smoothing sweeps"),
    (np.ones((3, 3)), {"dtype": "float16"}, "dtype must be"),
    (np.full((3, 3), 1e300), {"dtype": "float32"}, "float32"),
])
def test_bad_arguments_refused(any_compute, rhs, options, message):
    with pytest.raises(InputError, match=message):
        solve(rhs, device=any_compute, **options)


@pytest.mark.parametrize("options, error", [
    ({"tol": 0.0}, InvalidArgumentError), ({"tol": "1e-6"}, ArgumentTypeError),
    ({"tol": True}, ArgumentTypeError), ({"max_cycles": 0}, InvalidArgumentError),
    ({"max_cycles": 2.5}, ArgumentTypeError), ({"method": "sor"}, InvalidArgumentError),
    ({"method": None}, ArgumentTypeError), ({"cycle": "W"}, InvalidArgumentError),
    ({"smoother": "ilu"}, InvalidArgumentError), ({"pre": 0, "post": 0}, InvalidArgumentError),
    ({"pre": 1.5}, ArgumentTypeError),
])
def test_bad_options_are_value_or_type_errors(options, error):
    """As the Jacobi API's: InvalidArgumentError (a ValueError) or ArgumentTypeError (a
    TypeError), both InputError for the command."""
    arguments = {"tol": 1e-6, "max_cycles": 10, "method": "multigrid", "cycle": "V",
                 "pre": 2, "post": 2, "smoother": "rbgs", **options}
    with pytest.raises(error):
        check_options(**arguments)


@pytest.mark.parametrize("shape, error", [
    ((4.5, 50), ArgumentTypeError), ((True, 5), ArgumentTypeError),
    ((np.float64(8), 8), ArgumentTypeError), ((0, 5), InvalidArgumentError),
    ((5,), InvalidArgumentError), (5, ArgumentTypeError),
])
def test_solver_shape_must_be_two_positive_integers(any_compute, shape, error):
    with pytest.raises(error, match="shape"):
        PoissonSolver(any_compute, shape)


def test_solver_beyond_memory_is_refused_up_front(any_compute, monkeypatch):
    """A raw MemoryError before; now one line naming the size and the memory, before the
    levels (host arrays) are made."""
    import importlib

    from oclsci.runtime import memory

    with pytest.raises(InvalidArgumentError, match="needs .* GiB"):
        PoissonSolver(any_compute, (2**40, 2**40))
    solve_module = importlib.import_module("oclsci.poisson.solve")
    monkeypatch.setattr(solve_module, "build_levels", lambda shape: pytest.fail("levels made"))
    monkeypatch.setattr(memory, "available_host_bytes", lambda: (2**20, "MemAvailable"))
    with pytest.raises(InvalidArgumentError, match=r"512 x 512 needs \d.* of host memory but "
                                                   r"1\.00 MiB is available \(MemAvailable\)"):
        PoissonSolver(any_compute, (512, 512), dtype="float32")


def test_should_stop_ends_the_solve(any_compute):
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) >= 2

    rhs = np.random.default_rng(6).standard_normal((64, 64))
    # The second poll: within the first cycle (every grid polls by time inside its cycles).
    with pytest.raises(Interrupted, match="stopped by a stop request during a cycle") as caught:
        solve(rhs, 1e-14, device=any_compute, should_stop=should_stop)
    assert caught.value.exit_code == 1  # a true answer that is no signal's number


def test_stop_inside_a_cycle_on_large_grids(any_compute, monkeypatch):
    """Grids past POLL_INSIDE_CELLS poll between the finest level's steps; a true answer
    stops the solve there (it is not only a callable that raises)."""
    import importlib

    solve_module = importlib.import_module("oclsci.poisson.solve")  # not the function
    monkeypatch.setattr(solve_module, "POLL_INSIDE_CELLS", 100)
    answers = iter([False, False, 15])  # the first cycle's two polls pass, then SIGTERM
    rhs = np.random.default_rng(6).standard_normal((20, 20))
    with pytest.raises(Interrupted, match="during a cycle") as caught:
        solve(rhs, 1e-14, device=any_compute, should_stop=lambda: next(answers, 15))
    assert caught.value.exit_code == 128 + 15


def test_a_dropped_solver_frees_its_buffers_without_the_cycle_collector(any_compute):
    import gc
    import weakref

    from oclsci.poisson import PoissonSolver

    solver = PoissonSolver(any_compute, (100, 100), dtype="float32")
    solver.solve(np.ones((100, 100)), 1e-3)  # records a cycle's plan
    multigrid = weakref.ref(solver.mg)
    gc.disable()
    try:
        del solver
        assert multigrid() is None
    finally:
        gc.enable()


# -- the command ------------------------------------------------------------------------------

def _device() -> list[str]:
    return ["--device", DEVICE_SPECS[0]] if DEVICE_SPECS else []


def test_cli_builtin_picture_reconstructs_it(tmp_path):
    out = tmp_path / "x.npy"
    result = run_cli("poisson", "-o", out, "--dtype", "float64", *_device(), check_exit=0)
    x = np.load(out)
    picture = builtin_picture().astype(np.float64)
    assert np.abs(x - picture).max() < 0.05
    assert "converged" in result.stdout and "error       max" in result.stdout
    history = next(line for line in result.stdout.splitlines() if line.startswith("history"))
    values = [float(v) for v in history.split()[1:]]
    assert values[0] == 1.0 and values[-1] < 1e-6


@pytest.mark.parametrize("method", ["multigrid", "cg"])
def test_cli_input_file_matches_the_api(tmp_path, method):
    rhs = np.random.default_rng(8).standard_normal((40, 30))
    np.save(tmp_path / "b.npy", rhs)
    out = tmp_path / "x.npy"
    run_cli("poisson", tmp_path / "b.npy", "-o", out, "--method", method, "--dtype", "float64",
            "--tol", "1e-10", "-q", *_device(), check_exit=0)
    api = solve(rhs, 1e-10, method=method, dtype="float64", device=DEVICE_SPECS[0] if
                DEVICE_SPECS else None)
    np.testing.assert_array_equal(np.load(out), api.x)


def test_cli_warns_when_the_tolerance_is_not_reached(tmp_path):
    out = tmp_path / "x.npy"
    result = run_cli("poisson", "-o", out, "--dtype", "float32", "--tol", "1e-13", "-q",
                     *_device(), check_exit=0)
    assert out.exists()
    assert "oclsci: warning: residual" in result.stderr and "floor" in result.stderr


@pytest.mark.parametrize("args, fragment", [
    (["missing.npy"], "missing.npy"),
    (["--tol", "-1"], "tol must be a positive"),
    (["--max-cycles", "0"], "max_cycles"),
    (["-o", "x.txt"], "unknown output type"),
    (["-o", "nofolder/x.npy"], "does not exist"),
    (["--device", "9:9"], "9:9"),
])
def test_cli_bad_input_one_line(tmp_path, args, fragment):
    args = [str(tmp_path / a) if a.endswith((".npy", ".txt")) else a for a in args]
    result = run_cli("poisson", *args)
    assert_one_line_error(result, fragment)
    assert not list(tmp_path.glob("x.*"))


# -- MPI --------------------------------------------------------------------------------------

@pytest.fixture
def mpi_ready():
    if mpi_missing() is not None:
        tool_missing(mpi_missing())


@pytest.mark.slow
@pytest.mark.parametrize("shape, options", [
    ((37, 50), []),
    ((200, 200), []),  # on 3 ranks: levels 0 and 1 in slabs, level 2 gathered
    ((9, 300), ["--cycle", "F"]),
    ((130, 7), ["--smoother", "jacobi"]),
])
def test_mpi_multigrid_equals_one_device(mpi_ready, tmp_path, shape, options):
    """Slabs of rows with ghost-row exchanges and the coarse levels on rank 0 go through the
    one-device arithmetic: the solution is the same bit for bit (here)."""
    np.save(tmp_path / "b.npy", np.random.default_rng(12).standard_normal(shape))
    args = ["poisson", tmp_path / "b.npy", "--dtype", "float64", "--tol", "1e-10", "-q",
            "--device", DEVICE_SPECS[0], *options]
    assert_ok(run_oclsci([*args, "-o", tmp_path / "one.npy"]))
    expected = np.load(tmp_path / "one.npy")
    np.testing.assert_allclose(expected, direct_solve(np.load(tmp_path / "b.npy")),
                               atol=1e-8 * np.abs(expected).max())
    for ranks in (2, 3, 4):
        out = tmp_path / f"p{ranks}.npy"
        assert_ok(run_oclsci([*args, "-o", out], ranks=ranks))
        np.testing.assert_array_equal(np.load(out), expected)


@pytest.mark.slow
def test_mpi_cg_within_the_tolerance_and_summary(mpi_ready, tmp_path):
    """CG's dot products are sums over ranks: the same solution to within rounding."""
    rhs = np.random.default_rng(13).standard_normal((60, 41))
    np.save(tmp_path / "b.npy", rhs)
    args = ["poisson", tmp_path / "b.npy", "--dtype", "float64", "--tol", "1e-10",
            "--method", "cg", "--device", DEVICE_SPECS[0]]
    one = assert_ok(run_oclsci([*args, "-o", tmp_path / "one.npy"]))
    three = assert_ok(run_oclsci([*args, "-o", tmp_path / "three.npy"], ranks=3))
    expected, got = np.load(tmp_path / "one.npy"), np.load(tmp_path / "three.npy")
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert "mpi         3 ranks" in three.stdout and "mpi " not in one.stdout


@pytest.mark.slow
def test_mpi_signal_to_one_rank_stops_every_rank(mpi_ready, tmp_path):
    """SIGTERM to the last rank, sent once it computes (it then collects signals): every rank
    agrees at the next poll, one error line, exit 128 + 15, no output."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    from mpi_launch import launch_env, mpiexec_command
    from signal_helpers import HANG, _computing

    np.save(tmp_path / "b.npy", np.random.default_rng(14).standard_normal((200, 200)))
    out = tmp_path / "never.npy"
    command = [*mpiexec_command(), "-n", "2", sys.executable, "-m", "oclsci", "poisson",
               str(tmp_path / "b.npy"), "--dtype", "float64", "--tol", "1e-300",
               "--max-cycles", "100000", "-o", str(out), "--device", DEVICE_SPECS[0]]
    process = subprocess.Popen(command, env=launch_env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def ranks() -> list[int]:
            found = []
            for entry in Path("/proc").iterdir():
                try:
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if str(out).encode() in argv and b"oclsci" in argv and \
                        not any(b"mpiexec" in a for a in argv[:1]):
                    found.append(int(entry.name))
            return sorted(found)

        deadline = time.monotonic() + HANG
        while not (len(ranks()) == 2 and _computing(ranks()[-1])):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the ranks never started computing"
            time.sleep(0.05)
        os.kill(ranks()[-1], signal.SIGTERM)
        _, stderr = process.communicate(timeout=HANG)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("oclsci: error:")]
    assert len(errors) == 1 and "stopped by SIGTERM" in errors[0], stderr
    assert "Traceback" not in stderr and not out.exists()


@pytest.mark.slow
def test_mpi_refuses_jacobi_and_too_many_ranks(mpi_ready, tmp_path):
    np.save(tmp_path / "b.npy", np.ones((3, 10)))
    result = run_oclsci(["poisson", tmp_path / "b.npy", "--method", "jacobi", "--device",
                         DEVICE_SPECS[0]], ranks=2)
    assert result.returncode == 1 and "oclsci jacobi --tol" in result.stderr, result.stderr
    result = run_oclsci(["poisson", tmp_path / "b.npy", "--device", DEVICE_SPECS[0]], ranks=4)
    assert result.returncode == 1 and "4 MPI ranks for a grid of 3 rows" in result.stderr, \
        result.stderr


# -- the benchmark ----------------------------------------------------------------------------

def test_bench_case_checks_every_method(any_compute, monkeypatch):
    from oclsci.bench import failures, run_bench, to_markdown, validate
    from oclsci.bench import poisson as bench_module

    monkeypatch.setattr(bench_module, "QUICK_SIZE", 40)
    report = run_bench(["poisson"], device=any_compute, quick=True, repeat=1,
                       command_line=["oclsci", "bench", "poisson", "--quick"])
    validate(report)
    assert failures(report) == []
    cases = report["cases"]
    assert [c["problem"]["dtype"] for c in cases] == \
        (["float64", "float32"] if any_compute.supports_fp64 else ["float32"])
    names = [r["variant"] for r in cases[-1]["results"]]
    assert names == ["scipy-direct", "multigrid", "multigrid-F", "cg", "jacobi"]
    assert all(r["status"] == "ok" for c in cases for r in c["results"])
    assert "Poisson 40x40" in to_markdown(report)


def test_bench_poisson_is_named_only():
    from oclsci.bench.runner import parse_workloads

    assert "poisson" not in parse_workloads(["all"])
    assert parse_workloads(["poisson"]) == ["poisson"]


def test_summary_history_elides_the_middle_of_a_long_run():
    from oclsci.cli.poisson import HISTORY_SHOWN, history_line

    short = [1.0, 0.25, 0.0625]
    assert history_line(short) == "1.00e+00 2.50e-01 6.25e-02"
    long = [0.5 ** i for i in range(101)]
    words = history_line(long).split()
    assert words[0] == "1.00e+00" and float(words[-1]) == pytest.approx(long[-1], rel=1e-2)
    assert f"({101 - HISTORY_SHOWN} more)" in history_line(long)


@pytest.mark.parametrize("name", list(POISSON_KERNELS))
def test_kernel_spec_describes_its_template(name):
    """The arguments Multigrid binds by name are the template's, in its order and kinds."""
    import re

    from oclsci.poisson.hierarchy import COARSEST_CELLS
    from oclsci.runtime import programs

    spec = POISSON_KERNELS[name]
    source = programs.render(spec.template, dtype=np.float32, acc_dtype=np.float64,
                             group_size=64, chunked=False, coarse_cells=COARSEST_CELLS)
    found = re.search(rf"void\s+{spec.kernel_name}\s*\(([^)]*)\)", source)
    kinds = {"int": "int", "real_t": "real", "ulong": "ulong"}
    signature = [(re.search(r"(\w+)\s*$", text).group(1),
                  "buffer" if "*" in text else kinds[text.split()[-2]])
                 for text in found.group(1).split(",")]
    assert signature == [(a.name, a.kind) for a in spec.arguments]
    assert set(spec.local_sizes) == {"cpu", "gpu"}
