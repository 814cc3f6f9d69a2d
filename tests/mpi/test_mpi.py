"""Distributed runs (oclsci.mpi): bit-identical to one device for any number of ranks.

The tests marked ``mpi`` launch ``mpiexec -n P python -m oclsci ...`` and compare the .npy
outputs with a one-process run exactly; they skip when mpi4py or mpiexec is missing
(``pip install 'oclsci[mpi]'`` brings both). The unmarked tests check the decomposition and
the launcher detection without MPI, and replay the slab algorithm in NumPy.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DEVICE_SPECS, tool_missing
from gpu_profiles import PROFILES, described
from mpi_launch import (
    LAUNCHER_VARIABLES,
    assert_converged_alike,
    assert_ok,
    launch_env,
    mpi_missing,
    mpiexec_command,
    run_oclsci,
)

from oclsci import mpi
from oclsci.jacobi.reference import jacobi_numpy, jacobi_step
from oclsci.jacobi.solver import KERNEL_NAMES
from oclsci.mpi import subslabs

pytestmark = pytest.mark.slow



# ---------------------------------------------------------------------------------------------
# Without MPI: decomposition, detection, and the algorithm replayed in NumPy


@pytest.mark.parametrize("rows,parts", [(10, 3), (37, 4), (1021, 4), (5, 5), (7, 1)])
def test_split_rows_covers_all_rows(rows, parts):
    bounds = mpi.split_rows(rows, parts)
    assert bounds[0][0] == 0 and bounds[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


@pytest.mark.parametrize("m,parts,halo", [(37, 4, 8), (37, 4, 16), (1021, 3, 16), (9, 3, 1),
                                          (12, 2, 40)])
def test_transfers_deliver_every_needed_row_once(m, parts, halo):
    d = mpi.Decomposition.build(m, 5, parts, halo)
    moves = d.transfers()
    for dest in range(parts):
        needed = sorted(row for a, b in d.needed(dest) for row in range(a, b))
        got = sorted(row for s, t, a, b in moves if t == dest for row in range(a, b))
        assert got == needed
        slab = d.slabs[dest]
        assert slab.lo == max(0, slab.first - halo) and slab.hi == min(m, slab.stop + halo)
    for source, dest, a, b in moves:
        assert d.slabs[source].first <= a < b <= d.slabs[source].stop and source != dest


@pytest.mark.parametrize("m,parts,halo", [(37, 4, 8), (37, 2, 17), (12, 3, 8), (1021, 3, 16)])
def test_periodic_transfers_wrap_around_the_grid(m, parts, halo):
    """Every slab's ghost rows on both sides, the first and last slabs' from each other;
    each row from the slab that owns it (as its owner numbers it)."""
    d = mpi.Decomposition.build(m, 5, parts, halo, fixed=0, periodic=True)
    moves = d.transfers()
    for dest, slab in enumerate(d.slabs):
        assert (slab.lo, slab.hi) == (slab.first - halo, slab.stop + halo)
        assert d.needed(dest) == [(slab.lo, slab.first), (slab.stop, slab.hi)]
        got = sorted(row for s, t, a, b in moves if t == dest for row in range(a, b))
        assert got == [*range(slab.lo, slab.first), *range(slab.stop, slab.hi)]
    for source, dest, a, b in moves:
        owner = d.slabs[source]
        assert source != dest and b - a >= 1
        assert owner.first <= d.source_row(a) and d.source_row(b - 1) < owner.stop
    rows = np.arange(m * 3).reshape(m, 3)
    assert np.array_equal(d.held(rows, 0)[:halo], rows[m - halo:])


def test_periodic_ghost_rows_reaching_their_own_slab_are_refused():
    with pytest.raises(mpi.InputError, match="ghost layers would wrap around to its own; use "
                       "at least 3 ranks, one process"):
        mpi.Decomposition.build(12, 5, 2, 7, fixed=0, periodic=True)
    with pytest.raises(mpi.InputError, match="its own; use one process, or a shorter"):
        mpi.Decomposition.build(12, 5, 2, 12, fixed=0, periodic=True)
    with pytest.raises(mpi.InputError, match="a slab's ghost layers would wrap around"):
        mpi.Decomposition.from_bounds(12, 5, [(0, 9), (9, 12)], 4, fixed=0, periodic=True)


@pytest.mark.parametrize("height,parts,per_rank", [(157, 3, 1), (157, 3, 4), (5, 4, 3), (2, 4, 1)])
def test_rank_bands_cover_the_image_once(height, parts, per_rank):
    rows = sorted(row for rank in range(parts)
                  for first, count in mpi.rank_bands(height, parts, rank, per_rank)
                  for row in range(first, first + count))
    assert rows == list(range(height))


def test_more_ranks_than_rows_is_refused():
    with pytest.raises(mpi.InputError, match="at least one row"):
        mpi.Decomposition.build(3, 10, 4, 8)


@pytest.mark.parametrize("env,expected", [
    ({}, False),
    ({"OMPI_COMM_WORLD_SIZE": "1"}, False),
    ({"OMPI_COMM_WORLD_SIZE": "4"}, True),
    ({"PMI_SIZE": "2", "PMI_RANK": "0"}, True),
    ({"PMI_SIZE": "1", "PMI_RANK": "0"}, False),
    ({"PMIX_RANK": "0"}, True),
    ({"SLURM_NTASKS": "4", "SLURM_PROCID": "0"}, False),  # a batch script, not a step
    ({"SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "1"}, True),
    ({"SLURM_STEP_NUM_TASKS": "1", "SLURM_PROCID": "0"}, False),
    ({"OCLSCI_MPI": "1"}, True),
    ({"OCLSCI_MPI": "0", "OMPI_COMM_WORLD_SIZE": "4"}, False),
])
def test_launcher_detection(env, expected):
    assert mpi.wants_mpi(env) is expected


@pytest.mark.parametrize("module", ["oclsci.mpi", "oclsci.jacobi.distributed", "oclsci.driver",
                                    "oclsci.jacobi.driver", "oclsci.poisson.driver",
                                    "oclsci.mandelbrot.driver", "oclsci.lombscargle.driver",
                                    "oclsci.stencil.driver", "oclsci.stencil.distributed"])
def test_mpi_and_driver_load_nothing_of_the_cli(module):
    """No import cycle cli -> mpi -> cli: the MPI code and the drivers stand without the CLI."""
    code = f"import sys, {module}; print([m for m in sys.modules if m.startswith('oclsci.cli')])"
    out = subprocess.run([sys.executable, "-c", code], env=launch_env(), capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_no_cli_import_anywhere_under_mpi_or_jacobi():
    """Not even inside a function: oclsci/mpi, oclsci/jacobi, the driver and the workloads'
    runners import nothing from oclsci.cli; oclsci/mpi imports no workload; none of the MPI
    code or the runners prints."""
    import ast

    import oclsci

    package = Path(oclsci.__file__).parent
    runners = {*package.glob("*/distributed.py"), *package.glob("*/driver.py"),
               package / "driver.py", package / "jacobi" / "overlap.py"}
    for path in [*package.glob("mpi/**/*.py"), *package.glob("jacobi/**/*.py"), *runners]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(name.startswith("oclsci.cli") for name in names), path
            if path.parent.name == "mpi":
                workloads = ("oclsci.jacobi", "oclsci.mandelbrot", "oclsci.lombscargle",
                             "oclsci.poisson", "oclsci.elementwise", "oclsci.stencil")
                assert not any(name.startswith(workloads) for name in names), path
            if path.parent.name == "mpi" or path in runners:  # rank 0 reports through results
                assert not (isinstance(node, ast.Call) and getattr(node.func, "id", "") ==
                            "print"), f"{path}:{node.lineno} prints"


def test_no_launcher_no_mpi4py_import():
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    code = ("import sys; from oclsci.mpi import mpi_world; "
            "assert mpi_world() is None; assert 'mpi4py' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("command", ["jacobi", "poisson", "mandelbrot", "lombscargle",
                                     "stencil"])
def test_one_device_commands_import_nothing_of_mpi(tmp_path, command):
    """Without a launcher, the distributed commands load no module of oclsci.mpi (nor
    mpi4py): a one-device run pays nothing for MPI."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    times = np.linspace(0, 10, 50)
    np.save(tmp_path / "s.npy", np.stack([times, np.sin(times)]))
    args = {"jacobi": ["-n", "3"], "poisson": ["--max-cycles", "1"],
            "mandelbrot": ["--width", "16", "--height", "8", "--no-image"],
            "lombscargle": [str(tmp_path / "s.npy"), "--freqs", "0.1:1:4"],
            "stencil": ["u + 0.1 * u[1, 0]", str(tmp_path / "u.npy"), "-n", "3", "-o",
                        str(tmp_path / "out.npy")]}[command]
    np.save(tmp_path / "u.npy", np.ones((6, 5)))
    code = ("import sys; from oclsci.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('oclsci.mpi', 'mpi4py'))))")
    out = subprocess.run([sys.executable, "-c", code, command, *args, "-q",
                          "--device", DEVICE], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_exchange_period():
    assert mpi.exchange_period(1) == 8
    assert mpi.exchange_period(8) == 8
    assert mpi.exchange_period(16) == 16
    assert mpi.exchange_period(3) == 9
    assert mpi.exchange_period(8, 24) == 24


def test_rank_cache_dirs_are_per_rank(tmp_path):
    env = {"OCLSCI_CACHE_DIR": str(tmp_path), "SLURM_JOB_ID": "77"}
    first = mpi.use_rank_cache_dirs(0, env)
    pocl0 = env["POCL_CACHE_DIR"]
    env2 = {"OCLSCI_CACHE_DIR": str(tmp_path), "SLURM_JOB_ID": "77"}
    second = mpi.use_rank_cache_dirs(1, env2)
    assert first != second and pocl0 != env2["POCL_CACHE_DIR"]
    assert first.endswith("-job77-r0") and Path(pocl0).is_dir()
    assert env["XDG_CACHE_HOME"].startswith(first)
    assert not env["OCLSCI_TUNE_CACHE"].startswith(first)  # the tuning cache stays shared


def test_aborting_rank_waits_until_its_error_line_is_read(tmp_path):
    """A rank about to MPI_Abort waits for the launcher to read its pipe (or socket), so that
    the teardown does not drop the line; it does not wait on a file, or past its timeout."""
    import socket

    from oclsci.runtime.streams import wait_until_read

    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader, os.fdopen(write_end, "wb") as writer:
        writer.write(b"oclsci: error: rank 1 of 3: RuntimeError\n")
        writer.flush()
        assert wait_until_read(writer, 0.05) is False  # nobody has read it
        reader.read1(1 << 16)
        assert wait_until_read(writer, 0.05) is True
    left, right = socket.socketpair()
    with left, right, left.makefile("wb") as writer:
        writer.write(b"line\n")
        writer.flush()
        if sys.platform.startswith("linux"):
            assert wait_until_read(writer, 0.05) is False
        right.recv(1 << 16)
        assert wait_until_read(writer, 0.05) is True
    with open(tmp_path / "log", "wb") as log:
        log.write(b"line\n")
        log.flush()
        assert wait_until_read(log, 0.05) is True
    assert wait_until_read(object(), 0.05) is True


@pytest.mark.parametrize("m,parts,halo", [(100, 2, 8), (61, 3, 4), (1021, 4, 16), (9, 1, 2)])
def test_sub_slabs_cut_each_slab_into_strips_and_interior(m, parts, halo):
    d = mpi.Decomposition.build(m, 5, parts, halo)
    pieces, owners = subslabs.sub_slabs(d)
    assert pieces.slabs[0].first == 0 and pieces.slabs[-1].stop == m
    for rank, slab in enumerate(d.slabs):
        mine = [p for p, owner in zip(pieces.slabs, owners, strict=True) if owner == rank]
        assert (mine[0].first, mine[-1].stop) == (slab.first, slab.stop)
        assert len(mine) == 1 + (rank > 0) + (rank < parts - 1)
        interior = mine[1] if rank > 0 else mine[0]
        assert interior.rows >= halo + 1
        for strip in mine:
            if strip is not interior:
                assert strip.rows == halo + 1
    # Every row another rank needs comes from a strip (the pieces that step first).
    for source, dest, _, _ in pieces.transfers():
        if owners[source] != owners[dest]:
            assert pieces.slabs[source].rows == halo + 1


def test_sub_slabs_refuse_thin_slabs():
    # Middle ranks need two strips of halo + 1 rows and an interior at least as high.
    assert subslabs.sub_slabs(mpi.Decomposition.build(3 * 26, 5, 3, 8)) is None
    assert subslabs.sub_slabs(mpi.Decomposition.build(3 * 27, 5, 3, 8)) is not None


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_overlapped_auto_chooses_per_piece(profile, monkeypatch, tmp_path):
    """With `auto` and the overlap, the interior runs what `auto` means for the interior's
    shape and the strips what it means for theirs (a GPU: `temporal` strips); a named kernel
    or whole slabs keep one configuration."""
    from oclsci.jacobi import distributed as mpi_jacobi
    from oclsci.jacobi import kernels
    from oclsci.jacobi.runner import queue_bands

    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "tuning.json"))
    monkeypatch.setattr(mpi_jacobi, "choose_fitting_config", kernels.choose_config)
    compute = described(profile)

    def choose(shape, ranks, kernel, overlap):
        job = object.__new__(mpi_jacobi.DistributedJacobi)
        job.compute, job.dtype, (job.m, job.n) = compute, np.dtype(np.float32), shape
        job.world = SimpleNamespace(size=ranks)
        return job._choose(kernel, overlap, None)

    interior, strips = choose((8192, 8192), 2, "auto", True)  # slabs of 2^25 cells
    assert interior.name == "temporal" and (strips or interior).name == "temporal"
    interior, strips = choose((16384, 16384), 2, "auto", True)  # slabs of 2^27 cells
    assert interior.name == "streaming" and strips.name == "temporal"
    for kernel, overlapped in (("auto", False), ("streaming", True)):
        config, strips = choose((32768, 16384), 2, kernel, overlapped)
        assert config.name == "streaming" and strips is None
    # Slabs of 40 rows: strips of a longer period would not fit, so one configuration.
    slab_config, _ = choose((120, 65536), 3, "auto", False)
    config, strips = choose((120, 65536), 3, "auto", True)
    assert strips is None and config == slab_config
    period = mpi.exchange_period(config.steps_per_launch)
    assert subslabs.sub_slabs(mpi.Decomposition.build(120, 65536, 3, period)) is not None
    # Interiors in bands of rows (JacobiPieces): two ranks' of 16384^2, not four ranks'.
    for ranks, bands in ((2, 4), (4, 1)):
        interior, _ = choose((16384, 16384), ranks, "auto", True)
        held = (16384 // ranks - 17 + 16, 16384)  # a rank at the end: one strip
        assert queue_bands(compute, interior, held, {}, exchanged=True) == bands


def test_overlap_switch():
    gpu, cpu = SimpleNamespace(is_gpu=True), SimpleNamespace(is_gpu=False)
    wants = subslabs.wants_overlap
    assert wants(gpu, {}) and wants(gpu, {"OCLSCI_MPI_OVERLAP": "auto"})
    assert not wants(cpu, {}) and wants(cpu, {"OCLSCI_MPI_OVERLAP": "1"})
    assert not subslabs.wants_overlap(gpu, {"OCLSCI_MPI_OVERLAP": "0"})
    with pytest.raises(mpi.InputError, match="OCLSCI_MPI_OVERLAP must be 0, 1 or auto"):
        subslabs.wants_overlap(gpu, {"OCLSCI_MPI_OVERLAP": "yes"})


def replay_slabs(d: mpi.Decomposition, rhs: np.ndarray, period: int, steps: int) -> np.ndarray:
    """The slab algorithm on decomposition ``d`` in NumPy: the owned rows after ``steps``."""
    n = rhs.shape[1]
    grids = []
    for slab in d.slabs:
        local = np.zeros((slab.local_m + 2, n + 2), np.float32)
        local[1:-1, 1:-1] = rhs[slab.lo:slab.hi]
        grids.append(local)

    def exchange():
        for source, dest, a, b in d.transfers():
            src, dst = d.slabs[source], d.slabs[dest]
            grids[dest][dst.local(a):dst.local(b)] = grids[source][src.local(a):src.local(b)]

    exchange()
    for step in range(1, steps + 1):
        for slab, grid in zip(d.slabs, grids, strict=True):
            new = grid.copy()
            jacobi_step(new, grid, rhs[slab.lo:slab.hi])
            grid[...] = new
        if step % period == 0 or step == steps:
            exchange()
    return np.concatenate([grid[slab.local(slab.first):slab.local(slab.stop), 1:-1]
                           for slab, grid in zip(d.slabs, grids, strict=True)])


@pytest.mark.parametrize("m,n,parts,period,steps", [(37, 6, 4, 8, 21), (29, 5, 3, 16, 50),
                                                     (12, 4, 4, 5, 17), (40, 3, 2, 1, 9)])
def test_slab_algorithm_in_numpy_is_exact(m, n, parts, period, steps):
    """Ghost rows, a stale fixed row and an exchange every `period` steps give exact rows."""
    rhs = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
    d = mpi.Decomposition.build(m, n, parts, period)
    assert np.array_equal(replay_slabs(d, rhs, period, steps), jacobi_numpy(rhs, steps))


@pytest.mark.parametrize("m,n,parts,period,steps", [(60, 6, 2, 8, 21), (90, 5, 3, 4, 50),
                                                     (250, 4, 4, 16, 37), (30, 3, 2, 1, 9)])
def test_sub_slab_algorithm_in_numpy_is_exact(m, n, parts, period, steps):
    """The same with the overlap's strips and interiors as slabs of their own."""
    rhs = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
    pieces, _ = subslabs.sub_slabs(mpi.Decomposition.build(m, n, parts, period))
    assert np.array_equal(replay_slabs(pieces, rhs, period, steps), jacobi_numpy(rhs, steps))


# ---------------------------------------------------------------------------------------------
# With MPI: `mpiexec -n P python -m oclsci ...` against one process


@pytest.fixture
def mpi_present():
    """mpi4py, an mpiexec and an OpenCL device (tool_missing: a skip, a failure in CI)."""
    reason = mpi_missing()
    if reason is not None:
        tool_missing(reason)


needs_mpi = pytest.mark.usefixtures("mpi_present")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mpi-inputs")
    rng = np.random.default_rng(6)
    paths = {}
    for shape in ((1021, 37), (37, 1021)):
        path = folder / f"rhs-{shape[0]}x{shape[1]}.npy"
        np.save(path, rng.standard_normal(shape) * 10)
        paths[shape] = path
    return paths


DEVICE = DEVICE_SPECS[0] if DEVICE_SPECS else None
ITERATIONS = 21  # not a multiple of any exchange period: ends between exchanges


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.parametrize("shape", [(1021, 37), (37, 1021)], ids=["1021x37", "37x1021"])
@pytest.mark.mpi
@needs_mpi
def test_bit_identical_for_p_1_to_4(inputs, tmp_path, kernel, shape):
    common = [inputs[shape], "-n", ITERATIONS, "--kernel", kernel, "--device", DEVICE, "-q"]
    assert_ok(run_oclsci(["jacobi", *common, "-o", tmp_path / "one.npy"]))
    reference = np.load(tmp_path / "one.npy")
    for ranks in (1, 2, 3, 4):
        out = tmp_path / f"p{ranks}.npy"
        assert_ok(run_oclsci(["jacobi", *common, "-o", out], ranks=ranks))
        assert np.array_equal(np.load(out), reference), f"P={ranks} differs ({kernel}, {shape})"


OVERLAP = {"OCLSCI_MPI_OVERLAP": "1"}


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.mpi
@needs_mpi
def test_overlapped_exchange_bit_identical(inputs, tmp_path, kernel):
    """Strips, interiors and the exchange behind the interior's steps: still exact."""
    common = [inputs[(1021, 37)], "-n", ITERATIONS, "--kernel", kernel, "--device", DEVICE]
    assert_ok(run_oclsci(["jacobi", *common, "-q", "-o", tmp_path / "one.npy"]))
    reference = np.load(tmp_path / "one.npy")
    for ranks in (2, 4):
        out = tmp_path / f"p{ranks}.npy"
        result = assert_ok(run_oclsci(["jacobi", *common, "-o", out], ranks=ranks,
                                      extra_env=OVERLAP))
        assert "exchanges overlapped with the interior's steps" in result.stdout
        assert re.search(r"a device waited [\d.]+ s for the exchanges after its own steps",
                         result.stdout)
        assert np.array_equal(np.load(out), reference), f"P={ranks} differs ({kernel})"


MIXED_SCRIPT = """
import sys, numpy as np
from oclsci import mpi
from oclsci.jacobi.distributed import DistributedJacobi
from oclsci.jacobi.solver import choose_fitting_config
from oclsci.runtime.device import create_context
world = mpi.mpi_world()
compute = create_context(sys.argv[1])
rhs = np.load(sys.argv[2])  # float64: sent to the ranks as the solver's float32
steps, out = int(sys.argv[3]), sys.argv[4]
strips = choose_fitting_config(compute, "temporal", np.float32, (9, rhs.shape[1]))
interior = choose_fitting_config(compute, "coalesced", np.float32, rhs.shape)
job = DistributedJacobi(world, compute, rhs.shape, rhs if world.is_root else None,
                            config=interior, strip_config=strips)
job.start(0)
job.run(steps)
x = job.gather()
if world.is_root:
    assert job.overlapped and "strips: temporal" in job.describe(), job.describe()
    assert job.period % strips.steps_per_launch == 0, job.period
    np.save(out, x)
"""


@pytest.mark.mpi
@needs_mpi
def test_overlapped_strips_may_run_another_kernel(inputs, tmp_path):
    """Strips on ``temporal``, the interior on ``coalesced`` (as ``auto`` runs ``temporal``
    strips beside a ``streaming`` interior on big GPU slabs): still equal to NumPy."""
    script = tmp_path / "mixed.py"
    script.write_text(MIXED_SCRIPT)
    want = jacobi_numpy(np.load(inputs[(1021, 37)]).astype(np.float32), ITERATIONS)
    for ranks in (2, 3):
        out = tmp_path / f"p{ranks}.npy"
        command = [*mpiexec_command(), "-n", str(ranks), sys.executable, str(script), DEVICE,
                   str(inputs[(1021, 37)]), str(ITERATIONS), str(out)]
        assert_ok(subprocess.run(command, env=launch_env(OVERLAP), capture_output=True,
                                 text=True, timeout=180, stdin=subprocess.DEVNULL))
        assert np.array_equal(np.load(out), want), f"P={ranks} differs"


@pytest.mark.mpi
@needs_mpi
def test_ranks_that_disagree_on_overlap_run_whole_slabs(inputs, tmp_path):
    """OCLSCI_MPI_OVERLAP=1 on one rank and 0 on the other: one choice for all (whole slabs),
    not a mixed run whose summary's collectives would wait for each other forever."""
    common = [inputs[(1021, 37)], "-n", ITERATIONS, "--kernel", "temporal", "--device", DEVICE]
    assert_ok(run_oclsci(["jacobi", *common, "-q", "-o", tmp_path / "one.npy"]))
    script = tmp_path / "per_rank.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
        os.environ["OCLSCI_MPI_OVERLAP"] = "1" if rank == 0 else "0"
        from oclsci.cli import main
        from oclsci.runtime.signals import install_exit_handlers
        install_exit_handlers()
        main(sys.argv[1:])
    """))
    command = [*mpiexec_command(), "-n", "2", sys.executable, str(script), "jacobi",
               *map(str, common), "-o", str(tmp_path / "two.npy")]
    result = assert_ok(subprocess.run(command, env=launch_env(), capture_output=True,
                                      text=True, timeout=180, stdin=subprocess.DEVNULL))
    assert "2 ranks" in result.stdout and "overlapped" not in result.stdout
    assert np.array_equal(np.load(tmp_path / "two.npy"), np.load(tmp_path / "one.npy"))


@pytest.mark.mpi
@needs_mpi
def test_overlapped_checkpoint_resume_and_tol(inputs, tmp_path):
    """Checkpoints and --tol read the sub-slabs' owned rows and residuals."""
    rhs = inputs[(1021, 37)]
    common = ["--kernel", "temporal", "--device", DEVICE, "-q"]
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 40, *common, "-o", tmp_path / "ref.npy"]))
    checkpoint = tmp_path / "run.npz"
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 23, *common, "--checkpoint", checkpoint,
                          "--checkpoint-every", 10], ranks=3, extra_env=OVERLAP))
    assert_ok(run_oclsci(["jacobi", "--resume", checkpoint, "-n", 40, *common,
                          "-o", tmp_path / "p2.npy"], ranks=2, extra_env=OVERLAP))
    assert np.array_equal(np.load(tmp_path / "p2.npy"), np.load(tmp_path / "ref.npy"))
    tol = [rhs, "-n", 3000, "--tol", "0.05", "--check-every", 40, *common[:-1]]
    one = assert_ok(run_oclsci(["jacobi", *tol, "-o", tmp_path / "one.npy"]))
    two = assert_ok(run_oclsci(["jacobi", *tol, "-o", tmp_path / "two.npy"], ranks=2,
                               extra_env=OVERLAP))
    assert_converged_alike(one, two)
    assert np.array_equal(np.load(tmp_path / "two.npy"), np.load(tmp_path / "one.npy"))


@pytest.mark.mpi
@needs_mpi
def test_ghosts_spanning_several_ranks(inputs, tmp_path):
    """An exchange period longer than a slab: ghost rows come from ranks further away."""
    common = [inputs[(37, 1021)], "-n", 30, "--kernel", "coalesced", "--device", DEVICE, "-q"]
    assert_ok(run_oclsci(["jacobi", *common, "-o", tmp_path / "one.npy"]))
    assert_ok(run_oclsci(["jacobi", *common, "-o", tmp_path / "p4.npy"], ranks=4,
               extra_env={"OCLSCI_MPI_EXCHANGE_EVERY": "13"}))
    assert np.array_equal(np.load(tmp_path / "p4.npy"), np.load(tmp_path / "one.npy"))


@pytest.mark.mpi
@needs_mpi
def test_checkpoint_and_resume_with_another_p(inputs, tmp_path):
    common = ["-n", 40, "--kernel", "blocked", "--device", DEVICE, "-q"]
    rhs = inputs[(1021, 37)]
    assert_ok(run_oclsci(["jacobi", rhs, *common, "-o", tmp_path / "ref.npy"]))
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 10, "--kernel", "blocked", "--device", DEVICE, "-q",
                "-o", tmp_path / "ref10.npy"]))
    # P=3 writes checkpoints at 10 and 20 (and at the end, 23), then stops.
    checkpoint = tmp_path / "run.npz"
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 23, "--kernel", "blocked", "--device", DEVICE, "-q",
                "--checkpoint", checkpoint, "--checkpoint-every", 10], ranks=3))
    with np.load(checkpoint) as state:
        assert int(state["iteration"]) == 23
    # Resume with P=2 and with one process: both end where the uninterrupted run ends.
    assert_ok(run_oclsci(["jacobi", "--resume", checkpoint, *common, "-o", tmp_path / "p2.npy"],
                         ranks=2))
    assert_ok(run_oclsci(["jacobi", "--resume", checkpoint, *common, "-o", tmp_path / "one.npy"]))
    reference = np.load(tmp_path / "ref.npy")
    assert np.array_equal(np.load(tmp_path / "p2.npy"), reference)
    assert np.array_equal(np.load(tmp_path / "one.npy"), reference)
    # A checkpoint written by one process resumes on 4 ranks.
    single = tmp_path / "single.npz"
    assert_ok(run_oclsci(["jacobi", rhs, "-n", 10, "--kernel", "blocked", "--device", DEVICE, "-q",
                "--checkpoint", single]))
    assert_ok(run_oclsci(["jacobi", "--resume", single, *common, "-o", tmp_path / "p4.npy"],
                         ranks=4))
    assert np.array_equal(np.load(tmp_path / "p4.npy"), reference)


@pytest.mark.mpi
@needs_mpi
def test_global_tol_and_summary_once(tmp_path):
    args = ["jacobi", "-n", 5000, "--tol", "0.2", "--check-every", 25, "--kernel", "coalesced",
            "--device", DEVICE]
    one = assert_ok(run_oclsci([*args, "-o", tmp_path / "one.npy"]))
    two = assert_ok(run_oclsci([*args, "-o", tmp_path / "two.npy"], ranks=2))

    def iterations(text: str) -> str:
        return next(line for line in text.splitlines() if line.startswith("iterations"))

    assert "converged" in iterations(one.stdout)
    assert iterations(one.stdout) == iterations(two.stdout)
    assert [line[:8] for line in two.stdout.splitlines()].count("residual") == 1
    assert "2 ranks" in two.stdout
    assert np.array_equal(np.load(tmp_path / "two.npy"), np.load(tmp_path / "one.npy"))
    # Where the exchange time went: each part's largest value on a rank; on each rank the parts
    # add up to its total, so their maxima add up to at least the largest total (to rounding).
    found = re.search(r"(\d+) exchanges, ([\d.]+) s at most on a rank \(device-to-host ([\d.]+), "
                      r"MPI ([\d.]+), host-to-device ([\d.]+), each the largest on a rank\)",
                      two.stdout)
    assert found, two.stdout
    total, *parts = (float(v) for v in found.groups()[1:])
    assert int(found[1]) > 0 and sum(parts) >= total - 3e-4


def _error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("oclsci: error")]


@pytest.mark.mpi
@needs_mpi
def test_bad_input_on_rank_0_ends_every_rank(tmp_path):
    started = time.monotonic()
    result = run_oclsci(["jacobi", tmp_path / "missing.npy", "-o", tmp_path / "out.npy",
                     "--device", DEVICE], ranks=3, timeout=60)
    assert result.returncode != 0
    lines = _error_lines(result)
    assert len(lines) == 1 and "no such file" in lines[0], result.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize("overlap", ["0", "1"], ids=["slabs", "overlapped"])
@pytest.mark.mpi
@needs_mpi
def test_setup_failure_on_one_rank_is_reported_once(inputs, tmp_path, overlap):
    result = run_oclsci(["jacobi", inputs[(1021, 37)], "-n", 10, "--device", DEVICE, "-q",
                         "-o", tmp_path / "out.npy"], ranks=3, failing=(2, "setup"),
                        timeout=60, extra_env={"OCLSCI_MPI_OVERLAP": overlap})
    assert result.returncode == 1
    lines = _error_lines(result)
    assert lines == ["oclsci: error: rank 2: RuntimeError: injected failure "
                     "(rank 2, setup)"], result.stderr


@pytest.mark.parametrize("overlap", ["0", "1"], ids=["slabs", "overlapped"])
@pytest.mark.mpi
@needs_mpi
def test_failure_during_the_run_aborts_every_rank(inputs, tmp_path, overlap):
    """Rank 1 fails at its exchange at step 16; the others would wait for it forever."""
    started = time.monotonic()
    result = run_oclsci(["jacobi", inputs[(1021, 37)], "-n", 10**7, "--kernel", "coalesced",
                         "--device", DEVICE, "-q", "-o", tmp_path / "out.npy"], ranks=3,
                        failing=(1, 16), timeout=90, extra_env={"OCLSCI_MPI_OVERLAP": overlap})
    elapsed = time.monotonic() - started
    assert result.returncode != 0
    lines = _error_lines(result)
    assert len(lines) == 1 and lines[0].startswith("oclsci: error: rank 1 of 3: RuntimeError"), \
        f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert elapsed < 60
    assert not (tmp_path / "out.npy").exists()


MANDELBROT_SCRIPT = """
import sys, numpy as np
from oclsci import mpi
from oclsci.jacobi.solver import KERNEL_NAMES
from oclsci.mandelbrot.renderer import mandelbrot
world = mpi.mpi_world()
device, per_rank, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def band(first, count):
    result = mandelbrot(301, 157, 120, rows=(first, count), device=device)
    return {"counts": result.counts, "smooth": result.smooth}
full, seconds = mpi.gather_bands(world, 157, band, bands_per_rank=per_rank)
if world.is_root:
    np.savez(out, **full)
"""


@pytest.mark.mpi
@needs_mpi
def test_mandelbrot_bands_gathered_bit_identical(tmp_path):
    pytest.importorskip("oclsci.mandelbrot")
    from oclsci.mandelbrot.renderer import mandelbrot

    script = tmp_path / "bands.py"
    script.write_text(MANDELBROT_SCRIPT)
    reference = mandelbrot(301, 157, 120, device=DEVICE)
    for ranks, per_rank in ((3, 1), (2, 3)):
        out = tmp_path / f"p{ranks}.npz"
        command = [*mpiexec_command(), "-n", str(ranks), sys.executable, str(script), DEVICE,
                   str(per_rank), str(out)]
        assert_ok(subprocess.run(command, env=launch_env({"OCLSCI_MPI": "1"}), capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL))
        with np.load(out) as full:
            assert np.array_equal(full["counts"], reference.counts)
            assert np.array_equal(full["smooth"], reference.smooth)


@pytest.mark.mpi
@needs_mpi
def test_mandelbrot_cli_rows_shared_out_and_gathered(tmp_path):
    pytest.importorskip("oclsci.cli.mandelbrot")
    args = ["mandelbrot", "--width", 301, "--height", 157, "--maxiter", 120, "--device", DEVICE,
            "-q"]
    assert_ok(run_oclsci([*args, "-o", tmp_path / "one.png", "--counts", tmp_path / "one.npy"]))
    for ranks, bands in ((3, "4"), (2, "1")):
        result = assert_ok(run_oclsci(
            [*args, "-o", tmp_path / "p.png", "--counts", tmp_path / "p.npy"],
            ranks=ranks, extra_env={"OCLSCI_MPI_BANDS": bands}))
        assert result.stdout == ""  # --quiet on every rank
        assert np.array_equal(np.load(tmp_path / "p.npy"), np.load(tmp_path / "one.npy"))
        assert (tmp_path / "p.png").read_bytes() == (tmp_path / "one.png").read_bytes()


@pytest.mark.mpi
@needs_mpi
def test_mandelbrot_cli_repeats_keep_the_last_image(tmp_path):
    """--repeat over ranks: the image of the last computation, timings of all (medians)."""
    pytest.importorskip("oclsci.cli.mandelbrot")
    args = ["mandelbrot", "--width", 211, "--height", 97, "--maxiter", 90, "--device", DEVICE,
            "--no-image"]
    assert_ok(run_oclsci([*args, "--counts", tmp_path / "one.npy", "-q"]))
    result = assert_ok(run_oclsci([*args, "--counts", tmp_path / "p.npy", "--repeat", 3],
                                  ranks=2))
    assert "(median of 3)" in result.stdout
    assert np.array_equal(np.load(tmp_path / "p.npy"), np.load(tmp_path / "one.npy"))
