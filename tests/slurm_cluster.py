"""A throw-away two-node Slurm cluster on this host, for tests/tools/test_slurm.py.

It starts ``munged``, ``slurmctld`` and one ``slurmd -N NODE`` per node (Debian's ``munge`` and
``slurm-wlm`` packages) with every key, socket, state, spool, log and pid file inside one
temporary folder, on free TCP ports of 127.0.0.1 (one per slurmd; no name resolution needed),
so it touches nothing in /etc or /var and can run beside a real Slurm. The nodes
(``enbata01``, ``enbata02``: ``NodeHostname`` is this host) have per-node spool, pid, log and
``TmpFS`` folders (PMIx needs its own), ``CPUs`` cpus each (``SlurmdParameters=config_overrides``
lets them claim more than the host has) and ``gpus`` fake GRES GPUs each: character devices
made with ``mknod`` that nothing opens, so that Slurm allots them and sets
``CUDA_VISIBLE_DEVICES``/``ROCR_VISIBLE_DEVICES``/``GPU_DEVICE_ORDINAL`` per task while the
jobs compute on PoCL. Two partitions hold both nodes: ``partition`` (the default) and
``other_partition``, so that a test can tell which one a job asked for. There is no slurmdbd
(``sacct`` has nothing to read); finished jobs are recorded by ``jobcomp/filetxt`` instead, one
line each in :attr:`SlurmCluster.jobcomp` (see :meth:`SlurmCluster.completion`). Clients find
it through ``SLURM_CONF`` (see :attr:`SlurmCluster.env`).

Needs root (slurmd launches the jobs). :meth:`SlurmCluster.start` raises
:class:`SlurmUnavailable` with a one-line reason when it cannot run here.

Also usable by hand, to try the scripts in slurm/ interactively::

    python tests/slurm_cluster.py /tmp/myslurm      # starts it, prints `export SLURM_CONF=...`
    python tests/slurm_cluster.py --stop /tmp/myslurm
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo")
#: States in which a job is over (``scontrol show job`` keeps it for MinJobAge seconds).
FINAL_STATES = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
    "BOOT_FAIL", "DEADLINE", "PREEMPTED",
}


class SlurmUnavailable(RuntimeError):
    """Slurm cannot run here; the message says why (used as the pytest skip reason)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _which(name: str) -> str | None:
    # Daemons live in /usr/sbin, which is not always on a non-root PATH.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")


class SlurmCluster:
    """munged + slurmctld + one slurmd per node, configured under ``base``."""

    def __init__(self, base: Path | str, features: str = "enbata", partition: str = "debug",
                 nodes: int = 2, cpus: int = 8, gpus: int = 2, prefix: str = "enbata",
                 other_partition: str = "long"):
        self.base = Path(base).resolve()
        self.features = features
        self.partition = partition
        self.other_partition = other_partition
        self.hostname = socket.gethostname().split(".")[0]
        self.nodes = [f"{prefix}{i:02d}" for i in range(1, nodes + 1)]
        self.cpus = cpus
        self.gpus = gpus
        self.conf = self.base / "slurm.conf"
        self.logs = self.base / "log"
        self.jobcomp = self.logs / "jobcomp.txt"

    # ----------------------------------------------------------------- start/stop
    def check(self) -> None:
        """Raise SlurmUnavailable if this host cannot run the daemons."""
        if os.name != "posix" or os.geteuid() != 0:
            raise SlurmUnavailable("local Slurm needs root (slurmd launches the jobs)")
        missing = [n for n in DAEMONS + CLIENTS if _which(n) is None]
        if missing:
            raise SlurmUnavailable(
                "Slurm/munge binaries missing (" + ", ".join(missing) + "): "
                "apt-get install -y slurm-wlm munge"
            )

    def write_config(self) -> None:
        b = self.base
        for d in ("state", "spool", "log", "run"):
            (b / d).mkdir(parents=True, exist_ok=True)
        # munged refuses a socket in a folder that others cannot traverse.
        os.chmod(b, 0o755)
        key = b / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o600)
        self.ctld_port = _free_port()
        # Job ids differ between sessions; Slurm's default MaxJobId is 67043328.
        self.first_job_id = 1000 + secrets.randbelow(60_000_000)
        node_lines, gres_lines = [], []
        for node in self.nodes:
            for d in ("spool", "tmp"):
                (b / d / node).mkdir(parents=True, exist_ok=True)
            files = []
            for i in range(self.gpus):
                dev = b / "dev" / node / f"gpu{i}"
                dev.parent.mkdir(parents=True, exist_ok=True)
                if not dev.exists():
                    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(195, i))
                files.append(dev)
            gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
            node_lines.append(
                f"NodeName={node} NodeHostname={self.hostname} NodeAddr=127.0.0.1 "
                f"Port={_free_port()} CPUs={self.cpus} Features={self.features}{gres} "
                "State=UNKNOWN")
            gres_lines += [f"NodeName={node} Name=gpu File={f}" for f in files]
        (b / "gres.conf").write_text("# Fake GPUs: character devices nothing opens.\n"
                                     + "\n".join(gres_lines) + "\n")
        nodes = "\n".join(node_lines)
        self.conf.write_text(
            f"""\
# Generated by tests/slurm_cluster.py: a {len(self.nodes)}-node test cluster on one host.
ClusterName=oclscitest
# Job ids differ from one test cluster to the next: MPICH names its shared memory after the
# PMI job (step) id, and a rank killed by a signal leaves its segment in /dev/shm.
FirstJobId={self.first_job_id}
SlurmctldHost={self.hostname}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={b}/run/munge.sock
StateSaveLocation={b}/state
SlurmdSpoolDir={b}/spool/%n
TmpFS={b}/tmp/%n
SlurmctldPidFile={b}/run/slurmctld.pid
SlurmdPidFile={b}/run/slurmd-%n.pid
SlurmctldLogFile={b}/log/slurmctld.log
SlurmdLogFile={b}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
GresTypes=gpu
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# One line per finished job (no slurmdbd here, so no sacct): nodes, state, exit code.
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
# Time between SIGTERM and SIGKILL when a job reaches its time limit or is cancelled: ample,
# so that a checkpoint and a resubmission fit in it however loaded the machine is.
KillWait=120
# Keep finished jobs visible to `scontrol show job` for the whole test session.
MinJobAge=3600
InactiveLimit=0
SlurmdTimeout=300
{nodes}
PartitionName={self.partition} Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
PartitionName={self.other_partition} Nodes={",".join(self.nodes)} MaxTime=INFINITE State=UP
"""
        )

    @property
    def env(self) -> dict[str, str]:
        """os.environ plus SLURM_CONF pointing at this cluster."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf)
        for k in list(env):  # a surrounding job's variables would confuse sbatch/srun
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF":
                del env[k]
        return env

    def _daemon(self, argv: list[str], what: str) -> None:
        log = self.logs / f"{what}.stderr"
        with open(log, "w") as err:
            r = subprocess.run(argv, env=self.env, stdout=err, stderr=err, timeout=60)
        if r.returncode != 0:
            raise SlurmUnavailable(f"{what} failed to start: {self._tail(log)}")

    def start(self, timeout: float = 60) -> None:
        self.check()
        self.write_config()
        b = self.base
        self._daemon(
            [_which("munged"), f"--key-file={b}/munge.key", f"--socket={b}/run/munge.sock",
             f"--pid-file={b}/run/munged.pid", f"--log-file={b}/log/munged.log",
             f"--seed-file={b}/run/munged.seed", "--force"],
            "munged",
        )
        self._daemon([_which("slurmctld"), "-i", "-f", str(self.conf)], "slurmctld")
        for node in self.nodes:
            self._daemon([_which("slurmd"), "-f", str(self.conf), "-N", node], f"slurmd-{node}")
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            # One line per node and partition: each node is in two partitions.
            r = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False)
            states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
            state = " ".join(f"{n}={s}" for n, s in sorted(states.items()))
            if r.returncode == 0 and sorted(states) == self.nodes and all(
                    s.startswith(("idle", "mixed", "allocated")) for s in states.values()):
                return
            time.sleep(0.5)
        logs = " | ".join(
            f"{n}: {self._tail(self.logs / (n + '.log'))}"
            for n in ("slurmctld", *(f"slurmd-{node}" for node in self.nodes))
        )
        self.stop()
        raise SlurmUnavailable(f"nodes did not become idle (state {state!r}): {logs}")

    def stop(self) -> None:
        """Cancel the jobs left, then kill the daemons this cluster started (pid files)."""
        if self.conf.exists() and (self.base / "run" / "slurmctld.pid").exists():
            r = self.run(["squeue", "-h", "-o", "%A"], check=False)
            jobs = r.stdout.split() if r.returncode == 0 else []
            if jobs:
                self.run(["scancel", *jobs], check=False)
                end = time.monotonic() + 15
                while time.monotonic() < end and self.run(
                        ["squeue", "-h", "-o", "%A"], check=False).stdout.strip():
                    time.sleep(0.5)
        pids = {}
        for name in (*(f"slurmd-{node}" for node in self.nodes), "slurmctld", "munged"):
            try:
                pids[name] = int((self.base / "run" / f"{name}.pid").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        for pid in pids.values():
            _terminate(pid)
        for pid in _stepds(self.conf):  # job steps outlive slurmd
            _terminate(pid, grace=0)

    # ------------------------------------------------------------------ clients
    def run(self, argv: list[str], check: bool = True, env: dict | None = None,
            **kw) -> subprocess.CompletedProcess:
        full_env = self.env
        if env:
            full_env.update(env)
        r = subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60, **kw)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def sbatch(self, argv: list[str], env: dict | None = None, cwd: Path | str | None = None
               ) -> int:
        """Submit; return the job id."""
        r = self.run(["sbatch", "--parsable", *argv], env=env, cwd=cwd)
        return int(r.stdout.strip().split(";")[0])

    def jobs(self, jobid: int) -> list[dict[str, str]]:
        """`scontrol show job` records (one per task of an array), as dicts."""
        r = self.run(["scontrol", "-o", "show", "job", str(jobid)], check=False)
        if r.returncode != 0:
            return []
        return [dict(re.findall(r"(\S+?)=(\S*)", line)) for line in r.stdout.splitlines()
                if line.strip()]

    def job(self, jobid: int) -> dict[str, str]:
        """`scontrol show job` as a dict ({} once Slurm has forgotten it)."""
        records = self.jobs(jobid)
        return records[0] if records else {}

    def wait(self, jobid: int, timeout: float) -> dict[str, str]:
        """Wait until the job is over; return its final `scontrol show job` fields."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.job(jobid)
            state = info.get("JobState", "")
            if state in FINAL_STATES:
                return info
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {jobid} still {state or 'unknown'} after {timeout} s")
            time.sleep(0.5)

    def completion(self, jobid: int) -> dict[str, str]:
        """The ``jobcomp/filetxt`` record of a finished job ({} while it has none)."""
        try:
            lines = self.jobcomp.read_text(errors="replace").splitlines()
        except OSError:
            return {}
        for line in lines:
            record = dict(re.findall(r"(\S+?)=(\S*)", line))
            if record.get("JobId") == str(jobid):
                return record
        return {}

    def jobs_named(self, name: str) -> list[int]:
        """Ids of all jobs (running or finished) with this job name, oldest first."""
        r = self.run(["squeue", "-h", "-t", "all", "-n", name, "-o", "%i"], check=False)
        return sorted(int(x) for x in r.stdout.split())

    @staticmethod
    def _tail(path: Path, n: int = 3) -> str:
        try:
            lines = path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return f"(no {path.name})"
        return " / ".join(lines[-n:]) or f"({path.name} empty)"


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _terminate(pid: int, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds if still alive."""
    steps = [(signal.SIGTERM, grace)] if grace > 0 else []
    for sig, wait in [*steps, (signal.SIGKILL, 2.0)]:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + wait
        while time.monotonic() < end and _alive(pid):
            time.sleep(0.1)
        if not _alive(pid):
            return


def _stepds(conf: Path) -> list[int]:
    """The slurmstepd processes of this cluster: slurmd passed on its SLURM_CONF to them."""
    mark = f"SLURM_CONF={conf}".encode()
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "comm").read_text().startswith("slurmstepd") \
                    and mark in (p / "environ").read_bytes().split(b"\0"):
                found.append(int(p.name))
        except OSError:
            continue
    return found


if __name__ == "__main__":
    args = sys.argv[1:]
    stop = "--stop" in args
    args = [a for a in args if a != "--stop"]
    if len(args) != 1:
        sys.exit("usage: python tests/slurm_cluster.py [--stop] DIR")
    c = SlurmCluster(args[0])
    if stop:
        c.stop()
    else:
        try:
            c.start()
        except SlurmUnavailable as e:
            sys.exit(f"cannot start Slurm: {e}")
        print(f"export SLURM_CONF={c.conf}")
