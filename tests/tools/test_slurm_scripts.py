"""slurm/common.sh's decisions after a step ends, with stand-ins for srun, scontrol, squeue and
sbatch (no Slurm needed): when a job resumes itself from its checkpoint, and when not.

The real two-node runs are in tests/tools/test_slurm.py; these cases are the ones a real Slurm
gives only by chance (which of srun and the ranks ends first at the time limit).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO_ROOT

STUBS = {
    # srun: record the command, end with the exit code the case asks for.
    "srun": 'echo "$*" >> "$STUB_LOG.srun"; exit "${STUB_SRUN_RC:-0}"\n',
    # scontrol -o show job ID: one line of fields, as Slurm prints them.
    "scontrol": 'echo "JobId=$STUB_JOB JobName=case JobState=$STUB_STATE Reason=$STUB_REASON '
                'TimeLimit=00:10:00 NumNodes=${STUB_NODES:-1} NumTasks=1 Partition=debug '
                'Command=$STUB_SCRIPT WorkDir=$STUB_DIR StdOut=$STUB_DIR/log.out"\n',
    "squeue": 'echo case\n',
    # sbatch: record the options, answer with a job id.
    "sbatch": 'echo "$*" >> "$STUB_LOG.sbatch"; echo 4343\n',
}


@pytest.fixture
def stubbed(tmp_path):
    """A PATH whose srun, scontrol, squeue and sbatch are the stand-ins above."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        path = bin_dir / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(0o755)
    return bin_dir


def _run_jacobi_step(tmp_path, bin_dir, *, srun_rc: int, state: str, reason: str,
                     checkpoint: bool, extra_env: dict | None = None) -> tuple[int, str, str]:
    """Source slurm/common.sh in a job's environment and call oclsci_jacobi; return its exit
    status, its log and the sbatch calls made."""
    ckpt = tmp_path / "out.ckpt.npz"
    if checkpoint:
        ckpt.write_bytes(b"checkpoint")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path),
        "SLURM_JOB_ID": "42", "SLURM_SUBMIT_DIR": str(tmp_path),
        "OCLSCI_ROOT": str(REPO_ROOT), "OCLSCI_USE_GUIX": "no", "OCLSCI_PYTHON": sys.executable,
        "OCLSCI_OUTPUT": str(tmp_path / "out.npy"), "OCLSCI_CHECKPOINT": str(ckpt),
        "STUB_LOG": str(tmp_path / "calls"), "STUB_SRUN_RC": str(srun_rc), "STUB_JOB": "42",
        "STUB_STATE": state, "STUB_REASON": reason, "STUB_DIR": str(tmp_path),
        "STUB_SCRIPT": str(REPO_ROOT / "slurm" / "jacobi.sbatch"),
        **(extra_env or {}),
    }
    script = f'. "{REPO_ROOT}/slurm/common.sh" && oclsci_setup && oclsci_jacobi --ntasks=1'
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    sbatch = tmp_path / "calls.sbatch"
    return done.returncode, done.stdout + done.stderr, sbatch.read_text() if sbatch.exists() \
        else ""


@pytest.mark.parametrize("srun_rc, state, reason", [
    (75, "RUNNING", "None"),         # the ranks saved a checkpoint on the warning
    (137, "RUNNING", "None"),        # a rank killed while rank 0 wrote the checkpoint
    (1, "COMPLETING", "TimeLimit"),  # srun forced the step's end at the time limit
    (1, "TIMEOUT", "TimeLimit"),
], ids=["exit-75", "killed", "srun-at-limit", "srun-timeout"])
def test_resumes_from_checkpoint(stubbed, tmp_path, srun_rc, state, reason):
    rc, log, sbatch = _run_jacobi_step(tmp_path, stubbed, srun_rc=srun_rc, state=state,
                                       reason=reason, checkpoint=True)
    assert rc == 0, log
    assert "resubmitted as job 4343 (resubmission 1)" in log, log
    assert "--dependency=afterany:42" in sbatch and "--time=00:10:00" in sbatch, sbatch


@pytest.mark.parametrize("srun_rc, state, reason, checkpoint", [
    (1, "RUNNING", "None", True),       # an ordinary failure: no resubmission
    (1, "COMPLETING", "TimeLimit", False),  # nothing to resume from
    (75, "CANCELLED", "None", True),    # scancel: keep the checkpoint, do not go on
], ids=["failure", "no-checkpoint", "cancelled"])
def test_does_not_resume(stubbed, tmp_path, srun_rc, state, reason, checkpoint):
    rc, log, sbatch = _run_jacobi_step(tmp_path, stubbed, srun_rc=srun_rc, state=state,
                                       reason=reason, checkpoint=checkpoint)
    assert rc != 0, log
    assert sbatch == "" and "resubmitted" not in log, log


def test_resubmits_as_many_nodes_as_the_job_had(stubbed, tmp_path):
    """At the time limit one node of a two-node job may be released before the batch shell
    asks: `scontrol show job` then says NumNodes=1, and 1 node for 2 tasks of one per node is
    a request Slurm refuses. The continuation asks for the allocation's node count."""
    rc, log, sbatch = _run_jacobi_step(
        tmp_path, stubbed, srun_rc=75, state="COMPLETING", reason="TimeLimit", checkpoint=True,
        extra_env={"SLURM_JOB_NUM_NODES": "2", "STUB_NODES": "1"})
    assert rc == 0, log
    assert "--nodes=2" in sbatch and "--nodes=1" not in sbatch, sbatch


def _run_common(tmp_path, body: str, **variables: str) -> subprocess.CompletedProcess:
    """``body`` after sourcing slurm/common.sh and oclsci_setup, outside Slurm."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OCLSCI_ROOT": str(REPO_ROOT),
           "OCLSCI_USE_GUIX": "no", "OCLSCI_PYTHON": sys.executable, **variables}
    script = f'. "{REPO_ROOT}/slurm/common.sh" && oclsci_setup && {body}'
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


@pytest.mark.parametrize("index, message", [
    ("-1", "OCLSCI_SWEEP_INDEX=-1: expected a non-negative integer"),
    ("two", "OCLSCI_SWEEP_INDEX=two: expected a non-negative integer"),
    ("99", "{sweep} has no case 99"),
    (None, "OCLSCI_SWEEP_FILE={missing}: the file does not exist"),
], ids=["negative", "word", "past-the-end", "missing-file"])
def test_sweep_case_errors_are_one_line(tmp_path, index, message):
    missing = tmp_path / "no-such-cases.txt"
    variables = {"OCLSCI_SWEEP_INDEX": index} if index is not None else \
        {"OCLSCI_SWEEP_FILE": str(missing)}
    done = _run_common(tmp_path, 'oclsci_sweep_case && echo "case: $OCLSCI_CASE_ARGS"',
                       **variables)
    assert done.returncode == 1 and "case:" not in done.stdout, done
    lines = done.stderr.strip().splitlines()
    expected = "error: " + message.format(missing=missing,
                                          sweep=REPO_ROOT / "slurm" / "sweep.txt")
    assert len(lines) == 1 and expected in lines[0], lines


def test_sweep_case_index_with_a_leading_zero(tmp_path):
    """09 is case 9 (shell arithmetic would read an octal number, and fail)."""
    cases = tmp_path / "cases.txt"
    cases.write_text("# ten cases\n" + "".join(f"--case {k}\n\n" for k in range(10)))
    done = _run_common(tmp_path, 'oclsci_sweep_case && echo "case: $OCLSCI_CASE_ARGS"',
                       OCLSCI_SWEEP_INDEX="09", OCLSCI_SWEEP_FILE=str(cases))
    assert done.returncode == 0 and "case: --case 9" in done.stdout, done


def test_resume_hint_can_be_pasted_with_spaces_in_paths(tmp_path):
    import shlex

    folder = tmp_path / "it's a folder"
    folder.mkdir()
    (folder / "out.ckpt.npz").write_bytes(b"checkpoint")
    done = _run_common(tmp_path, "oclsci_resubmit", OCLSCI_OUTPUT=str(folder / "out.npy"),
                       OCLSCI_CHECKPOINT=str(folder / "out.ckpt.npz"))
    assert done.returncode == 75, done
    hint = done.stdout.split("resume with: ", 1)[1].strip()
    assert hint.endswith(" slurm/submit ...")
    assert shlex.split(hint.removesuffix(" slurm/submit ...")) == [
        f"OCLSCI_RESUME={folder / 'out.ckpt.npz'}", f"OCLSCI_OUTPUT={folder / 'out.npy'}"]


def test_task_does_not_create_a_missing_home(tmp_path):
    """With Guix and no OCLSCI_GUIX_PROFILES, profiles go under ~/.cache: a HOME that is not
    a folder is one line of error, never made by `mkdir -p`."""
    home = tmp_path / "gone"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(tmp_path),
           "OCLSCI_ROOT": str(REPO_ROOT), "OCLSCI_USE_GUIX": "yes",
           "OCLSCI_GUIX_VARIANT": "cpu"}
    done = subprocess.run(["bash", str(REPO_ROOT / "slurm" / "task.sh"), "oclsci", "--version"],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1 and not home.exists(), done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"HOME={home} is not a folder" in lines[0], lines
