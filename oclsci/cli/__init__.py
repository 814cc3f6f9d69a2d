"""The ``oclsci`` command: a thin layer that parses options, calls the API and prints.

Each command lives in its own module of this package and is imported only when used; the
options that several share are defined here once, with the progress display of long runs.
User errors print one line and exit non-zero; ``--debug`` shows the traceback instead.

Progress goes to stderr: a bar on a terminal; without one (a batch job's log, a redirected run)
a line at a steady interval (``--progress-every``); nothing with ``--quiet``. Each maker takes
``(total, start)`` and is a context manager yielding ``update(done, total)``, as
:func:`oclsci.driver.drive` expects.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import math
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any

import click

from oclsci import __version__, distributed_commands, workload_commands
from oclsci.errors import KernelBuildError, OclsciError, OclsciWarning, first_line
from oclsci.runtime import wants_mpi
from oclsci.runtime.signals import (
    EXIT_SIGNAL_BASE,
    SignalExit,
    deferred_exit,
    forget_exit,
    install_exit_handlers,
)

# Command name -> module defining a click command of the same name.
# The tools, then every workload's commands (oclsci.WORKLOADS).
COMMANDS = {
    "devices": "oclsci.cli.devices",
    **workload_commands(),
    "bench": "oclsci.cli.bench",
    "tune": "oclsci.cli.tune",
    "selftest": "oclsci.cli.selftest",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (fast start, no unused imports)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, module in COMMANDS.items()
                      if importlib.util.find_spec(module) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None or importlib.util.find_spec(module_name) is None:
            return None
        with deferred_exit():  # PyOpenCL's set-up aborts on an exception raised inside it
            module = importlib.import_module(module_name)
        return getattr(module, cmd_name.replace("-", "_") + "_command")


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oclsci")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """oclsci: vendor-neutral OpenCL solvers for NVIDIA, AMD and Intel GPUs and CPUs (PoCL).

    The device comes from --device SPEC, then PYOPENCL_CTX (e.g. '0:1', 'nvidia',
    'portable:0'), then the first GPU, then the first device.
    """
    ctx.obj = {"debug": debug}


# Click >= 8.2 raises this usage error (exit 2) for a group run without arguments; older
# clicks print the help and exit 0, as oclsci does with either.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _DiagnosticStream:
    """Standard error for a run's messages (device line, progress, warnings, errors): a
    message that cannot be written (a full disk under a batch job's log, a closed
    descriptor) is dropped rather than ending the run."""

    def __init__(self, stream: IO[str] | None):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            if self._stream is not None:
                self._stream.write(text)
        except (OSError, ValueError):
            pass
        return len(text)

    def flush(self) -> None:
        try:
            if self._stream is not None:
                self._stream.flush()
        except (OSError, ValueError):
            pass

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "_stream" or self.__dict__.get("_stream") is None:
            raise AttributeError(name)  # no stream (closed at start), or not made yet (copy)
        return getattr(self._stream, name)


def _error(message: str) -> None:
    click.echo(f"oclsci: error: {message}", err=True)


def _show_warnings_as_lines() -> None:
    """Show :class:`OclsciWarning` as one line ``oclsci: warning: ...``, others as Python does."""
    python_show = warnings.showwarning
    if getattr(python_show, "shows_oclsci_warnings", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, OclsciWarning):
            click.echo(f"oclsci: warning: {message}", err=True)
        else:
            python_show(message, category, filename, lineno, file, line)

    show.shows_oclsci_warnings = True
    warnings.showwarning = show


# The commands whose ranks work together over MPI: they agree on the command line at start.
# Others (--version, devices, help) never start MPI: a launcher's task may run them as plain
# subprocesses, whose MPI connection (PMI's descriptor) is not inherited.
DISTRIBUTED_COMMANDS = distributed_commands()


def _runs_as_ranks(args: list[str]) -> bool:
    """Whether ``oclsci ARGS`` runs a distributed command (help excepted)."""
    words = [arg for arg in args if not arg.startswith("-")]
    return bool(words) and words[0] in DISTRIBUTED_COMMANDS and \
        not {"--help", "-h"} & set(args)


def _end_every_rank(error: BaseException) -> None:
    """Under MPI, end every rank (one line, MPI_Abort) for an error the ranks did not agree
    on: raised outside a run's guarded part (a signal while a rank starts, before it joins
    the others), it would leave them waiting for this rank forever. Returns otherwise."""
    if getattr(error, "oclsci_agreed", False):
        return
    world_module = sys.modules.get("oclsci.mpi.world")  # loaded only under a launcher
    world = getattr(world_module, "_WORLD", None) if world_module is not None else None
    if world and world.size > 1:
        world.abort(error)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``oclsci`` console script."""
    previous = sys.stderr
    sys.stderr = _DiagnosticStream(previous)  # messages never end a run
    try:
        _main(argv)
    finally:
        sys.stderr = previous
        forget_exit()  # a later call of the API in this process starts afresh


def _main(argv: list[str] | None) -> None:
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    _show_warnings_as_lines()
    try:
        install_exit_handlers()  # SIGINT too: no KeyboardInterrupt for click to catch
        args = list(sys.argv[1:] if argv is None else argv)
        if wants_mpi() and _runs_as_ranks(args):  # the same command on every rank, at start
            with deferred_exit():  # it imports PyOpenCL (and MPI)
                from oclsci.mpi.world import agree_on_command

            agree_on_command(args)
        cli.main(args=argv, prog_name="oclsci", standalone_mode=False)
    except SignalExit as stop:
        _end_every_rank(stop)
        written = getattr(stop, "written", None)
        _error(f"stopped by {stop}; " + (f"written before it: {', '.join(written)}" if written
                                         else "no output written"))
        sys.exit(stop.exit_code)
    except click.exceptions.Abort:
        _error("interrupted")
        sys.exit(EXIT_SIGNAL_BASE + signal.SIGINT)
    except _NO_ARGS_IS_HELP as error:  # `oclsci` alone: its help on stdout, exit 0
        click.echo(error.ctx.get_help())
        sys.exit(0)
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx else "oclsci"
        _error(f"{error.format_message()} (see `{command} --help`)")
        sys.exit(error.exit_code)
    except click.ClickException as error:
        _error(error.format_message())
        sys.exit(error.exit_code)
    except click.exceptions.Exit as error:
        sys.exit(error.exit_code)
    except Exception as error:  # noqa: BLE001 - every error becomes one line unless --debug
        if debug:
            raise
        _end_every_rank(error)
        sys.exit(_report(error))
    except KeyboardInterrupt:
        _error("interrupted (SIGINT)")
        sys.exit(EXIT_SIGNAL_BASE + signal.SIGINT)


def _report(error: Exception) -> int:
    """Print one line for ``error`` and return the exit code."""
    if isinstance(error, OclsciError):
        _error(first_line(error))  # a build failure's line names its saved log, if saved
        if isinstance(error, KernelBuildError) and error.log_path is None and \
                error.build_log.strip():
            click.echo("build log:\n" + error.build_log.rstrip(), err=True)
        return error.exit_code
    import pyopencl as cl  # here, not above: `oclsci --help` and `--version` start without it

    if isinstance(error, cl.Error):
        _error(first_line(error, with_type=True))
        return 1
    if isinstance(error, MemoryError):
        _error("out of host memory")
        return 1
    if isinstance(error, OSError):
        _error(f"{error.strerror or first_line(error)}: {error.filename or ''}".rstrip(": "))
        return 1
    _error(f"internal error ({first_line(error, with_type=True)}); rerun with --debug and "
           "report it")
    return 1


# -- options shared by several commands, and the progress display of long runs ----------------

device_option = click.option(
    "--device", "device", metavar="SPEC", default=None,
    help="OpenCL device, as PYOPENCL_CTX: 'P:D', 'nvidia', 'portable:0' (default: "
         "$PYOPENCL_TEST, then $PYOPENCL_CTX; under MPI the rank's GPU of its node; then the "
         "first GPU, then the first device).")

quiet_option = click.option(
    "--quiet", "-q", is_flag=True, help="Print no device line, progress bar or summary.")

dtype_option = click.option(
    "--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
    help="Floating-point type of the computation.")

DEFAULT_SECONDS = 60.0


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not math.isfinite(value):
        raise click.BadParameter(f"must be a number of seconds, got {value}")
    return value


progress_every_option = click.option(
    "--progress-every", "progress_every", type=click.FloatRange(min=0), default=DEFAULT_SECONDS,
    show_default=True, metavar="SECONDS", callback=_finite,
    help="Without a terminal (a batch job's log): print a progress line every SECONDS, and "
         "one at the end (0: at every poll of the run). With a terminal a bar shows instead.")


@contextlib.contextmanager
def progress_bar(total: int, start: int, *, label: str, unit: str = "step",
                 units: str = "steps") -> Iterator[Callable[..., None]]:
    """A progress bar on stderr from ``start`` to ``total`` (``unit``: for the log's lines
    only)."""
    bar = click.progressbar(length=max(total - start, 1), label=label, file=sys.stderr,
                            show_eta=True, show_percent=True)
    shown = start

    def update(done: int, total_: int, note: str = "") -> None:
        nonlocal shown
        bar.update(done - shown)
        shown = done

    try:
        yield update
    finally:
        bar.render_finish()


def format_duration(seconds: float) -> str:
    """``seconds`` as ``1h02m03s``, ``2m03s`` or ``3.4s``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


@contextlib.contextmanager
def progress_log(total: int, start: int, *, label: str, every: float, unit: str = "step",
                 units: str = "steps", clock: Callable[[], float] = time.monotonic,
                 stream: IO[str] | None = None) -> Iterator[Callable[..., None]]:
    """Lines on stderr (``stream``), at most one per ``every`` seconds of ``clock``: the
    ``unit`` done of ``total``, rate and time left, and the caller's ``note`` (a residual);
    and, after a run that printed any (or with ``every`` 0), one when it has finished (not
    when it stops on an error or a signal)."""
    stream = sys.stderr if stream is None else stream
    began = last = clock()
    printed = False

    def line(done: int, total_: int, now: float, note: str) -> str:
        elapsed = now - began
        rate = (done - start) / elapsed if elapsed > 0 else 0.0
        text = (f"oclsci: {label}: {unit} {done} of {total_} ({100 * done / total_:.1f}%), "
                f"{format_duration(elapsed)} elapsed")
        if rate > 0 and done < total_:
            speed = f"{rate:.0f}" if rate >= 100 else f"{rate:.3g}"
            text += f", {speed} {units}/s, about {format_duration((total_ - done) / rate)} left"
        return text + (f", {note}" if note else "")

    def update(done: int, total_: int, note: str = "") -> None:
        nonlocal last, printed
        now = clock()
        if now - last >= every:
            print(line(done, total_, now, note), file=stream, flush=True)
            last, printed = now, True

    yield update
    if printed or every == 0:
        print(f"oclsci: {label}: finished in {format_duration(clock() - began)}", file=stream,
              flush=True)


def progress_maker(quiet: bool, every: float, label: str, unit: str = "step",
                   units: str = "steps") -> Callable[..., Any] | None:
    """The progress display a command shows: None with ``quiet``, a bar on a terminal, else
    a line every ``every`` seconds, counting ``unit``s."""
    if quiet:
        return None
    if sys.stderr.isatty():
        return functools.partial(progress_bar, label=label, unit=unit, units=units)
    return functools.partial(progress_log, label=label, every=every, unit=unit, units=units)
