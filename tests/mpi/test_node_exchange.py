"""Halo rows between ranks of one node through shared memory, between "nodes" through MPI
(``OCLSCI_MPI_NODE_RANKS`` cuts one machine into nodes): results bit-identical to one device,
with whole and overlapped slabs, checkpoints and a stop signal (oclsci/mpi/transport.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from conftest import DEVICE_SPECS, cli_command, tool_missing
from mpi_launch import assert_ok, launch_env, mpi_missing, mpiexec_command, run_oclsci
from signal_helpers import finish, wait_until_ranks_compute

from oclsci.errors import InputError
from oclsci.jacobi.reference import jacobi_numpy
from oclsci.mpi.transport import node_ranks_setting

DEVICE = DEVICE_SPECS[0] if DEVICE_SPECS else None
STEPS = 101  # 12 exchanges at a period of 8: both slots of every transfer reused, then a rest


@pytest.fixture
def rhs(tmp_path):
    if mpi_missing():
        tool_missing(mpi_missing())
    path = tmp_path / "rhs.npy"
    np.save(path, np.random.default_rng(34).standard_normal((203, 45)) * 10)
    return path


def test_node_ranks_setting():
    assert node_ranks_setting({}) is None
    assert node_ranks_setting({"OCLSCI_MPI_NODE_RANKS": " 2"}) == 2
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(InputError, match="OCLSCI_MPI_NODE_RANKS must be a positive integer"):
            node_ranks_setting({"OCLSCI_MPI_NODE_RANKS": bad})


# (ranks, OCLSCI_MPI_NODE_RANKS, what the summary says of the rows' route); "" = one node.
ROUTES = [
    (2, "", "rows through shared memory"),
    (2, "1", "rows through MPI"),
    (3, "2", "rows through shared memory on the node, through MPI between nodes"),
    (4, "2", "rows through shared memory on the node, through MPI between nodes"),
    (4, "", "rows through shared memory"),
]


@pytest.mark.mpi
@pytest.mark.parametrize("overlap", ["1", "0"], ids=["overlapped", "slabs"])
@pytest.mark.parametrize("ranks,node_ranks,route", ROUTES,
                         ids=[f"p{p}-node{n or 'all'}" for p, n, _ in ROUTES])
def test_bit_identical_through_shared_memory_and_mpi(rhs, tmp_path, ranks, node_ranks, route,
                                                     overlap):
    common = [rhs, "-n", STEPS, "--kernel", "coalesced", "--device", DEVICE]
    assert_ok(run_oclsci(["jacobi", *common, "-q", "-o", tmp_path / "one.npy"]))
    result = assert_ok(run_oclsci(
        ["jacobi", *common, "-o", tmp_path / "p.npy"], ranks=ranks,
        extra_env={"OCLSCI_MPI_NODE_RANKS": node_ranks, "OCLSCI_MPI_OVERLAP": overlap}))
    assert np.array_equal(np.load(tmp_path / "p.npy"), np.load(tmp_path / "one.npy"))
    # Rank 0's route: its neighbour is rank 1.
    rank0 = "rows through MPI" if node_ranks == "1" else "rows through shared memory"
    assert f"{rank0} on rank 0)" in result.stdout, result.stdout


@pytest.mark.mpi
def test_a_stop_on_split_nodes_checkpoints_and_resumes_bit_identical(rhs, tmp_path):
    """SIGTERM to one rank of a 3-rank run cut into two nodes: every rank stops at one step
    after the checkpoint (exit 75); resumed on 2 ranks of one node it ends where one device
    ends."""
    checkpoint = tmp_path / "run.npz"
    env = launch_env({"OCLSCI_MPI_NODE_RANKS": "2", "OCLSCI_MPI_OVERLAP": "1"})
    command = cli_command("jacobi", rhs, "-n", 10**9, "--kernel", "coalesced", "--device",
                          DEVICE, "--checkpoint", checkpoint, "-o", tmp_path / "never.npy",
                          launcher=[*mpiexec_command(), "-n", "3"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    pids = wait_until_ranks_compute(process, 3)
    os.kill(pids[-1], signal.SIGTERM)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert not (tmp_path / "never.npy").exists()
    with np.load(checkpoint) as state:
        stopped = int(state["iteration"])
    total = stopped + 37
    common = ["-n", total, "--kernel", "coalesced", "--device", DEVICE, "-q"]
    assert_ok(run_oclsci(["jacobi", rhs, *common, "-o", tmp_path / "one.npy"]))
    assert_ok(run_oclsci(["jacobi", "--resume", checkpoint, *common, "-o", tmp_path / "p2.npy"],
                         ranks=2, extra_env={"OCLSCI_MPI_OVERLAP": "1"}))
    assert np.array_equal(np.load(tmp_path / "p2.npy"), np.load(tmp_path / "one.npy"))


REPEATED_SOLVES = """
import sys, numpy as np
from oclsci import mpi
from oclsci.jacobi.distributed import DistributedJacobi
from oclsci.runtime.device import create_context
world = mpi.mpi_world()
compute = create_context(sys.argv[1])
rhs = np.load(sys.argv[2])
steps, out = int(sys.argv[3]), sys.argv[4]

def shared_mappings():  # MPI's shared windows are files of /dev/shm, mapped shared
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps
                   if line.split()[1].endswith("s") and "/dev/shm/" in line)

counts, results = [], []
for _ in range(4):
    job = DistributedJacobi(world, compute, rhs.shape, rhs if world.is_root else None,
                            kernel="coalesced")
    assert job.overlapped == (sys.argv[5] == "1"), job.describe()
    job.start(0)
    job.run(steps)
    results.append(job.gather())
    job.close()
    del job
    counts.append(shared_mappings())
assert counts[3] == counts[1], counts
if world.is_root:
    assert all(np.array_equal(x, results[0]) for x in results), "solves differ"
    np.save(out, results[0])
"""


@pytest.mark.mpi
@pytest.mark.parametrize("overlap", ["1", "0"], ids=["overlapped", "slabs"])
def test_closed_solves_leave_no_shared_memory_behind(rhs, tmp_path, overlap):
    """A script's solves, each closed (DistributedJacobi.close): the node's shared memory
    mapped by the exchanges stays the same from solve to solve (without close, MPI keeps each
    solve's window until it finalises), and every solve equals one device."""
    script = tmp_path / "solves.py"
    script.write_text(REPEATED_SOLVES)
    out = tmp_path / "p2.npy"
    command = [*mpiexec_command(), "-n", "2", sys.executable, str(script), DEVICE, str(rhs),
               "40", str(out), overlap]
    assert_ok(subprocess.run(command, env=launch_env({"OCLSCI_MPI_OVERLAP": overlap}),
                             capture_output=True, text=True, timeout=180,
                             stdin=subprocess.DEVNULL))
    want = jacobi_numpy(np.load(rhs).astype(np.float32), 40)
    assert np.array_equal(np.load(out), want)


TRANSPORTS = """
import sys, numpy as np
from oclsci import mpi
from oclsci.mpi.transport import RowTransport
from oclsci.runtime.device import create_context
world = mpi.mpi_world()
compute = create_context(sys.argv[1])
other = 1 - world.rank
for i in range(int(sys.argv[2])):
    transport = RowTransport(world, compute, [(other, 2)], [(other, 2)], 8, np.float32)
    transport.begin()
    transport.outbox(0)[...] = i
    transport.send()
    transport.wait_receives()
    assert (transport.inbox(0) == i).all(), (i, transport.inbox(0))
    transport.close()
    assert transport.closed and transport.describe().startswith("rows through")
"""


@pytest.mark.mpi
@pytest.mark.parametrize("node_ranks", ["", "2"], ids=["node", "cut"])
def test_more_transports_than_mpi_has_communicators(rhs, tmp_path, node_ranks):
    """2100 transports made, used and closed in turn (MPICH has 2048 communicator ids): each
    close frees its node communicator (and the cut's split frees the whole node's)."""
    script = tmp_path / "transports.py"
    script.write_text(TRANSPORTS)
    command = [*mpiexec_command(), "-n", "2", sys.executable, str(script), DEVICE, "2100"]
    assert_ok(subprocess.run(command, env=launch_env({"OCLSCI_MPI_NODE_RANKS": node_ranks}),
                             capture_output=True, text=True, timeout=300,
                             stdin=subprocess.DEVNULL))
