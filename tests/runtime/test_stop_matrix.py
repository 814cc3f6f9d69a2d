"""Every long command stops on every stop signal, alone or as MPI ranks, with or without a
terminal (issue 33): exit 128 + N, one error line, no output and no temporary file.

Signals are sent once the process (every rank) is computing, read from /proc (see
signal_helpers), never after a guessed delay.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_command
from mpi_launch import launch_env, mpi_missing, mpiexec_command
from signal_helpers import HANG, wait_until_ranks_compute

pytestmark = pytest.mark.slow

SIGNALS = [signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP]


def _commands(folder: Path, ranks: int) -> dict[str, list]:
    """Each long command on a small input, running far longer than any test waits."""
    rng = np.random.default_rng(33)
    np.save(folder / "b.npy", rng.standard_normal((64, 48)).astype(np.float32))
    # Poisson over MPI runs multigrid only: a grid that polls within its (long) cycles.
    poisson = ["--method", "jacobi", "--max-cycles", 10**8] if ranks == 1 else \
        ["--sweeps", 100, 100, "--max-cycles", 10**6, "--dtype", "float32"]
    if ranks > 1:
        np.save(folder / "b.npy", rng.standard_normal((2048, 2048)).astype(np.float32))
    times = np.sort(rng.uniform(0, 100, 2000))
    np.save(folder / "ls.npy", np.stack([times, np.sin(times)]))
    out = folder / "out.npy"
    return {
        "jacobi": ["jacobi", folder / "b.npy", "-n", 10**9, "-o", out],
        "poisson": ["poisson", folder / "b.npy", "--tol", "1e-30", *poisson, "-o", out],
        "mandelbrot": ["mandelbrot", "--width", 600, "--height", 400, "--maxiter", 3000,
                       "--repeat", 10**6, "--counts", out, "--no-image"],
        "lombscargle": ["lombscargle", folder / "ls.npy", "--freqs", "0.01:10:40000000",
                        "-o", out],
    }


def _start(args: list, ranks: int, terminal: bool, folder: Path):
    launcher = [*mpiexec_command(), "-n", str(ranks)] if ranks > 1 else []
    command = cli_command(*args, launcher=launcher)
    env = launch_env()
    if not terminal:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd=folder), None
    main, side = pty.openpty()
    process = subprocess.Popen(command, stdin=side, stdout=side, stderr=side, env=env,
                               cwd=folder, start_new_session=True)
    os.close(side)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return process, (main, reader, chunks)


def _finish(process: subprocess.Popen, tty) -> tuple[int, str]:
    if tty is None:
        _, stderr = process.communicate(timeout=HANG)
        return process.returncode, stderr.decode(errors="replace")
    main, reader, chunks = tty
    process.wait(timeout=HANG)
    reader.join(timeout=30)
    os.close(main)
    return process.returncode, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("terminal", [False, True], ids=["batch", "terminal"])
@pytest.mark.parametrize("ranks", [1, 2], ids=["one-process", "two-ranks"])
@pytest.mark.parametrize("signum", SIGNALS, ids=[s.name for s in SIGNALS])
@pytest.mark.parametrize("command", ["jacobi", "poisson", "mandelbrot", "lombscargle"])
def test_every_command_stops_on_every_stop_signal(tmp_path, command, signum, ranks, terminal):
    if ranks > 1 and mpi_missing():
        pytest.skip(mpi_missing())
    args = _commands(tmp_path, ranks)[command]
    process, tty = _start(args, ranks, terminal, tmp_path)
    try:
        for pid in wait_until_ranks_compute(process, ranks):
            os.kill(pid, signum)  # as Slurm signals every task of a step
        code, output = _finish(process, tty)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 128 + signum, output
    errors = [line for line in output.splitlines() if "error" in line]
    assert errors == [f"oclsci: error: {errors[0].split('error: ', 1)[1]}"], output
    assert f"stopped by {signum.name}" in errors[0], output
    assert "Traceback" not in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.npy", "ls.npy"], output
