"""Shared fixtures and the one way to run the command line in tests.

Tests run on every available OpenCL device (PoCL in CI). Set OCLSCI_TEST_DEVICES to a
comma-separated list of SPECs to choose the devices; by default every device of every platform
except Oclgrind's simulator (whose tests are marked ``oclgrind`` and pick it explicitly).

The command line runs as users run it, ``python -m oclsci ARGS`` in a subprocess:
:func:`run_cli` waits for it, :func:`start_cli` returns the running process (for signals), and
the :func:`invoke_cli` fixture calls ``oclsci.cli.main`` in this process where a test needs no
process of its own. Import the functions with ``from conftest import run_cli, start_cli``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from oclsci.cli import main
from oclsci.errors import NoPlatformError
from oclsci.runtime import signals
from oclsci.runtime.device import create_context
from oclsci.runtime.selection import get_platforms

REPO_ROOT = Path(__file__).resolve().parent.parent  # the checkout: tests/ is one level down
CLI_TIMEOUT_S = 600  # a run that takes longer hangs: a failure, never a measurement


def _device_specs() -> list[str]:
    chosen = os.environ.get("OCLSCI_TEST_DEVICES")
    if chosen:
        return [spec.strip() for spec in chosen.split(",") if spec.strip()]
    try:
        platforms = get_platforms()
    except NoPlatformError:
        return []
    return [f"{p}:{d}" for p, platform in enumerate(platforms)
            if "oclgrind" not in platform.name.lower()
            for d, _ in enumerate(platform.get_devices())]


DEVICE_SPECS = _device_specs()

STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP)


def _let_children_start_with_default_signals() -> None:
    """Make the commands the tests start see the stop signals as a shell's job would.

    A runner that starts pytest under ``nohup`` (or with the signals ignored or blocked) passes
    that on through exec, and oclsci keeps an inherited SIG_IGN of SIGHUP and SIGINT. A Python
    handler is reset to the default on exec, so this process keeps ignoring such a signal and
    its children do not; the tests of the inherited case set it themselves (``preexec_fn``).
    """
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) == signal.SIG_IGN or signum in blocked:
            signal.signal(signum, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


_let_children_start_with_default_signals()


@pytest.fixture(autouse=True)
def _stop_signals_as_before():
    """Undo what an in-process CLI run (:func:`invoke_cli`) leaves behind: its handlers, or
    the stop signals ignored once its work was done, as the command's process would end then.
    Commands that later tests start would otherwise inherit the ignored signals."""
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    state = (signals._ENDS_AFTER_WORK, set(signals._INHERITED_IGNORED), dict(signals._OURS))
    yield
    for signum, handler in before.items():
        if handler is not None and signal.getsignal(signum) is not handler:
            signal.signal(signum, handler)
    signals._ENDS_AFTER_WORK = state[0]
    signals._INHERITED_IGNORED.clear()
    signals._INHERITED_IGNORED.update(state[1])
    signals._OURS.clear()
    signals._OURS.update(state[2])


def in_ci() -> bool:
    """Whether the tests run in CI (``CI=true``, set by .ci/run), where every system tool
    that a suite needs is installed."""
    return os.environ.get("CI", "").lower() == "true"


def tool_missing(reason: str) -> None:
    """Skip a test whose system tool is missing, with ``reason``; in CI fail instead, since
    the missing tool means a broken set-up, not an optional suite."""
    if in_ci():
        pytest.fail(f"CI needs this tool: {reason}", pytrace=False)
    pytest.skip(reason)


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str,
                          code: int | None = None) -> None:
    """A failed command: exit ``code`` (any non-zero one by default) and a single
    ``oclsci: error:`` line on stderr holding every fragment, no traceback."""
    if code is None:
        assert result.returncode != 0, (result.returncode, result.stderr)
    else:
        assert result.returncode == code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def cli_command(*args, launcher: Sequence[str] = ()) -> list[str]:
    """The argv of ``python -m oclsci ARGS`` (after ``launcher``, e.g. ``mpiexec -n 2``)."""
    return [*map(str, launcher), sys.executable, "-m", "oclsci", *map(str, args)]


def _environment(env: dict | None, extra_env: dict | None) -> dict | None:
    if extra_env is None:
        return env
    return {**(os.environ if env is None else env), **extra_env}


def run_cli(*args, env: dict | None = None, extra_env: dict | None = None, cwd=None,
            timeout: float = CLI_TIMEOUT_S, check_exit: int | None = None,
            launcher: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """Run ``python -m oclsci ARGS`` to its end; return the CompletedProcess (text output).

    ``env`` is the whole environment (default: this process's), ``extra_env`` variables set on
    top of it. stdin is /dev/null, as in a batch job. ``check_exit`` asserts the exit status
    (with the output in the message). A run past ``timeout`` seconds is a failure.
    """
    try:
        result = subprocess.run(cli_command(*args, launcher=launcher), cwd=cwd,
                                env=_environment(env, extra_env), stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"oclsci {list(map(str, args))} did not finish within "
                             f"{timeout} s (hang?)") from None
    if check_exit is not None and result.returncode != check_exit:
        raise AssertionError(f"oclsci {list(map(str, args))} exited {result.returncode}, not "
                             f"{check_exit}:\n{result.stdout}\n{result.stderr}")
    return result


def start_cli(*args, env: dict | None = None, extra_env: dict | None = None,
              cwd=None) -> subprocess.Popen:
    """Start ``python -m oclsci ARGS`` with stdin from /dev/null and output to pipes (no TTY).

    ``env`` and ``extra_env`` as for :func:`run_cli`. The caller waits for the process (and
    kills it in a ``finally``).
    """
    return subprocess.Popen(cli_command(*args), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            env=_environment(env, extra_env))


@pytest.fixture
def invoke_cli(capsys):
    """Run ``oclsci ARGS`` in this process: a function returning (exit code, stdout, stderr)."""
    def invoke(*args) -> tuple[int, str, str]:
        code = 0
        try:
            main(list(map(str, args)))
        except SystemExit as stop:
            code = stop.code or 0
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


@pytest.fixture(params=DEVICE_SPECS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no OpenCL device: pip install 'oclsci[pocl]'"))])
def compute(request):
    """A ComputeContext for each test device in turn."""
    return create_context(request.param)


@pytest.fixture
def any_compute():
    """A ComputeContext on the first test device (for tests that need just one device)."""
    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device: pip install 'oclsci[pocl]'")
    return create_context(DEVICE_SPECS[0])


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(items):
    """Tests that start ranks under mpiexec (marked ``mpi``) are ``slow`` too: they stay out of
    the everyday subset."""
    for item in items:
        if item.get_closest_marker("mpi") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
