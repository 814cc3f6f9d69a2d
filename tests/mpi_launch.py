"""Running ``python -m oclsci`` under ``mpiexec`` for the MPI tests (tests/mpi/, and the
Lomb-Scargle suite's MPI case): which mpiexec, whether MPI can run here, one launcher."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import DEVICE_SPECS, REPO_ROOT

# Set by a launcher for its ranks: a test's own mpiexec must not see them.
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK",
                      "PMIX_RANK", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "OCLSCI_MPI",
                      "OCLSCI_MPI_EXCHANGE_EVERY", "OCLSCI_MPI_OVERLAP", "PYOPENCL_CTX")
# `python FAILING_RANK RANK WHEN ARGS...`: oclsci ARGS with a failure injected on one rank.
FAILING_RANK = REPO_ROOT / "tests" / "mpi" / "mpi_failing_rank.py"


@functools.lru_cache(maxsize=1)
def mpiexec_command() -> list[str] | None:
    """The mpiexec beside this Python (or on PATH), with Open MPI's options, or None."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if not found:
        return None
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
    command = [found]
    if "open mpi" in (version.stdout + version.stderr).lower() or \
            "openrte" in (version.stdout + version.stderr).lower():
        command.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-run-as-root")
    return command


def mpi_missing() -> str | None:
    """Why MPI runs cannot happen here, or None."""
    if not DEVICE_SPECS:
        return "no OpenCL device: pip install 'oclsci[pocl]'"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed: pip install 'oclsci[mpi]'"
    if mpiexec_command() is None:
        return "no mpiexec found (next to python or on PATH): pip install 'oclsci[mpi]'"
    return None


def launch_env(extra: dict | None = None) -> dict:
    """This environment without a surrounding launcher's variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    env.update(extra or {})
    return env


def run_oclsci(args: list, ranks: int | None = None, extra_env: dict | None = None,
           timeout: float = 180, failing: tuple[int, str] | None = None,
           ) -> subprocess.CompletedProcess:
    """Run `python -m oclsci ARGS` alone (ranks=None) or under `mpiexec -n RANKS`; `failing`:
    (rank, "setup" or a step) injects a failure there (see mpi_failing_rank.py)."""
    command = [sys.executable, "-m", "oclsci", *map(str, args)]
    if failing is not None:
        command = [sys.executable, str(FAILING_RANK), *map(str, failing), *map(str, args)]
    if ranks is not None:
        command = [*mpiexec_command(), "-n", str(ranks), *command]
    return subprocess.run(command, env=launch_env(extra_env), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def assert_ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """``result``, after checking that it exited 0 (else its output in the failure)."""
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def assert_converged_alike(one: subprocess.CompletedProcess,
                           ranks: subprocess.CompletedProcess) -> None:
    """A ``--tol`` run on one process and on ranks: both converged at the same iteration, to
    the same printed residual (the summary's lines)."""
    def line(text: str, key: str) -> str:
        return next(line for line in text.splitlines() if line.startswith(key))

    assert "converged" in line(one.stdout, "iterations")
    for key in ("iterations", "residual"):
        assert line(one.stdout, key) == line(ranks.stdout, key)
