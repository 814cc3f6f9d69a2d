"""Stops at the wrong moment (issue 33): a signal during the final writes, on one MPI rank, while
ranks wait for each other, inherited as ignored, or two at once; the writer's temporary file.

Moments are read from /proc or the file system, or made by the test itself (SIGSTOP), never
guessed from a delay.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import cli_command, start_cli
from mpi_launch import launch_env, mpi_missing, mpiexec_command
from signal_helpers import (
    HANG,
    _mask,
    _wait_for,
    finish,
    rank_pids,
    wait_until_computing,
    wait_until_ranks_compute,
)

from oclsci.jacobi.checkpoint import load_checkpoint

pytestmark = pytest.mark.slow

needs_mpi = pytest.mark.skipif(bool(mpi_missing()), reason=str(mpi_missing()))


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=HANG, stdin=subprocess.DEVNULL)


def test_a_signal_during_the_final_writes_costs_nothing(tmp_path):
    """SIGTERM while the output is being written (the process frozen with a temporary file
    in place): every output and the final checkpoint are written, exit 0, one warning."""
    rhs = tmp_path / "b.npy"
    np.save(rhs, np.random.default_rng(1).standard_normal((1500, 1500)).astype(np.float32))
    out, checkpoint = tmp_path / "o.npy", tmp_path / "c.npz"
    for _ in range(20):  # until the freeze lands while the temporary file exists
        process = start_cli("jacobi", rhs, "-n", 40, "-o", out, "--checkpoint", checkpoint,
                            "--compare", tmp_path / "c.png")
        caught = False
        while process.poll() is None and not caught:
            if any(name.startswith(".o.npy.") for name in os.listdir(tmp_path)):
                process.send_signal(signal.SIGSTOP)
                caught = any(name.startswith(".o.npy.") for name in os.listdir(tmp_path))
                if caught:
                    process.send_signal(signal.SIGTERM)
                process.send_signal(signal.SIGCONT)
        code, stderr = finish(process)
        if caught:
            break
        for path in (out, checkpoint, tmp_path / "c.png"):
            path.unlink(missing_ok=True)
    else:
        pytest.fail("never froze the process while it wrote its output")
    assert code == 0, stderr
    assert "oclsci: warning: SIGTERM came after the work was done; the outputs were written " \
           "first" in stderr
    assert load_checkpoint(checkpoint).iteration == 40
    assert np.load(out).shape == (1500, 1500)
    assert (tmp_path / "c.png").exists()
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


@needs_mpi
def test_lombscargle_ranks_stop_together_when_one_rank_is_signalled(tmp_path):
    times = np.sort(np.random.default_rng(2).uniform(0, 100, 2000))
    np.save(tmp_path / "ls.npy", np.stack([times, np.sin(times)]))
    command = cli_command("lombscargle", tmp_path / "ls.npy", "--freqs", "0.01:10:40000000",
                          "-o", tmp_path / "p.npy",
                          launcher=[*mpiexec_command(), "-n", "2"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=launch_env())
    try:
        pids = wait_until_ranks_compute(process, 2)
        os.kill(max(pids), signal.SIGTERM)  # one rank only
        code, stderr = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 128 + signal.SIGTERM, stderr
    assert [line for line in stderr.splitlines() if "error" in line] == \
        ["oclsci: error: stopped by SIGTERM; no output written"], stderr
    assert not (tmp_path / "p.npy").exists()


@needs_mpi
def test_ranks_running_different_commands_are_refused_at_once(tmp_path):
    mpiexec = mpiexec_command()
    command = [*mpiexec, "-n", "1", *cli_command("jacobi", "-n", 100, "-o", tmp_path / "x.npy"),
               ":", "-n", "1", *cli_command("jacobi", "-n", 200, "-o", tmp_path / "x.npy")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=HANG,
                            stdin=subprocess.DEVNULL, env=launch_env())
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and "the ranks run different commands: rank 1" in lines[0], \
        result.stderr
    assert not (tmp_path / "x.npy").exists()


RANK_STOPPED_EARLY = """
import os, signal, sys
from oclsci.cli import main
from oclsci.runtime.signals import install_exit_handlers

install_exit_handlers()  # before the driver's modules start NumPy's threads
from oclsci import driver

real = driver.launched_placement


def launched_placement():
    # Rank 1 takes SIGTERM once it has joined the world, before the run's guarded part:
    # the window in which a rank used to exit alone while rank 0 waited for it.
    placement = real()
    if placement.world is not None and placement.world.rank == 1:
        os.kill(os.getpid(), signal.SIGTERM)
    return placement


driver.launched_placement = launched_placement
main(sys.argv[1:])
"""


@needs_mpi
def test_a_rank_stopped_before_it_joins_the_run_ends_every_rank(tmp_path):
    """A stop signal on one rank outside the run's guarded part (here right after it joined
    the MPI world) ends every rank with 128 + N and one line, instead of leaving the others
    waiting for it."""
    np.save(tmp_path / "b.npy", np.ones((40, 30), np.float32))
    script = tmp_path / "early.py"
    script.write_text(RANK_STOPPED_EARLY)
    command = [*mpiexec_command(), "-n", "2", sys.executable, str(script), "jacobi",
               str(tmp_path / "b.npy"), "-n", "10", "-o", str(tmp_path / "x.npy")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=HANG,
                            stdin=subprocess.DEVNULL, env=launch_env())
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert "rank 1 of 2: stopped by SIGTERM; no output written" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "x.npy").exists()


@needs_mpi
def test_a_rank_waiting_for_another_acts_on_a_signal(tmp_path):
    """Rank 0 reads its input from a FIFO that nobody writes; rank 1 waits for it in MPI.
    SIGTERM to both ends the run with 143 instead of staying pending."""
    fifo = tmp_path / "b.npy"
    os.mkfifo(fifo)
    command = cli_command("jacobi", fifo, "-n", 10, "-o", tmp_path / "x.npy",
                          launcher=[*mpiexec_command(), "-n", "2"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=launch_env())
    writer = None
    try:
        deadline = time.monotonic() + HANG
        while writer is None:  # opens once rank 0 reads the FIFO
            assert process.poll() is None and time.monotonic() < deadline, process.stderr
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.02)
        for pid in rank_pids(process.pid):
            os.kill(pid, signal.SIGTERM)
        code, stderr = finish(process)
    finally:
        if writer is not None:
            os.close(writer)
        if process.poll() is None:
            process.kill()
    assert code == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT])
def test_a_hangup_or_interrupt_inherited_as_ignored_stays_ignored(tmp_path, ignored):
    """`nohup oclsci ...` (SIGHUP) or a script's `oclsci ... &` (SIGINT): the signal stays
    ignored; SIGTERM still stops the run."""
    rhs = tmp_path / "b.npy"
    np.save(rhs, np.zeros((32, 32), np.float32) + 1)
    process = subprocess.Popen(
        cli_command("jacobi", rhs, "-n", 10**9, "-o", tmp_path / "x.npy"),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(ignored, signal.SIG_IGN))
    try:
        def computing() -> bool:  # SIGTERM blocked by the StopFlag (the ignored one is not)
            mask = _mask(process.pid, "SigBlk")
            return bool(mask >> (signal.SIGTERM - 1) & 1) and not mask >> (signal.SIGWINCH - 1) & 1

        _wait_for(process, computing, "its compute phase")
        process.send_signal(ignored)
        process.send_signal(signal.SIGTERM)
        code, stderr = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr


def test_a_batch_systems_signal_acts_even_when_inherited_ignored_or_blocked(tmp_path):
    """SIGTERM and SIGUSR1 are a scheduler's request to stop: a parent that ignored or blocked
    them (a wrapper, a CI runner) must not cost the job its checkpoint."""
    rhs = tmp_path / "b.npy"
    np.save(rhs, np.ones((32, 32), dtype=np.float32))

    def ignore_and_block() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})

    for signum in (signal.SIGTERM, signal.SIGUSR1):
        checkpoint = tmp_path / f"c{signum}.npz"
        process = subprocess.Popen(
            cli_command("jacobi", rhs, "-n", 10**9, "--checkpoint", checkpoint),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=ignore_and_block)
        try:
            wait_until_computing(process)
            process.send_signal(signum)
            code, stderr = finish(process)
        finally:
            if process.poll() is None:
                process.kill()
        assert code == 75, stderr
        assert load_checkpoint(checkpoint).iteration > 0


def test_signals_arriving_together_are_taken_in_the_documented_order():
    """SIGINT, SIGHUP, SIGUSR1 and SIGTERM pending at one poll: SIGTERM is taken (the kernel
    keeps no order among pending signals: oclsci's is STOP_SIGNALS'); then the others are
    ignored."""
    result = _python("""
        import os, signal
        from oclsci.runtime.signals import StopFlag, install_exit_handlers
        install_exit_handlers()
        with StopFlag() as flag:
            for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM):
                os.kill(os.getpid(), signum)
            print(flag(), flag.signal_name)
            os.kill(os.getpid(), signal.SIGINT)
            print(flag())
        """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["15", "SIGTERM", "15"]


def test_the_writer_holds_signals_while_it_creates_its_file(tmp_path):
    """A signal between the temporary file's creation and the record of its name (here sent by
    a wrapped mkstemp) leaves neither it nor a partial output: the write completes."""
    result = _python(f"""
        import os, signal, tempfile, warnings
        from oclsci.io import write_npy
        from oclsci.runtime.signals import install_exit_handlers
        import numpy as np
        install_exit_handlers()
        make = tempfile.mkstemp
        def signalled(*args, **kwargs):
            made = make(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)
            return made
        tempfile.mkstemp = signalled
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write_npy({str(tmp_path / 'x.npy')!r}, np.arange(5))
        print(len(caught), caught[0].message)
        """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1 SIGTERM came after the work was done")
    assert sorted(os.listdir(tmp_path)) == ["x.npy"]
    assert list(np.load(tmp_path / "x.npy")) == [0, 1, 2, 3, 4]


def test_poisson_polls_within_a_cycle_whatever_the_grid(compute):
    """Long smoothing on a small grid: the stop request is taken inside the first cycle, by
    the poll after a sweep, not after the cycle (issue 33: poll by time, not grid size)."""
    from oclsci.errors import Interrupted
    from oclsci.poisson import solve

    calls = []

    def should_stop():
        calls.append(1)
        return signal.SIGUSR1 if len(calls) >= 2 else 0

    rhs = np.random.default_rng(3).standard_normal((63, 47))
    with pytest.raises(Interrupted) as stopped:
        solve(rhs, 1e-30, device=compute, pre=400, post=400, max_cycles=3,
              should_stop=should_stop)
    assert stopped.value.exit_code == 128 + signal.SIGUSR1
    assert "stopped by SIGUSR1 during a cycle" in str(stopped.value)


def test_poisson_polls_between_the_sweeps_of_every_level(compute):
    """`--sweeps 100000 0` on a small grid spent minutes on its coarser levels' sweeps, where
    nothing polled: on one device the poll comes after every sweep of every level."""
    from oclsci.poisson.hierarchy import build_levels
    from oclsci.poisson.multigrid import Multigrid

    pre = 6
    mg = Multigrid(compute, build_levels((63, 47)), np.float64, pre=pre, post=0)
    calls = []
    mg._stop_poll = lambda: calls.append(1)  # recorded by the first cycle
    u, f = mg.vector(), mg.vector()
    mg.cycle(u, f)
    compute.queue.finish()
    smoothed = len(mg.levels) - 1  # the coarsest is solved, not smoothed
    assert smoothed >= 2
    assert len(calls) == smoothed * (pre - 1) + 2  # and the two around the finest's correction


def test_only_distributed_commands_start_mpi_to_agree():
    """`oclsci --version` or `devices` in a Slurm task's subprocess (no PMI descriptor) must
    not start MPI: only the commands whose ranks work together agree on the command line."""
    from oclsci.cli import _runs_as_ranks

    assert _runs_as_ranks(["jacobi", "b.npy", "-n", "10"])
    assert _runs_as_ranks(["--debug", "poisson", "b.npy"])
    for args in (["--version"], ["devices"], ["jacobi", "--help"], [], ["selftest"]):
        assert not _runs_as_ranks(args), args
