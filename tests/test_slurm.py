"""The batch scripts of slurm/, run for real by a single-node Slurm started on this host.

A session fixture starts munged, slurmctld and slurmd (tests/slurm_cluster.py) with the node
named after this host and ``Features=enbata``, so that the scripts' PlaFRIM defaults
(``-C enbata``) apply unchanged. Jobs run on the CPU through PoCL, in the Python environment of
the tests (its bin directory first on PATH, OCLSCI_USE_GUIX=no), one PoCL thread per process.
Every result is compared bit for bit with a direct run of ``oclsci jacobi``.

Needs root and Debian's ``slurm-wlm`` and ``munge`` packages; skips with the reason otherwise.
Set OCLSCI_REQUIRE_SLURM=1 (CI) to fail instead of skipping when Slurm cannot start.
"""

from __future__ import annotations

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
from slurm_cluster import FINAL_STATES, SlurmCluster, SlurmUnavailable

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parent.parent
SLURM = ROOT / "slurm"
# One PoCL thread per process: jobs, ranks and reference runs then do not slow each other
# down on a small CI machine, and the device (hence the kernel chosen by --kernel auto) is the
# same for every run.
POCL_ONE_THREAD = {"POCL_MAX_PTHREAD_COUNT": "1", "POCL_CPU_MAX_CU_NUM": "1"}


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A running single-node Slurm; stopped (daemons killed) at the end of the session."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except SlurmUnavailable as error:
        if os.environ.get("OCLSCI_REQUIRE_SLURM") == "1":
            pytest.fail(f"Slurm could not start (OCLSCI_REQUIRE_SLURM=1): {error}")
        pytest.skip(f"no local Slurm: {error}")
    yield cluster
    cluster.stop()


@pytest.fixture
def job_env(slurm):
    """The environment given to sbatch (and so to the jobs, --export=ALL)."""
    env = slurm.env
    # No OCLSCI_* from outside (the scripts must find the repository by themselves, ...).
    for key in [k for k in env if k.startswith("OCLSCI_") and k != "OCLSCI_REQUIRE_SLURM"]:
        del env[key]
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["OCLSCI_USE_GUIX"] = "no"
    env.update(POCL_ONE_THREAD)
    return env


def oclsci(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """`oclsci ARGS` run here, outside Slurm, with the jobs' environment."""
    return subprocess.run([sys.executable, "-m", "oclsci", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def write_input(path: Path, shape=(64, 48), seed=7) -> Path:
    rng = np.random.default_rng(seed)
    np.save(path, rng.standard_normal(shape).astype(np.float32))
    return path


def reference(tmp: Path, env: dict, inp: Path, iterations: int, *args: str, name="ref.npy"
              ) -> np.ndarray:
    r = oclsci("jacobi", str(inp), "--iterations", str(iterations), *args, "-o", str(tmp / name),
               "--quiet", env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr
    return np.load(tmp / name)


def submit(slurm: SlurmCluster, script: str, env: dict, tmp: Path, *sbatch_args: str,
           **params) -> int:
    """sbatch slurm/SCRIPT from tmp, with OCLSCI_<KEY>=value for each keyword parameter."""
    env = dict(env)
    env.update({f"OCLSCI_{k.upper()}": str(v) for k, v in params.items()})
    return slurm.sbatch([*sbatch_args, str(SLURM / script)], env=env, cwd=tmp)


def finished(slurm: SlurmCluster, jobid: int, log: Path, timeout: float) -> dict:
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


def _follow_chain(slurm: SlurmCluster, first: int, log: Path, most: int = 12) -> list[int]:
    """Wait for a job and the continuations it submits ("resubmitted as job N" in the shared
    log), each completed; return their ids, oldest first."""
    chain = [first]
    while True:
        finished(slurm, chain[-1], log, timeout=180)
        ids = [int(i) for i in re.findall(r"resubmitted as job (\d+)", log.read_text())]
        if len(ids) < len(chain):
            break
        assert len(chain) < most, f"more than {most} continuations:\n{log.read_text()}"
        chain.append(ids[len(chain) - 1])
    assert "done: " in log.read_text().rsplit("[oclsci", 1)[-1], log.read_text()
    return chain


def _handlers_installed(output: Path) -> int:
    """How many `oclsci jacobi ... -o OUTPUT` processes have their SIGUSR1 handler installed
    (which oclsci does once the run starts; until then the scripts ignore the signal)."""
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if "jacobi" not in argv or str(output) not in argv:
                continue
            caught = re.search(r"^SigCgt:\s*([0-9a-f]+)$", (proc / "status").read_text(), re.M)
        except OSError:
            continue
        if caught and int(caught.group(1), 16) >> (signal.SIGUSR1 - 1) & 1:
            count += 1
    return count


def _wait_until_computing(slurm: SlurmCluster, jobid: int, output: Path, log: Path) -> None:
    """Wait until the job's `oclsci jacobi` is ready to checkpoint on a signal (not for MPI
    runs: MPICH installs a SIGUSR1 handler of its own)."""
    def ready():
        if _handlers_installed(output):
            return True
        state = slurm.job(jobid).get("JobState", "")
        assert state in ("PENDING", "RUNNING", "CONFIGURING"), (
            f"job {jobid} {state} before oclsci computed:\n"
            + (log.read_text() if log.exists() else "(no log)"))
        return False

    _wait_for(ready, 120, f"job {jobid}: oclsci jacobi did not start")
    # PoCL's LLVM takes SIGUSR1 while it compiles the first kernels; oclsci takes it back at its
    # first poll. Signal a running computation, as Slurm's warning before the limit does.
    time.sleep(3)


# The long runs use one kernel, so that the short timed run predicts them (`--kernel auto`
# may choose differently for different iteration counts).
LONG_RUN = ("--kernel", "coalesced")


def _iterations_for(seconds: float, tmp: Path, env: dict, inp: Path) -> int:
    """Iterations that take about `seconds` here, from two short timed runs (their difference
    leaves out PoCL's compilation at the first launch). Jobs may run faster than this estimate
    (Slurm gives a task one CPU, where PoCL's threads cost less on small grids)."""
    def device_time(iterations: int) -> float:
        r = oclsci("jacobi", str(inp), "--iterations", str(iterations), *LONG_RUN, env=env,
                   cwd=tmp)
        assert r.returncode == 0, r.stderr
        return float(re.search(r"device time ([0-9.]+) s", r.stdout).group(1))

    short, long = 20000, 100000
    per_step = (device_time(long) - device_time(short)) / (long - short)
    return max(int(seconds / max(per_step, 1e-8)), long)


def test_jacobi_sbatch_matches_direct_run(slurm, job_env, tmp_path):
    """`sbatch slurm/jacobi.sbatch` with its defaults writes the same result as a direct run."""
    inp = write_input(tmp_path / "in.npy")
    iterations = 3000
    ref = reference(tmp_path, job_env, inp, iterations)
    jobid = submit(slurm, "jacobi.sbatch", job_env, tmp_path, input="in.npy",
                   iterations=iterations)
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    info = finished(slurm, jobid, log, timeout=120)
    assert info["Features"] == "enbata"  # the script's default constraint
    out = np.load(tmp_path / f"oclsci-jacobi-{jobid}.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    text = log.read_text()
    assert_reported(text)
    assert not (tmp_path / f"oclsci-jacobi-{jobid}.ckpt.npz").exists()  # removed once done


@pytest.mark.mpi
@pytest.mark.skipif(_mpi_missing() is not None, reason=str(_mpi_missing()))
def test_jacobi_mpi_two_ranks_matches_single_rank(slurm, job_env, tmp_path):
    """slurm/jacobi-mpi.sbatch, 2 ranks started by srun (PMI-2), equals a 1-rank run."""
    inp = write_input(tmp_path / "in.npy", shape=(70, 52))
    iterations = 2500
    ref = reference(tmp_path, job_env, inp, iterations)
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--ntasks-per-node=2",
                   input="in.npy", iterations=iterations, output="mpi.npy", srun_mpi="pmi2")
    log = tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"
    info = finished(slurm, jobid, log, timeout=180)
    assert info["NumTasks"] == "2"
    out = np.load(tmp_path / "mpi.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    assert_reported(log.read_text())


def test_time_limit_checkpoint_and_resubmission(slurm, job_env, tmp_path):
    """A job reaching its time limit checkpoints on Slurm's warning signal (--signal=USR1@120
    in the script), submits itself again, and the chained job resumes and ends with the result
    of an uninterrupted run."""
    inp = write_input(tmp_path / "in.npy", shape=(128, 96))
    # Long enough to be still running when the signal comes (slurmctld checks time limits
    # every 30 s), short enough for CI; the reference runs meanwhile, beside the job.
    iterations = _iterations_for(60, tmp_path, job_env, inp)
    ref_run = subprocess.Popen(
        [sys.executable, "-m", "oclsci", "jacobi", str(inp), "--iterations", str(iterations),
         *LONG_RUN, "-o", str(tmp_path / "ref.npy"), "--quiet"],
        env=job_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        jobid = submit(slurm, "jacobi.sbatch", job_env, tmp_path, "--job-name=oclsci-timelimit",
                       "--time=10", input="in.npy", iterations=iterations, output="out.npy",
                       args=" ".join(LONG_RUN))
        log = tmp_path / f"oclsci-jacobi-{jobid}.out"
        # Once oclsci computes, bring the time limit down to 1 minute: the limit is then less
        # than 120 s away, so at its next time-limit check (every 30 s) slurmctld sends the
        # warning signal.
        _wait_until_computing(slurm, jobid, tmp_path / "out.npy", log)
        slurm.run(["scontrol", "update", f"JobId={jobid}", "TimeLimit=1"])

        first = finished(slurm, jobid, log, timeout=120)
        assert first["TimeLimit"] == "00:01:00"
        assert "stopped on a signal; checkpoint" in log.read_text(), log.read_text()
        # The chain goes on until the run is done: with 1 minute, each continuation also gets
        # the warning (120 s before the limit) at slurmctld's first check, after <= 30 s.
        chain = _follow_chain(slurm, jobid, log)
        assert len(chain) >= 2 and slurm.jobs_named("oclsci-timelimit") == chain
        last = slurm.job(chain[-1])
        # The continuations ask for what the first job had (as it stood: 1 minute).
        for field in ("Features", "TimeLimit", "NumNodes", "NumTasks", "Partition", "StdOut"):
            assert last[field] == first[field], field
        text = log.read_text()
        assert text.count("resuming from") == len(chain) - 1, text
        resumed = re.search(rf"iterations\s+{iterations} \((\d+) in this run\)", text)
        assert resumed and 0 < int(resumed.group(1)) < iterations, text
        assert ref_run.wait(timeout=300) == 0, ref_run.stdout.read()
    finally:
        if ref_run.poll() is None:
            ref_run.kill()
    out = np.load(tmp_path / "out.npy")
    ref = np.load(tmp_path / "ref.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)
    assert not (tmp_path / "out.ckpt.npz").exists()


def test_scancel_keeps_checkpoint_without_resubmitting(slurm, job_env, tmp_path):
    """`scancel` stops a run with a checkpoint but does not start the chain again; the
    checkpoint then resumes by hand (OCLSCI_RESUME) to the uninterrupted result."""
    inp = write_input(tmp_path / "in.npy", shape=(96, 64))
    iterations = _iterations_for(15, tmp_path, job_env, inp)
    jobid = submit(slurm, "jacobi.sbatch", job_env, tmp_path, "--job-name=oclsci-cancel",
                   input="in.npy", iterations=iterations, output="out.npy",
                   args=" ".join(LONG_RUN))
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    ckpt = tmp_path / "out.ckpt.npz"
    _wait_until_computing(slurm, jobid, tmp_path / "out.npy", log)
    slurm.run(["scancel", str(jobid)])
    info = slurm.wait(jobid, 60)
    assert info["JobState"] == "CANCELLED"
    _wait_for(lambda: "not resubmitting" in log.read_text(), 30, log.read_text())
    assert slurm.jobs_named("oclsci-cancel") == [jobid]
    assert ckpt.exists()

    second = submit(slurm, "jacobi.sbatch", job_env, tmp_path, input="in.npy",
                    iterations=iterations, output="out.npy", resume=ckpt.name,
                    args=" ".join(LONG_RUN))
    ref = reference(tmp_path, job_env, inp, iterations, *LONG_RUN)  # runs while the job does
    finished(slurm, second, tmp_path / f"oclsci-jacobi-{second}.out", timeout=120)
    assert np.array_equal(np.load(tmp_path / "out.npy"), ref)


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
    inp = write_input(tmp_path / "in.npy", shape=(96, 64))
    iterations = _iterations_for(15, tmp_path, job_env, inp)
    jobid = submit(slurm, "jacobi.sbatch", env, tmp_path, "--job-name=oclsci-guix",
                   input="in.npy", iterations=iterations, output="out.npy",
                   args=" ".join(LONG_RUN))
    log = tmp_path / f"oclsci-jacobi-{jobid}.out"
    _wait_until_computing(slurm, jobid, tmp_path / "out.npy", log)
    slurm.run(["scancel", "--signal=USR1", str(jobid)])  # to the job steps, as --signal=USR1@T
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


@pytest.mark.mpi
@pytest.mark.skipif(_mpi_missing() is not None, reason=str(_mpi_missing()))
def test_jacobi_mpi_checkpoint_and_resubmission(slurm, job_env, tmp_path):
    """A USR1 to the 2-rank step (as Slurm's time-limit warning) makes every rank stop at the
    same step; the script resubmits itself and the continuation equals a 1-rank run."""
    inp = write_input(tmp_path / "in.npy", shape=(96, 64))
    iterations = _iterations_for(3, tmp_path, job_env, inp)
    jobid = submit(slurm, "jacobi-mpi.sbatch", job_env, tmp_path, "--ntasks-per-node=2",
                   "--job-name=oclsci-mpi-signal", input="in.npy", iterations=iterations,
                   output="out.npy", srun_mpi="pmi2", checkpoint_every=iterations // 20,
                   args=" ".join(LONG_RUN))
    log = tmp_path / f"oclsci-jacobi-mpi-{jobid}.out"
    # MPICH installs a SIGUSR1 handler of its own at MPI_Init, so wait for the first periodic
    # checkpoint, which the ranks write from inside their loop (oclsci's handlers installed).
    _wait_for(lambda: (tmp_path / "out.ckpt.npz").exists() or slurm.job(jobid)["JobState"]
              not in ("PENDING", "RUNNING", "CONFIGURING"), 120, f"job {jobid}: no checkpoint")
    slurm.run(["scancel", "--signal=USR1", str(jobid)])
    ref = reference(tmp_path, job_env, inp, iterations, *LONG_RUN)
    chain = _follow_chain(slurm, jobid, log)
    assert len(chain) == 2 and slurm.job(chain[1])["NumTasks"] == "2"
    assert re.search(rf"iterations\s+{iterations} \(\d+ in this run\)", log.read_text())
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == ref.dtype and np.array_equal(out, ref)


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

    _wait_for(done, 180, f"array job {jobid} did not finish")
    for task in slurm.jobs(jobid):
        log = tmp_path / f"oclsci-sweep-{jobid}_{task['ArrayTaskId']}.out"
        assert task["JobState"] == "COMPLETED" and task["ExitCode"] == "0:0", (
            log.read_text() if log.exists() else f"no {log}")
    for index, case in enumerate(cases):
        r = oclsci("jacobi", str(inp), "--iterations", str(iterations), *case.split(),
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
    finished(slurm, jobid, log, timeout=300)
    assert json.loads((tmp_path / "table.json").read_text())
    assert (tmp_path / "table.md").read_text().strip()
    assert "oclsci, version" in log.read_text()
