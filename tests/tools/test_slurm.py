"""The batch scripts of slurm/, run for real by a two-node Slurm started on this host.

A session fixture starts munged, slurmctld and two slurmd (tests/slurm_cluster.py), nodes
enbata01 and enbata02 with ``Features=enbata`` and two fake GRES GPUs each, so that the
site's PlaFRIM defaults (slurm/site.env: ``-C enbata``, two GPUs per node), which
``slurm/submit`` turns into sbatch options, apply unchanged. Jobs run on the CPU through PoCL,
in the Python environment of the tests (its bin directory first on PATH, OCLSCI_USE_GUIX=no),
one PoCL thread per process. Every result is compared bit for bit with a direct run of
``oclsci jacobi``. MPI runs use MPICH (``srun --mpi=pmi2``) and Open MPI 5 and 4.1
(``srun --mpi=pmix``; tests/open_mpi.py).

Nothing here depends on how fast the machine is: runs have fixed sizes; a run to be
interrupted is stopped (SIGSTOP) as soon as its processes exist and then advances only in
short slices that the test grants until its first periodic checkpoint exists, so its end
cannot come unseen; the time limit is then set from the time the job has run (``scontrol
update``: inside the warning window, or reached) or the signal sent with ``scancel --signal``,
and the run is let go (SIGCONT) once Slurm's signal is pending; once warned, a job gets its
time back, so that its checkpoint and resubmission never race the limit (and ``KillWait`` is
2 minutes for those that do: SIGTERM at the limit); a chain of resubmissions is followed to its
end, whatever its length. Timeouts only bound how long a broken run takes to fail.

Needs root and Debian's ``slurm-wlm`` and ``munge`` packages; skips with the reason otherwise.
Set OCLSCI_REQUIRE_SLURM=1 (CI) to fail instead of skipping when Slurm cannot start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT, run_cli, tool_missing
from open_mpi import OpenMpiUnavailable, debian_open_mpi, library_version, open_mpi_wheel
from slurm_cluster import FINAL_STATES, SlurmCluster, SlurmUnavailable

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = REPO_ROOT
SLURM = ROOT / "slurm"
# One PoCL thread per process: jobs, ranks and reference runs then do not slow each other
# down on a small CI machine, and the device (hence the kernel chosen by --kernel auto) is the
# same for every run.
POCL_ONE_THREAD = {"POCL_MAX_PTHREAD_COUNT": "1", "POCL_CPU_MAX_CU_NUM": "1"}


def _unavailable(what: str, error: Exception):
    """Fail under OCLSCI_REQUIRE_SLURM=1 (CI), else skip, with the reason."""
    if os.environ.get("OCLSCI_REQUIRE_SLURM") == "1":
        pytest.fail(f"{what} (OCLSCI_REQUIRE_SLURM=1): {error}")
    pytest.skip(f"{what}: {error}")


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A running two-node Slurm; stopped (daemons killed) at the end of the session."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except SlurmUnavailable as error:
        _unavailable("no local Slurm", error)
    yield cluster
    cluster.stop()


#: How each MPI runs under srun: ``srun --mpi=`` and the variables that select its library.
MPI_LAUNCHES = {
    "mpich-pmi2": "pmi2",
    "openmpi5-pmix": "pmix",
    "openmpi4-debian-pmix": "pmix",
}


@pytest.fixture(scope="session")
def mpi_libraries():
    """Per MPI_LAUNCHES key: the variables that make mpi4py load that MPI, and its version."""
    found: dict[str, tuple[dict, str] | Exception] = {"mpich-pmi2": ({}, "MPICH (mpich wheel)")}
    locators = {"openmpi5-pmix": open_mpi_wheel, "openmpi4-debian-pmix": debian_open_mpi}
    for key, locate in locators.items():
        try:
            library = locate()
            env = {"MPI4PY_LIBMPI": str(library)}
            if key == "openmpi4-debian-pmix":
                # The two test nodes share one host: Open MPI 4.1's shared-memory transport
                # names its segments after the host and the node-local rank, so local rank 0 of
                # each node would map the same file (a segfault). TCP between all ranks instead.
                env["OMPI_MCA_btl"] = "self,tcp"
            found[key] = (env, library_version(library))
        except OpenMpiUnavailable as error:
            found[key] = error
    return found


@pytest.fixture
def job_env(slurm):
    """The environment given to sbatch (and so to the jobs, --export=ALL)."""
    env = slurm.env
    # No OCLSCI_* from outside (the scripts must find the repository by themselves, ...).
    for key in [k for k in env if k.startswith(("OCLSCI_", "MPI4PY_", "OMPI_"))
                and k != "OCLSCI_REQUIRE_SLURM"]:
        del env[key]
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["OCLSCI_USE_GUIX"] = "no"
    env.update(POCL_ONE_THREAD)
    return env


def write_input(path: Path, shape=(64, 48), seed=7) -> Path:
    rng = np.random.default_rng(seed)
    np.save(path, rng.standard_normal(shape).astype(np.float32))
    return path


def reference(tmp: Path, env: dict, inp: Path, iterations: int, *args: str, name="ref.npy"
              ) -> np.ndarray:
    r = run_cli("jacobi", str(inp), "--iterations", str(iterations), *args, "-o", str(tmp / name),
                "--quiet", env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr
    return np.load(tmp / name)


def submit(slurm: SlurmCluster, script: str, env: dict, tmp: Path, *sbatch_args: str,
           **params) -> int:
    """`slurm/submit SBATCH_ARGS slurm/SCRIPT` (the site's values of slurm/site.env, then
    sbatch) from tmp, with OCLSCI_<KEY>=value for each keyword parameter; the job id."""
    env = dict(env)
    env.update({f"OCLSCI_{k.upper()}": str(v) for k, v in params.items()})
    r = slurm.run([str(SLURM / "submit"), "--parsable", *sbatch_args, str(SLURM / script)],
                  env=env, cwd=tmp)
    return int(r.stdout.strip().split(";")[0])


def finished(slurm: SlurmCluster, jobid: int, log: Path, timeout: float = 600) -> dict:
    """Wait for the job; assert it completed with exit code 0; return its scontrol fields."""
    info = slurm.wait(jobid, timeout)
    text = log.read_text() if log.exists() else "(no log)"
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", (
        f"job {jobid}: {info.get('JobState')} exit {info.get('ExitCode')}\n{text}")
    return info


def assert_reported(text: str) -> None:
    """The script printed what it ran: node, versions, devices, the command."""
    assert re.search(r"node \S+: Python 3\.\d+", text), text
    assert "oclsci, version" in text, text
    assert "Portable Computing Language" in text, text  # `oclsci devices` (PoCL here)
    assert "run: " in text and "oclsci jacobi" in text, text


def _mpi_missing() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py/MPI support is missing: mpi4py is not installed (pip install 'oclsci[mpi]')"
    if importlib.util.find_spec("oclsci.mpi") is None:
        return "mpi4py/MPI support is missing: oclsci has no oclsci.mpi module yet"
    return None


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(what)


def _follow_chain(slurm: SlurmCluster, first: int, log: Path, most: int = 12,
                  seen: dict | None = None) -> list[int]:
    """Follow a job and the continuations it submits ("resubmitted as job N" in the shared log)
    to the end of the chain, whatever its length; return their ids, oldest first.

    Each continuation's `scontrol show job` fields, as submitted, go to ``seen[id]``; then its
    time limit is raised to 30 minutes, so that it runs to the end whatever the speed of this
    machine. A link ends COMPLETED (it resubmitted on the warning signal) or TIMEOUT (on
    SIGTERM at the limit); the last one COMPLETED with exit code 0 and "done"."""
    chain = [first]
    deadline = time.monotonic() + 600 * most
    while True:
        text = log.read_text() if log.exists() else "(no log)"
        for new in [int(i) for i in re.findall(r"resubmitted as job (\d+)", text)][len(chain) - 1:]:
            assert len(chain) <= most, f"more than {most} continuations:\n{text}"
            chain.append(new)
            if seen is not None:
                seen[new] = slurm.job(new)
            # Raised at once, while the continuation waits for its predecessor to end.
            slurm.run(["scontrol", "update", f"JobId={new}", "TimeLimit=30"], check=False)
        info = slurm.job(chain[-1])
        if info.get("JobState") in FINAL_STATES:
            text = log.read_text() if log.exists() else "(no log)"
            if len(re.findall(r"resubmitted as job (\d+)", text)) < len(chain):
                break  # the last link ended without resubmitting
        assert time.monotonic() < deadline, f"chain {chain} did not end:\n{text}"
        time.sleep(0.2)
    for job in chain[:-1]:
        info = slurm.wait(job, timeout=600)
        assert info["JobState"] in ("COMPLETED", "TIMEOUT"), f"job {job}: {info}\n{text}"
    info = slurm.job(chain[-1])
    assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", (
        f"job {chain[-1]}: {info.get('JobState')} exit {info.get('ExitCode')}\n{text}")
    assert "done: " in log.read_text().rsplit("[oclsci", 1)[-1], log.read_text()
    return chain


def _pids_of_run(output: Path) -> list[int]:
    """The `oclsci jacobi ... -o OUTPUT` processes (every rank of an MPI run)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        # `python -m oclsci jacobi ...`, not srun nor the guix stand-in that start it.
        if proc.name.isdigit() and str(output) in argv and "time-machine" not in argv and \
                argv[1:4] == ["-m", "oclsci", "jacobi"]:
            pids.append(int(proc.name))
    return pids


def _signals(pid: int, field: str) -> int:
    try:
        status = (Path("/proc") / str(pid) / "status").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{field}:\s*([0-9a-f]+)$", status, re.M)
    return int(found.group(1), 16) if found else 0


def _pending(pid: int, sig: int) -> bool:
    return bool((_signals(pid, "SigPnd") | _signals(pid, "ShdPnd")) >> (sig - 1) & 1)


def _stop(pids: list[int]) -> list[int]:
    """SIGSTOP the processes and wait until each is stopped (or gone); return those alive."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 600
    while not all(_alive_stopped(pid) or not _running(pid) for pid in pids):
        assert time.monotonic() < deadline, f"{pids} did not stop"
        time.sleep(0.005)
    return [pid for pid in pids if _running(pid)]


def _continue(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _running(pid: int) -> bool:
    """Whether pid exists and is not a zombie."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


#: How long the test lets a frozen run advance between two looks at its checkpoint.
SLICE_S = 0.05


def _freeze_after_first_checkpoint(slurm: SlurmCluster, jobid: int, output: Path, ranks: int,
                                   log: Path) -> list[int]:
    """Stop (SIGSTOP) the `ranks` processes of the run as soon as they exist, then let them
    advance in slices of SLICE_S seconds (SIGCONT, SIGSTOP) until the run's first periodic
    checkpoint exists (oclsci computes and owns its signal handlers then); return their pids,
    stopped. The run cannot end unseen: it only advances while the test lets it."""
    ckpt = output.with_name(output.stem + ".ckpt.npz")
    found: set[int] = set()

    def started():
        pids = _pids_of_run(output)
        for pid in set(pids) - found:  # freeze each rank at first sight
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        found.update(pids)
        if len(found) >= ranks:
            return sorted(found)
        state = slurm.job(jobid).get("JobState", "")
        assert state in ("PENDING", "RUNNING", "CONFIGURING"), (
            f"job {jobid} {state} before its ranks started:\n"
            + (log.read_text() if log.exists() else "(no log)"))
        return None

    pids = _wait_for(started, 600, f"job {jobid}: no {ranks} process(es) writing {output}")
    assert len(pids) == ranks, pids
    deadline = time.monotonic() + 900
    while True:
        alive = _stop(pids)
        if ckpt.exists() and len(alive) == ranks:
            return pids
        assert len(alive) == ranks, (
            f"job {jobid}: a rank ended before the first checkpoint:\n"
            + (log.read_text() if log.exists() else "(no log)"))
        assert time.monotonic() < deadline, f"job {jobid}: no checkpoint of {output}"
        _continue(pids)
        time.sleep(SLICE_S)


def _release_once_signalled(pids: list[int], sig: int, timeout: float = 600,
                            then=None) -> None:
    """Wait until Slurm's `sig` has reached every stopped process (pending there, or taken:
    Slurm continues a step's processes when it signals them), call `then()` if given, then
    continue them (SIGCONT)."""
    def signalled():
        return all(_pending(pid, sig) or not _alive_stopped(pid) for pid in pids)

    try:
        _wait_for(signalled, timeout, f"signal {sig} never reached {pids}")
        if then is not None:
            then()
    finally:
        _continue(pids)


def _batch_shell(jobid: int) -> int | None:
    """The pid of the job's batch shell (`bash .../job<ID>/slurm_script`), if it runs."""
    script = re.compile(rf"/job0*{jobid}/slurm_script$")  # some versions zero-pad the id
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if proc.name.isdigit() and any(script.search(a) for a in argv):
            return int(proc.name)
    return None


@contextlib.contextmanager
def _batch_shell_held(jobid: int):
    """Stop the job's batch shell (SIGSTOP) for the block: whatever its step does meanwhile,
    the script's next command (the resubmission, which copies the time limit) waits for the
    block's end. Needed because Slurm continues a signalled step itself, so that the step may
    end before the test has changed the job."""
    pid = _wait_for(lambda: _batch_shell(jobid), 60, f"job {jobid}: no batch shell")
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _run_time_s(slurm: SlurmCluster, jobid: int) -> int:
    """How long the job has run (`scontrol show job`: RunTime=[D-]HH:MM:SS), in seconds."""
    days, _, clock = slurm.job(jobid)["RunTime"].rpartition("-")
    h, m, s = (int(x) for x in clock.split(":"))
    return ((int(days or 0) * 24 + h) * 60 + m) * 60 + s


def _limit_in_warning_window(slurm: SlurmCluster, jobid: int) -> int:
    """Set the job's time limit so that between 60 and 120 s are left, whatever it has run so
    far: inside the scripts' warning window (--signal=USR1@120), so that Slurm warns at its
    next check, and not yet reached. Returns the limit in minutes."""
    minutes = _run_time_s(slurm, jobid) // 60 + 2
    slurm.run(["scontrol", "update", f"JobId={jobid}", f"TimeLimit={minutes}"])
    return minutes


def _give_time_back(slurm: SlurmCluster, jobid: int, minutes: int) -> None:
    """Raise a warned job's time limit (Slurm sends the warning once), by a few minutes only:
    enough for the checkpoint and the resubmission on a loaded machine, and a bound on the
    wait should a step hang instead of ending."""
    slurm.run(["scontrol", "update", f"JobId={jobid}", f"TimeLimit={minutes}"])


#: Minutes added to a warned job's time limit (_give_time_back).
GRACE_MIN = 5


def _hhmmss(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def _alive_stopped(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("T", "t")


# Fixed sizes (never from a speed measurement): a run to be interrupted takes about 10 s on one
# PoCL thread here and checkpoints every tenth of it; it is held at its first checkpoint
# (_freeze_after_first_checkpoint), so that any length works on any machine.
LONG_RUN = ("--kernel", "coalesced")
LONG_SHAPE, LONG_ITERATIONS = (128, 96), 200_000
CHECKPOINT_EVERY = LONG_ITERATIONS // 10


def test_jacobi_sbatch_matches_direct_run(slurm, job_env, tmp_path):
    """`sbatch slurm/jacobi.sbatch` with its defaults writes the same result as a direct run."""
    inp = write_input(tmp_path / "in.npy")
    iterations = 3000
    ref = reference(tmp_path, job_env, inp, iterations)
    jobid = submit(slurm, "jacobi.sbatch", job_env, tmp_path, input="in.npy",
                   iterations=iterations)
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    info = finished(slurm, jobid, log)
    assert info["Features"] == "enbata"  # the site's constraint (slurm/site.env)
    out = np.load(tmp_path / f"oclsci-jacobi-{jobid}.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    text = log.read_text()
    assert_reported(text)
    assert not (tmp_path / f"oclsci-jacobi-{jobid}.ckpt.npz").exists()  # removed once done


def _held(slurm, job_env, tmp_path, script, *sbatch_args, **site) -> dict[str, str]:
    """`slurm/submit --hold ARGS slurm/SCRIPT` with OCLSCI_<KEY>=value from `site`: the held
    job's `scontrol show job` fields (the job is then cancelled)."""
    env = dict(job_env, **{f"OCLSCI_{k.upper()}": str(v) for k, v in site.items()})
    r = slurm.run([str(SLURM / "submit"), "--parsable", "--hold", *sbatch_args,
                   str(SLURM / script)], env=env, cwd=tmp_path)
    jobid = int(r.stdout.strip().split(";")[0])
    try:
        return slurm.job(jobid)
    finally:
        slurm.run(["scancel", str(jobid)], check=False)


def test_site_settings_and_their_overrides(slurm, job_env, tmp_path):
    """slurm/site.env holds the site's values (PlaFRIM: -C enbata, 2 GPUs per node, the default
    partition and account); the environment overrides them for one submission; an sbatch
    option given to slurm/submit overrides both; a bad value is a one-line error, exit 2."""
    default = _held(slurm, job_env, tmp_path, "jacobi.sbatch")
    assert (default["Features"], default["Partition"], default["Account"]) == (
        "enbata", slurm.partition, "(null)")
    assert default["TresPerNode"].endswith("gpu:1") and default["CPUs/Task"] == "4"
    mpi = _held(slurm, job_env, tmp_path, "jacobi-mpi.sbatch", "--nodes=2")
    assert (mpi["NumTasks"], mpi["Features"]) == ("4", "enbata")
    assert mpi["TresPerNode"].endswith("gpu:2")

    site = {"constraint": "", "partition": slurm.other_partition, "account": "oclsci-team",
            "gpus_per_node": 1}
    other = _held(slurm, job_env, tmp_path, "jacobi-mpi.sbatch", "--nodes=2", **site)
    assert (other["Features"], other["Partition"], other["Account"], other["NumTasks"]) == (
        "(null)", slurm.other_partition, "oclsci-team", "2")  # no constraint
    assert other["TresPerNode"].endswith("gpu:1")
    cpu_only = _held(slurm, job_env, tmp_path, "jacobi.sbatch", gpus_per_node=0)
    assert cpu_only["TresPerNode"].endswith("gpu:0")  # no GPU asked for

    # Options on the command line win over the environment and site.env.
    mine = _held(slurm, job_env, tmp_path, "jacobi-mpi.sbatch", "-C", "enbata",
                 f"--partition={slurm.partition}", "--ntasks-per-node=1", "--gpus-per-node=1",
                 **site)
    assert (mine["Features"], mine["Partition"], mine["NumTasks"]) == (
        "enbata", slurm.partition, "1")
    assert mine["TresPerNode"].endswith("gpu:1")

    r = slurm.run([str(SLURM / "submit"), str(SLURM / "jacobi.sbatch")], check=False,
                  env=dict(job_env, OCLSCI_GPUS_PER_NODE="two"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip() == (
        "slurm/submit: OCLSCI_GPUS_PER_NODE=two: expected a number"), r.stderr


MPI_MISSING = _mpi_missing()


@pytest.fixture
def mpi_present():
    """mpi4py and an MPI library for the jobs (tool_missing: a skip, a failure in CI)."""
    if MPI_MISSING is not None:
        tool_missing(str(MPI_MISSING))


BANNER = re.compile(r"oclsci: rank (\d+): device .*chosen by first device; no OpenCL GPU for "
                    r"node-local rank (\d+) on (\S+): GPU (\d+) of (\d+) "
                    r"\((\w+)=([\d,]+): GPU (\d+)\)(, shared)?\)")


def _bindings(text: str) -> dict[int, dict]:
    """Each rank's GPU binding, from the banners of an MPI run (rank -> fields)."""
    return {int(m[1]): {"local": int(m[2]), "node": m[3], "slot": int(m[4]), "count": int(m[5]),
                        "variable": m[6], "visible": m[7], "gpu": m[8], "shared": bool(m[9])}
            for m in BANNER.finditer(text)}


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("mpi", ["mpich-pmi2", "openmpi5-pmix"])
def test_jacobi_mpi_finds_the_plugin_when_mpidefault_is_none(slurm, job_env, mpi_libraries,
                                                           tmp_path, mpi):
    """The test cluster's MpiDefault is none: without OCLSCI_SRUN_MPI, jacobi-mpi.sbatch
    picks the plug-in of the environment's MPI (MPICH: pmi2, Open MPI: pmix) from `srun
    --mpi=list`, says so, and its ranks form one world (the docs' command as written)."""
    library = mpi_libraries[mpi]
    if isinstance(library, Exception):
        _unavailable(f"{mpi} unavailable", library)
    mpi_env, _version = library
    job_env = {k: v for k, v in dict(job_env, **mpi_env).items() if k != "OCLSCI_SRUN_MPI"}
    inp = write_input(tmp_path / "in.npy", shape=(40, 30))
    ref = reference(tmp_path, job_env, inp, 300)
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--nodes=2",
                   "--ntasks-per-node=1", input="in.npy", iterations=300, output="mpi.npy")
    log = tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"
    finished(slurm, jobid, log)
    text = log.read_text()
    plugin = MPI_LAUNCHES[mpi]
    assert f"srun --mpi={plugin}: Slurm's MpiDefault is none" in text, text
    assert re.search(rf"run: srun .*--mpi={plugin} .*task\.sh oclsci jacobi", text), text
    assert sorted(_bindings(text)) == [0, 1], text  # one world of two ranks
    assert np.array_equal(np.load(tmp_path / "mpi.npy"), ref)


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("mpi", list(MPI_LAUNCHES))
@pytest.mark.parametrize("per_node", [1, 2])
def test_jacobi_mpi_two_nodes_matches_one_process(slurm, job_env, mpi_libraries, tmp_path,
                                                  per_node, mpi):
    """`slurm/submit -N 2 --ntasks-per-node=K slurm/jacobi-mpi.sbatch` equals a one-process
    run bit for bit, with MPICH (srun --mpi=pmi2) and with Open MPI 5 and Open MPI 4.1 (srun
    --mpi=pmix, Slurm's PMIx plugin); each rank took its own GPU of the ones Slurm gave its
    node (fake GRES GPUs: the ranks compute on PoCL, and report the binding); Slurm's record
    of the finished job (jobcomp) shows two nodes, COMPLETED, exit code 0."""
    library = mpi_libraries[mpi]
    if isinstance(library, Exception):
        _unavailable(f"{mpi} unavailable", library)
    mpi_env, _version = library
    job_env = dict(job_env, **mpi_env)
    inp = write_input(tmp_path / "in.npy", shape=(70, 52))
    iterations = 2500
    ref = reference(tmp_path, job_env, inp, iterations)
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--nodes=2",
                   f"--ntasks-per-node={per_node}", input="in.npy", iterations=iterations,
                   output="mpi.npy", srun_mpi=MPI_LAUNCHES[mpi])
    log = tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"
    info = finished(slurm, jobid, log)
    assert info["NumNodes"] == "2" and info["NumTasks"] == str(2 * per_node)
    assert info["TresPerNode"].endswith("gpu:2")  # the site's GPUs per node (slurm/site.env)
    record = _wait_for(lambda: slurm.completion(jobid), 600, f"no jobcomp record of {jobid}")
    assert (record["NodeCnt"], record["NodeList"], record["JobState"], record["ExitCode"]) == (
        "2", "enbata[01-02]", "COMPLETED", "0:0"), record
    out = np.load(tmp_path / "mpi.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    text = log.read_text()
    assert_reported(text)
    assert re.search(rf"run: srun .*--mpi={MPI_LAUNCHES[mpi]} .*task\.sh oclsci jacobi", text), text
    bindings = _bindings(text)  # one rank 0..N-1 each: all joined one MPI world
    assert sorted(bindings) == list(range(2 * per_node)), text
    by_node: dict[str, list[dict]] = {}
    for rank in sorted(bindings):
        by_node.setdefault(bindings[rank]["node"], []).append(bindings[rank])
    assert sorted(by_node) == slurm.nodes
    for ranks in by_node.values():
        assert [b["local"] for b in ranks] == list(range(per_node))
        assert [b["slot"] for b in ranks] == [b["local"] for b in ranks]  # one GPU each
        assert all(b["count"] == 2 and b["visible"] == "0,1" and not b["shared"]
                   for b in ranks)
        assert all(b["variable"] == "ROCR_VISIBLE_DEVICES" for b in ranks)


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_salloc_then_srun_as_the_interactive_recipe(slurm, job_env, tmp_path):
    """docs/slurm.md's interactive recipe: `salloc` holds two nodes (one task and the site's
    GPUs each) and runs the commands a user would type, from a file (typed into a pipe,
    the first `srun` would read the rest as its standard input): `srun oclsci devices`,
    then `srun --mpi=pmi2 oclsci jacobi` over both nodes, whose result equals a one-process
    run bit for bit; the allocation is given back at the end."""
    inp = write_input(tmp_path / "rhs.npy", shape=(90, 40))
    iterations = 1500
    ref = reference(tmp_path, job_env, inp, iterations)
    (tmp_path / "session.sh").write_text(
        "srun oclsci devices\n"
        f"srun --mpi=pmi2 oclsci jacobi rhs.npy --iterations {iterations} -o x.npy\n")
    r = subprocess.run(["salloc", "-N", "2", "-C", "enbata", "--ntasks-per-node=1",
                        "--gpus-per-node=2", "--time=0:10:0", "bash", "-e", "session.sh"],
                       env=job_env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Granted job allocation" in r.stderr and "Relinquishing job allocation" in \
        r.stderr, r.stderr
    assert r.stdout.count("Portable Computing Language") >= 2, r.stdout  # devices, per node
    assert "2 ranks" in r.stdout, r.stdout  # the jacobi summary: one MPI world of two
    out = np.load(tmp_path / "x.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)


def guide_blocks(path: Path) -> list[str]:
    """The shell blocks of a guide marked "(tested)", in order."""
    return re.findall(r"^\(tested\)[^\n]*\n```sh\n(.*?)^```", path.read_text(), re.M | re.S)


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_the_cluster_guide_runs_as_written(slurm, job_env, tmp_path):
    """docs/cluster.md's tested blocks, in order, in one folder of runs, with the repository
    at $OCLSCI as step 2 sets it: a block that starts with `salloc` runs its other lines
    (up to `exit`) inside that allocation, as a user types them; the others run in bash.
    Each block must succeed; the checks of its output are the guide's own."""
    blocks = guide_blocks(REPO_ROOT / "docs" / "cluster.md")
    assert len(blocks) == 5, blocks
    env = dict(job_env, OCLSCI=str(REPO_ROOT))
    outputs = []
    for block in blocks:
        lines = block.strip().splitlines()
        if lines[0].startswith("salloc "):
            typed = [line for line in lines[1:] if line.strip() != "exit"]
            (tmp_path / "typed.sh").write_text("\n".join(typed) + "\n")
            argv = [*lines[0].split(), "bash", "-e", "typed.sh"]
        else:
            argv = ["bash", "-e", "-c", block]
        r = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=900, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"{block}\n{r.stdout}\n{r.stderr}"
        outputs.append(r.stdout)
    devices_and_selftest, _, watch, result, mpi = outputs
    assert "Portable Computing Language" in devices_and_selftest
    assert re.search(r"^selftest PASS: (\d+) of \1 checks passed", devices_and_selftest,
                     re.M), devices_and_selftest
    assert "oclsci jacobi" in watch and "iterations  2000" in watch, watch
    assert result.startswith("(512, 512) float32 "), result
    assert mpi.strip().splitlines()[-1] == "True", mpi
    x = np.load(tmp_path / "x.npy")
    ref = reference(tmp_path, job_env, tmp_path / "rhs.npy", 2000)
    assert np.array_equal(x, ref)


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_more_ranks_than_gpus_on_a_node(slurm, job_env, tmp_path):
    """Two ranks on a node with one GPU: a one-line error and exit code 1, no output; with
    OCLSCI_SHARE_GPUS=1 they share the GPU and the result is the one-process result."""
    inp = write_input(tmp_path / "in.npy", shape=(40, 30))
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--gpus-per-node=1",
                   input="in.npy", iterations=200, output="no.npy", srun_mpi="pmi2")
    log = tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"
    info = slurm.wait(jobid, 600)
    text = log.read_text()
    assert info["JobState"] == "FAILED" and info["ExitCode"] == "1:0", text
    errors = [line for line in text.splitlines() if "ranks on node" in line]
    assert errors and all(re.search(
        r"error: .*2 ranks on node enbata0[12] but 1 GPU\(s\) for them "
        r"\(ROCR_VISIBLE_DEVICES=0\): ask Slurm for one GPU per rank .* or set "
        r"OCLSCI_SHARE_GPUS=1 to share GPUs$", line) for line in errors), text
    assert "Traceback" not in text and not (tmp_path / "no.npy").exists()

    ref = reference(tmp_path, job_env, inp, 200)
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--gpus-per-node=1",
                   input="in.npy", iterations=200, output="shared.npy", srun_mpi="pmi2",
                   share_gpus=1)
    log = tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"
    finished(slurm, jobid, log)
    assert np.array_equal(np.load(tmp_path / "shared.npy"), ref)
    bindings = _bindings(log.read_text())
    assert [(b["slot"], b["shared"]) for b in bindings.values()] == [(0, True), (0, True)]


def test_time_limit_checkpoint_and_resubmission(slurm, job_env, tmp_path):
    """A job near its time limit checkpoints on Slurm's warning signal (--signal=USR1@120
    in the script), submits itself again with the same resources (the site's, from
    slurm/submit), and the chained job resumes and ends with the result of an uninterrupted
    run. Submitted with --export=VARS only (as --export=NONE), from a folder and with a job
    name that have spaces."""
    work = tmp_path / "run dir"
    work.mkdir()
    inp = write_input(work / "in.npy", shape=LONG_SHAPE)
    exports = {"OCLSCI_INPUT": "in.npy", "OCLSCI_ITERATIONS": LONG_ITERATIONS,
               "OCLSCI_OUTPUT": "out.npy", "OCLSCI_CHECKPOINT_EVERY": CHECKPOINT_EVERY,
               "OCLSCI_ARGS": " ".join(LONG_RUN), "OCLSCI_USE_GUIX": "no",
               "OCLSCI_PYTHON": sys.executable, **POCL_ONE_THREAD}
    name = "oclsci time limit"
    jobid = submit(slurm, "jacobi.sbatch", job_env, work, f"--job-name={name}", "--time=10",
                   "--export=" + ",".join(f"{k}={v}" for k, v in exports.items()))
    log = work / f"oclsci-jacobi-{jobid}.out"
    pids = _freeze_after_first_checkpoint(slurm, jobid, work / "out.npy", 1, log)
    with _batch_shell_held(jobid):
        # The limit is now less than 120 s away: slurmctld sends the warning at its next check.
        limit = _limit_in_warning_window(slurm, jobid) + GRACE_MIN
        _release_once_signalled(pids, signal.SIGUSR1,
                                then=lambda: _give_time_back(slurm, jobid, limit))
    ref_run = subprocess.Popen(
        [sys.executable, "-m", "oclsci", "jacobi", str(inp), "--iterations",
         str(LONG_ITERATIONS), *LONG_RUN, "-o", str(work / "ref.npy"), "--quiet"],
        env=job_env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen: dict[int, dict] = {}
        chain = _follow_chain(slurm, jobid, log, seen=seen)
        assert ref_run.wait(timeout=600) == 0, ref_run.stdout.read()
    finally:
        if ref_run.poll() is None:
            ref_run.kill()
    first = slurm.job(jobid)
    assert first["JobState"] == "COMPLETED" and first["TimeLimit"] == _hhmmss(limit)
    text = log.read_text()
    assert "stopped on a signal; checkpoint" in text, text
    assert len(chain) >= 2 and slurm.jobs_named(name) == chain
    # The continuations ask for what the first job had (its time limit as it stood at the
    # end), and are submitted from the script itself (not Slurm's spool copy of it).
    for later in chain[1:]:
        for field in ("Features", "TimeLimit", "NumNodes", "NumTasks", "Partition", "StdOut",
                      "TresPerNode", "CPUs/Task", "WorkDir"):
            value = seen[later][field]
            if field == "NumNodes" and value == f"{first[field]}-{first[field]}":
                value = first[field]  # a pending job shows the range it asked for
            assert value == first[field], (field, seen[later], first)
        assert seen[later]["Command"] == str(SLURM / "jacobi.sbatch")
        assert slurm.run(["squeue", "-h", "-t", "all", "-j", str(later), "-o", "%j"]
                         ).stdout.strip() == name
    assert first["CPUs/Task"] == "4" and first["TresPerNode"].endswith("gpu:1")
    assert first["Features"] == "enbata"  # the site's constraint (slurm/site.env)
    assert text.count("resuming from") == len(chain) - 1, text
    resumed = re.search(rf"iterations\s+{LONG_ITERATIONS} \((\d+) in this run\)", text)
    assert resumed and 0 < int(resumed.group(1)) < LONG_ITERATIONS, text
    out = np.load(work / "out.npy")
    ref = np.load(work / "ref.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    assert not (work / "out.ckpt.npz").exists()


@contextlib.contextmanager
def _reference_beside(tmp: Path, env: dict, inp: str, iterations: int, *args: str):
    """A direct run into tmp/ref.npy, beside the jobs; waited for (and checked) on exit."""
    ref = tmp / "ref.npy"
    run = subprocess.Popen(
        [sys.executable, "-m", "oclsci", "jacobi", inp, "--iterations", str(iterations), *args,
         "-o", str(ref), "--quiet"],
        env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield ref
        assert run.wait(timeout=600) == 0, run.stdout.read()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def _long_mpi_job(slurm, job_env, tmp_path, name, *sbatch_args, **params) -> tuple[int, Path]:
    """A two-node, one-rank-per-node run of the fixed long size on in.npy into out.npy."""
    if not (tmp_path / "in.npy").exists():
        write_input(tmp_path / "in.npy", shape=LONG_SHAPE)
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--nodes=2",
                   "--ntasks-per-node=1", f"--job-name={name}", *sbatch_args, input="in.npy",
                   output="out.npy", srun_mpi="pmi2", args=" ".join(LONG_RUN), **params)
    return jobid, tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
@pytest.mark.parametrize("warning", [True, False], ids=["warning", "sigterm-at-limit"])
def test_two_node_time_limit(slurm, job_env, tmp_path, warning):
    """A two-node job at its time limit: on the warning (USR1) or, without one
    (--signal=USR1@0), on SIGTERM at the limit, the ranks stop at the same step, rank 0 writes
    the checkpoint, the script resubmits itself, and the chain ends with the one-process
    result bit for bit."""
    name = f"oclsci-2n-{'warn' if warning else 'term'}"
    extra = ["--time=10"] + ([] if warning else ["--signal=USR1@0"])
    jobid, log = _long_mpi_job(slurm, job_env, tmp_path, name, *extra,
                               iterations=LONG_ITERATIONS, checkpoint_every=CHECKPOINT_EVERY)
    pids = _freeze_after_first_checkpoint(slurm, jobid, tmp_path / "out.npy", 2, log)
    if warning:
        with _batch_shell_held(jobid):
            limit = _limit_in_warning_window(slurm, jobid) + GRACE_MIN
            _release_once_signalled(pids, signal.SIGUSR1,
                                    then=lambda: _give_time_back(slurm, jobid, limit))
    else:
        # Reached at once if the job has run a minute already, else within the minute.
        slurm.run(["scontrol", "update", f"JobId={jobid}", "TimeLimit=1"])
        _release_once_signalled(pids, signal.SIGTERM)
    with _reference_beside(tmp_path, job_env, "in.npy", LONG_ITERATIONS, *LONG_RUN) as ref_path:
        chain = _follow_chain(slurm, jobid, log)
    ref = np.load(ref_path)
    first = slurm.job(jobid)
    text = log.read_text()
    assert first["JobState"] == ("COMPLETED" if warning else "TIMEOUT"), text
    assert "stopped on a signal; checkpoint" in text, text
    assert len(chain) >= 2 and slurm.jobs_named(name) == chain
    assert all(slurm.job(j)["NumNodes"] == "2" for j in chain)
    assert text.count("resuming from") == len(chain) - 1, text
    assert re.search(rf"iterations\s+{LONG_ITERATIONS} \(\d+ in this run\)", text), text
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    assert not (tmp_path / "out.ckpt.npz").exists()


@pytest.mark.mpi
@pytest.mark.usefixtures("mpi_present")
def test_scancel_keeps_checkpoint_without_resubmitting(slurm, job_env, tmp_path):
    """`scancel` of a two-node job stops the run with a checkpoint but does not start the
    chain again; the checkpoint then resumes by hand (OCLSCI_RESUME) to the uninterrupted
    result."""
    jobid, log = _long_mpi_job(slurm, job_env, tmp_path, "oclsci-cancel",
                               iterations=LONG_ITERATIONS, checkpoint_every=CHECKPOINT_EVERY)
    ckpt = tmp_path / "out.ckpt.npz"
    pids = _freeze_after_first_checkpoint(slurm, jobid, tmp_path / "out.npy", 2, log)
    slurm.run(["scancel", str(jobid)])
    _release_once_signalled(pids, signal.SIGTERM)
    info = slurm.wait(jobid, 600)
    assert info["JobState"] == "CANCELLED"
    # Until every process of the job has ended (the batch shell may log "not resubmitting",
    # or be killed KillWait seconds after SIGTERM while srun waits for the ranks).
    _wait_for(lambda: slurm.run(["squeue", "-h", "-t", "all", "-j", str(jobid), "-o", "%T"]
                                ).stdout.strip() == "CANCELLED", 600, f"job {jobid} completing")
    assert slurm.jobs_named("oclsci-cancel") == [jobid], log.read_text()
    assert "resubmitted as job" not in log.read_text()
    assert ckpt.exists()

    second, log2 = _long_mpi_job(slurm, job_env, tmp_path, "oclsci-cancel-resume",
                                 iterations=LONG_ITERATIONS, resume=ckpt.name)
    ref = reference(tmp_path, job_env, tmp_path / "in.npy", LONG_ITERATIONS, *LONG_RUN)
    finished(slurm, second, log2)
    assert np.array_equal(np.load(tmp_path / "out.npy"), ref)


def _has_selftest() -> bool:
    r = run_cli("selftest", "--help", timeout=120)
    return r.returncode == 0


@pytest.mark.skipif(not _has_selftest(), reason="`oclsci selftest` is not available yet")
def test_selftest_first_step(slurm, job_env, tmp_path):
    """OCLSCI_SELFTEST=1: `oclsci selftest --quick` runs on the node before the work; when it
    fails (an unknown device here) the job stops with its report and runs nothing."""
    inp = write_input(tmp_path / "in.npy", shape=(40, 30))
    ref = reference(tmp_path, job_env, inp, 300)
    jobid = submit(slurm, "jacobi.sbatch", job_env, tmp_path, input="in.npy", iterations=300,
                   output="ok.npy", selftest=1)
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    finished(slurm, jobid, log)
    text = log.read_text()
    assert "task.sh oclsci selftest --quick" in text and "selftest passed on" in text, text
    assert text.index("selftest passed") < text.index("task.sh oclsci jacobi")
    assert np.array_equal(np.load(tmp_path / "ok.npy"), ref)

    jobid = submit(slurm, "jacobi.sbatch", job_env, tmp_path, input="in.npy", iterations=300,
                   output="bad.npy", selftest=1, device="7:7")
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    info = slurm.wait(jobid, 600)
    text = log.read_text()
    assert info["JobState"] == "FAILED" and info["ExitCode"] == "1:0", text
    assert "oclsci selftest failed" in text and "oclsci jacobi" not in text.split(
        "selftest --quick", 1)[1], text
    assert not (tmp_path / "bad.npy").exists()


FAKE_GUIX = """#!{python}
# A stand-in for the two guix commands of slurm/task.sh, which it logs (arguments, and the
# variables CMD gets):
# * `guix time-machine -C CHANNELS -- package -p PROFILE -m FILE...': makes a "store item"
#   (a directory under $FAKE_GUIX_STORE holding the manifest names) and points PROFILE at it;
# * `guix shell --pure -p PROFILE [--preserve=RE]... -- CMD...': keeps under --pure only the
#   preserved variables (and those guix always keeps), puts the "profile" (this Python's bin
#   directory) on PATH and the checkout on PYTHONPATH (guix/oclsci.scm packages the checkout),
#   then forks CMD and waits for it, as `guix shell` does.
import json, os, re, sys
args = sys.argv[1:]
env = dict(os.environ)
if args[0] == "time-machine":
    assert args[1] == "-C" and args[3:5] == ["--", "package"], args
    options = args[5:]
    profile = options[options.index("-p") + 1]
    manifests = [options[i + 1] for i, o in enumerate(options) if o == "-m"]
    store = os.environ["FAKE_GUIX_STORE"]
    os.makedirs(store, exist_ok=True)
    item = os.path.join(store, "profile-%d" % len(os.listdir(store)))
    os.mkdir(item)
    with open(os.path.join(item, "manifests"), "w") as f:
        f.write("\\n".join(manifests))
    if os.path.lexists(profile):
        os.unlink(profile)
    os.symlink(item, profile)
    cmd = None
else:
    assert args[0] == "shell", args
    options, cmd = args[1:args.index("--")], args[args.index("--") + 1:]
    if "--pure" in options:
        keep = [o.split("=", 1)[1] for o in options if o.startswith("--preserve=")]
        keep += ["^HOME$", "^USER$", "^LOGNAME$", "^TERM$", "^DISPLAY$", "^TZ$", "^PAGER$"]
        env = {{k: v for k, v in env.items() if any(re.search(r, k) for r in keep)}}
    with open(os.path.join(options[options.index("-p") + 1], "manifests")) as f:
        manifest = f.read().split()[0]
    env["PATH"] = {bindir!r} + ":/usr/bin:/bin"  # PoCL's wheel links kernels with the host's ld
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(manifest))
with open(os.environ["FAKE_GUIX_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "env": sorted(env)}}) + "\\n")
if cmd is None:
    sys.exit(0)
pid = os.fork()
if pid == 0:
    os.execvpe(cmd[0], cmd, env)
status = os.waitpid(pid, 0)[1]
sys.exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status)
         else 128 + os.WTERMSIG(status))
"""


def test_guix_environment_and_signal_to_the_step(slurm, job_env, tmp_path):
    """With `guix` on PATH (OCLSCI_USE_GUIX=auto) each job builds its profile once with
    `guix time-machine -C guix/channels.scm -- package -p PROFILE -m guix/manifest.scm` and
    the scripts run oclsci through `guix shell --pure -p PROFILE --preserve='^SLURM' -- ...`
    (a stand-in here, which forks and waits like guix shell). A USR1
    sent to the job step then reaches oclsci (not the guix process), the run checkpoints, the
    job resubmits itself, and the result equals an uninterrupted run."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    guix = bindir / "guix"
    guix.write_text(FAKE_GUIX.format(python=sys.executable,
                                     bindir=str(Path(sys.executable).parent)))
    guix.chmod(0o755)
    env = dict(job_env, PATH=f"{bindir}{os.pathsep}{job_env['PATH']}",
               FAKE_GUIX_LOG=str(tmp_path / "guix.log"), FAKE_GUIX_STORE=str(tmp_path / "store"),
               OCLSCI_GUIX_PROFILES=str(tmp_path / "profiles"), OCLSCI_GUIX_VARIANT="cpu")
    env.pop("OCLSCI_USE_GUIX")  # auto
    inp = write_input(tmp_path / "in.npy", shape=LONG_SHAPE)
    iterations = LONG_ITERATIONS
    jobid = submit(slurm, "jacobi.sbatch", env, tmp_path, "--job-name=oclsci-guix",
                   input="in.npy", iterations=iterations, output="out.npy",
                   checkpoint_every=CHECKPOINT_EVERY, args=" ".join(LONG_RUN))
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    pids = _freeze_after_first_checkpoint(slurm, jobid, tmp_path / "out.npy", 1, log)
    slurm.run(["scancel", "--signal=USR1", str(jobid)])  # to the job steps, as --signal=USR1@T
    _release_once_signalled(pids, signal.SIGUSR1)
    ref = reference(tmp_path, job_env, inp, iterations, *LONG_RUN)
    assert len(_follow_chain(slurm, jobid, log)) == 2
    assert np.array_equal(np.load(tmp_path / "out.npy"), ref)

    text = log.read_text()
    assert "environment: guix time-machine" in text
    assert_reported(text)
    calls = [json.loads(line) for line in (tmp_path / "guix.log").read_text().splitlines()]
    builds = [call["args"] for call in calls if call["args"][0] == "time-machine"]
    shells = [call for call in calls if call["args"][0] == "shell"]
    # One `guix time-machine' per job (the job and its resubmission), before its steps.
    assert len(builds) == 2 and calls[0]["args"] == builds[0]
    for args in builds:
        assert args == ["time-machine", "-C", f"{ROOT}/guix/channels.scm", "--", "package",
                        "-p", str(tmp_path / "profiles" / "cpu"), "-m", f"{ROOT}/guix/manifest.scm"]
    assert len(shells) == 4  # report + jacobi, twice
    for call in shells:
        args = call["args"]
        assert {"--pure", "--preserve=^SLURM"} <= set(args)
        assert Path(args[args.index("-p") + 1]).parent == tmp_path / "store"
        assert args[args.index("--") + 1:][:3] == ["python3", "-m", "oclsci"] or \
            args[args.index("--") + 1:][:2] == ["python3", "-c"]
        assert {"SLURM_JOB_ID", "SLURM_LOCALID", "POCL_CACHE_DIR"} <= set(call["env"])
    calls = shells
    assert sum("--resume" in call["args"] for call in calls) == 1


def test_sweep_array(slurm, job_env, tmp_path):
    """slurm/jacobi-sweep.sbatch: array task I runs the case on line I of the sweep file."""
    inp = write_input(tmp_path / "in.npy", shape=(48, 40))
    cases = ["--kernel seed", "--kernel blocked --dtype float64"]
    (tmp_path / "cases.txt").write_text("# two cases\n\n" + "\n".join(cases) + "\n")
    iterations = 1500
    jobid = submit(slurm, "jacobi-sweep.sbatch", job_env, tmp_path, "--array=0-1",
                   input="in.npy", iterations=iterations, sweep_file="cases.txt")
    def done():
        tasks = slurm.jobs(jobid)
        return len(tasks) == len(cases) and all(t["JobState"] in FINAL_STATES for t in tasks)

    _wait_for(done, 600, f"array job {jobid} did not finish")
    for task in slurm.jobs(jobid):
        log = tmp_path / f"oclsci-sweep-{jobid}_{task['ArrayTaskId']}.out"
        assert task["JobState"] == "COMPLETED" and task["ExitCode"] == "0:0", (
            log.read_text() if log.exists() else f"no {log}")
    for index, case in enumerate(cases):
        r = run_cli("jacobi", str(inp), "--iterations", str(iterations), *case.split(),
                    "-o", str(tmp_path / f"ref{index}.npy"), "--quiet", env=job_env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        out = np.load(tmp_path / f"oclsci-sweep-{jobid}_{index}.npy")
        ref = np.load(tmp_path / f"ref{index}.npy")
        assert out.dtype == ref.dtype and np.array_equal(out, ref), case
        assert f"sweep case {index}: {case}" in (
            tmp_path / f"oclsci-sweep-{jobid}_{index}.out").read_text()


@pytest.mark.skipif(importlib.util.find_spec("oclsci.cli.bench") is None,
                    reason="`oclsci bench` is not available yet (no oclsci.cli.bench module)")
def test_bench_sbatch(slurm, job_env, tmp_path):
    """slurm/bench.sbatch writes the benchmark table as JSON and Markdown."""
    jobid = submit(slurm, "bench.sbatch", job_env, tmp_path, output="table",
                   args="--quick --repeat 1 mandelbrot")
    log = tmp_path / f"oclsci-bench-{jobid}.out"
    finished(slurm, jobid, log)
    assert json.loads((tmp_path / "table.json").read_text())
    assert (tmp_path / "table.md").read_text().strip()
    assert "oclsci, version" in log.read_text()
