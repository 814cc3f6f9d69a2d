"""Options shared by several commands, defined once, and the progress display of long ones.

Progress goes to stderr: a bar on a terminal; without one (a batch job's log, a redirected run)
a line at a steady interval (``--progress-every``); nothing with ``--quiet``. Each maker takes
``(total, start)`` and is a context manager yielding ``update(done, total)``, as
:func:`oclsci.driver.drive` expects.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import click

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

