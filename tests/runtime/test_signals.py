"""Runs stop when told, without a terminal, in bounded memory (issue 13).

Every process here runs as a Slurm batch step would: stdin from /dev/null, output to pipes.
Signals are sent at points read from /proc (see signal_helpers), never after a guessed delay.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from conftest import run_cli, start_cli
from signal_helpers import (
    finish,
    peak_rss_mb,
    wait_for_file,
    wait_until_computing,
    wait_until_handling,
)

from oclsci.errors import Interrupted, OutputError
from oclsci.io import atomic_path, write_outputs
from oclsci.jacobi.checkpoint import load_checkpoint

pytestmark = pytest.mark.slow

ENDLESS = 10**9
STOPS = [signal.SIGTERM, signal.SIGUSR1, signal.SIGINT]


@pytest.fixture
def rhs_file(tmp_path):
    """A 96x80 right-hand side saved as .npy."""
    path = tmp_path / "b.npy"
    np.save(path, np.random.default_rng(13).standard_normal((96, 80)).astype(np.float32))
    return path


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines()  # less the device line and progress lines
             if not line.startswith(("oclsci: device", "oclsci: jacobi:"))]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("signum", STOPS)
def test_batch_run_checkpoints_at_the_step_it_stopped(tmp_path, rhs_file, signum):
    """No terminal, no progress bar: the signal is acted on mid-run (never after the last
    launch of 10^9 steps), with exit 75 and a checkpoint that resumes bit for bit."""
    checkpoint = tmp_path / "c.npz"
    process = start_cli("jacobi", rhs_file, "-n", ENDLESS, "--checkpoint", checkpoint,
                        "-o", tmp_path / "x.npy")
    wait_until_computing(process)
    process.send_signal(signum)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert f"stopped by {signal.Signals(signum).name}" in _one_line(stderr)
    state = load_checkpoint(checkpoint)
    assert 0 <= state.iteration < ENDLESS
    assert not (tmp_path / "x.npy").exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_host_memory_stays_flat_on_a_long_run(tmp_path):
    """10^9 steps on 64x48: the host never queues the run, so memory does not grow."""
    np.save(tmp_path / "b.npy", np.ones((64, 48), dtype=np.float32))
    process = start_cli("jacobi", tmp_path / "b.npy", "-n", ENDLESS, "--checkpoint",
                        tmp_path / "c.npz", "--checkpoint-every", 2000)
    wait_until_computing(process)
    # Let it run through many chunks: until several periodic checkpoints have been written.
    for _ in range(3):
        wait_for_file(process, tmp_path / "c.npz")
        first = load_checkpoint(tmp_path / "c.npz").iteration
        (tmp_path / "c.npz").unlink()
    assert first > 0
    peak = peak_rss_mb(process.pid)
    process.send_signal(signal.SIGTERM)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert peak < 500, f"peak resident memory {peak:.0f} MB"


def test_signal_during_a_cold_kernel_build_is_not_lost(tmp_path, rhs_file):
    """PoCL's LLVM takes SIGUSR1 while it compiles: a signal sent then must still stop the
    run (after the build) with its checkpoint."""
    process = start_cli("jacobi", rhs_file, "-n", ENDLESS, "--checkpoint", tmp_path / "c.npz",
                        extra_env={"POCL_CACHE_DIR": str(tmp_path / "pocl-cache")})
    wait_until_computing(process)  # from here on the context and kernels build
    process.send_signal(signal.SIGUSR1)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert load_checkpoint(tmp_path / "c.npz").iteration < ENDLESS


def test_later_signals_do_not_undo_the_first(tmp_path, rhs_file):
    """The first signal wins: more signals while the checkpoint is written are ignored."""
    checkpoint = tmp_path / "c.npz"
    process = start_cli("jacobi", rhs_file, "-n", ENDLESS, "--checkpoint", checkpoint)
    wait_until_computing(process)
    for signum in (signal.SIGTERM, signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        process.send_signal(signum)
    code, stderr = finish(process)
    assert code == 75, stderr
    assert "stopped by SIG" in _one_line(stderr)  # pending signals are taken lowest first
    load_checkpoint(checkpoint)


def test_a_stop_agreed_with_other_ranks_ignores_later_signals():
    """A rank that stops because another rank got the signal ignores stop signals until it
    ends: a late one (a batch shell passing Slurm's signal on) during the exit, where Python
    has put the default handlers back before MPI finalises, would kill it mid-finalisation."""
    code = textwrap.dedent("""
        import os, signal, sys
        from oclsci.runtime.signals import StopFlag, install_exit_handlers
        install_exit_handlers()
        with StopFlag() as flag:
            flag.stopping()  # the agreed stop: no signal of its own
        assert flag.signum is None
        assert signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN
        for signum in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
            os.kill(os.getpid(), signum)
        sys.exit(75)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 75, result.stderr


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_a_stop_whose_exception_python_dropped_ends_the_next_computation():
    """A signal's SignalExit raised where Python drops exceptions (here a weakref callback:
    "Exception ignored in") is not lost: the stop signals stay ignored, and the computation
    that starts next raises it before doing anything. Deterministic: the callback signals
    its own process and runs on, so the handler runs inside it."""
    result = _run_python("""
        import os, signal, sys, weakref
        from oclsci.runtime.signals import SignalExit, StopFlag, install_exit_handlers
        install_exit_handlers()
        sys.unraisablehook = lambda hook: print("dropped", type(hook.exc_value).__name__)
        class Thing:
            pass
        def callback(_):
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(10**6):
                pass
        thing = Thing()
        ref = weakref.ref(thing, callback)
        del thing
        print("start-up goes on")
        os.kill(os.getpid(), signal.SIGTERM)  # ignored: the first signal won
        try:
            with StopFlag():
                print("computed")
        except SignalExit as stop:
            sys.exit(stop.exit_code)
        sys.exit(3)
    """)
    assert result.returncode == 128 + signal.SIGUSR1, result
    assert result.stdout.split("\n")[:2] == ["dropped SignalExit", "start-up goes on"], result


def test_a_stop_during_a_deferred_block_acts_when_the_block_ends():
    """While the CLI imports a command's modules (PyOpenCL's C++ set-up aborts the process on
    an exception raised inside it), a stop signal is only remembered; the block ends, then
    its SignalExit is raised. A second signal is ignored, as always."""
    result = _run_python("""
        import os, signal, sys
        from oclsci.runtime.signals import SignalExit, deferred_exit, install_exit_handlers
        install_exit_handlers()
        try:
            with deferred_exit():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10**6):
                    pass
                os.kill(os.getpid(), signal.SIGTERM)
                print("the block ran to its end")
        except SignalExit as stop:
            sys.exit(stop.exit_code)
        sys.exit(3)
    """)
    assert result.returncode == 128 + signal.SIGINT, result
    assert result.stdout == "the block ran to its end\n", result


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT])
def test_an_ignored_signal_never_reaches_a_compilers_handler(ignored):
    """LLVM puts its own handler on SIGINT and SIGHUP while PoCL compiles, even where they are
    ignored (`nohup`, a script's `cmd &`); run, it deletes the compiler's temporary files and the
    build fails. Inside a StopFlag such a signal stays blocked, is dropped at the next poll, and
    is ignored again once the block ends. Deterministic: the "compiler" is a Python handler."""
    code = textwrap.dedent(f"""
        import os, signal, sys
        from oclsci.runtime.signals import StopFlag, install_exit_handlers
        signal.signal({int(ignored)}, signal.SIG_IGN)  # inherited so
        install_exit_handlers()
        ran = []
        with StopFlag() as flag:
            signal.signal({int(ignored)}, lambda *_: ran.append(1))  # the compiler's handler
            os.kill(os.getpid(), {int(ignored)})
            assert {int(ignored)} in signal.sigpending()  # held, not run
            assert flag() == 0 and {int(ignored)} not in signal.sigpending()  # dropped
            os.kill(os.getpid(), {int(ignored)})  # pending when the block ends
        assert not ran and flag.signum is None
        assert signal.getsignal({int(ignored)}) == signal.SIG_IGN
        os.kill(os.getpid(), {int(ignored)})
        assert not ran
        sys.exit(3)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 3, result.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_while_reading_the_input_is_a_signal(tmp_path, signum):
    """A FIFO that nobody writes: the reader waits; the signal is reported as a signal
    (128+N, one line, no blank line before it), not as a bad input."""
    fifo = tmp_path / "in.npy"
    os.mkfifo(fifo)
    process = start_cli("jacobi", fifo, "-o", tmp_path / "x.npy")
    wait_until_handling(process, signal.SIGUSR1)  # oclsci's handlers (Python has no SIGUSR1's)
    process.send_signal(signum)
    code, stderr = finish(process)
    assert code == 128 + signum, stderr
    assert stderr == f"oclsci: error: stopped by {signal.Signals(signum).name}; " \
                     "no output written\n"


def test_bench_stops_on_a_signal_and_writes_nothing(tmp_path):
    process = start_cli("bench", "jacobi", "--quick", "--json", tmp_path / "b.json")
    wait_until_computing(process)
    process.send_signal(signal.SIGUSR1)
    code, stderr = finish(process)
    assert code == 128 + signal.SIGUSR1, stderr
    assert "SIGUSR1" in _one_line(stderr)
    assert list(tmp_path.iterdir()) == []


# Signals during writes, and stale temporary files: driven inside one process.

_WRITER = textwrap.dedent("""
    import os, signal, sys
    import click
    from oclsci.io import atomic_path, write_outputs

    def interrupted_write():
        with atomic_path(sys.argv[2]) as temporary, open(temporary, "wb") as stream:
            stream.write(b"half")
            stream.flush()
            os.kill(os.getpid(), signal.SIGUSR1)
            stream.write(b"never")

    def good_write():
        with atomic_path(sys.argv[1]) as temporary:
            temporary.write_bytes(b"whole")

    @click.command("twowrites")
    def twowrites_command():
        write_outputs([(sys.argv[1], good_write), (sys.argv[2], interrupted_write)])
""")


def test_signal_while_writing_is_held_until_the_outputs_are_complete(tmp_path):
    """A command that writes two outputs and gets SIGUSR1 in the middle of the second: both
    are written in full, no temporary file is left, the run ends as complete (exit 0) and a
    warning names the signal (issue 33, defects 1 and 8)."""
    first, second = tmp_path / "first.npy", tmp_path / "second.npy"
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "twowrites.py").write_text(_WRITER)
    runner = ("import sys; from oclsci import cli; cli.COMMANDS['twowrites'] = 'twowrites'; "
              "cli.main(['twowrites'])")
    path = os.pathsep.join([str(modules), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-c", runner, str(first), str(second)],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("oclsci: warning: SIGUSR1 came after the work was done; the "
                             "outputs were written first\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.npy", "modules", "second.npy"]
    assert second.read_bytes() == b"halfnever"


def test_write_failure_names_the_users_file(tmp_path):
    target = tmp_path / "out.npy"

    def full_disk():
        with atomic_path(target) as temporary:
            temporary.write_bytes(b"x")
            raise OSError(28, "No space left on device", str(temporary))

    with pytest.raises(OutputError) as caught:
        write_outputs([(tmp_path / "done.npy", lambda: None), (target, full_disk)])
    message = str(caught.value)
    assert message == (f"{target}: cannot write (disk full: No space left on device); written "
                       "before it: "
                       f"{tmp_path / 'done.npy'}")
    assert list(tmp_path.iterdir()) == []


def test_long_output_names_get_short_temporary_names(tmp_path):
    target = tmp_path / ("x" * 251 + ".npy")  # 255 bytes: the longest legal name
    with atomic_path(target) as temporary:
        assert len(temporary.name) < 128
        temporary.write_bytes(b"ok")
    assert target.read_bytes() == b"ok"


def test_stale_temporary_files_of_a_killed_run_are_removed(tmp_path, rhs_file):
    """kill -9 during a checkpoint write leaves a temporary file; the next run with that
    checkpoint removes it (and leaves other files, and live writers' files, alone)."""
    checkpoint = tmp_path / "c.npz"
    process = start_cli("jacobi", rhs_file, "-n", ENDLESS, "--checkpoint", checkpoint,
                        "--checkpoint-every", 1)
    wait_for_file(process, checkpoint)
    process.kill()
    process.communicate()
    dead = process.pid
    with atomic_path(checkpoint) as temporary:  # name pattern of this host and a dead pid
        stale = temporary.parent / temporary.name.replace(f"-{os.getpid()}.", f"-{dead}.")
        stale.write_bytes(b"partial")
        live = temporary.parent / temporary.name.replace(f"-{os.getpid()}.", "-1.")
        live.write_bytes(b"pid 1 is alive")
        other = tmp_path / ".unrelated.tmp"
        other.write_bytes(b"not ours")
        temporary.write_bytes(b"replaced below")
    result = run_cli("jacobi", rhs_file, "-n", "5", "--checkpoint", checkpoint, "--quiet")
    assert result.returncode == 0, result.stderr
    assert not stale.exists() and live.exists() and other.exists()
    assert load_checkpoint(checkpoint).iteration == 5


def test_api_run_stops_soon_after_it_is_asked(any_compute):
    """run(solver, 10**12, should_stop=...) acts at the next poll, whatever the count."""
    from oclsci.jacobi.runner import run
    from oclsci.jacobi.solver import JacobiSolver

    solver = JacobiSolver(any_compute, np.ones((64, 48), dtype=np.float32))
    asked = threading.Event()
    polls = []

    def should_stop() -> bool:
        polls.append(solver.iteration)
        if len(polls) == 20:
            asked.set()
        return asked.is_set()

    with pytest.raises(Interrupted):
        run(solver, 10**12, should_stop=should_stop)
    assert len(polls) == 20
    assert solver.iteration == polls[-1] < 10**12
