"""One run of a workload, from its job to its written outputs, on one device or over MPI ranks.

Every workload command (``oclsci jacobi``, ``poisson``, ``mandelbrot``, ``lombscargle``,
``stencil``) parses its options into a job, a frozen record, and its workload hands the job to
:func:`drive` with the maker of its :class:`Runner`. The driver

- picks the placement (:func:`launched_placement`): this process's device, or the ranks of
  the MPI world when a launcher started several (only then is :mod:`oclsci.mpi` imported);
- runs the job guarded: under MPI, an error that not every rank saw aborts every rank;
- holds the stop signals (:class:`~oclsci.runtime.signals.StopFlag`) from the device's
  creation on: one that comes while kernels build or run stops the run (128 + N and nothing
  written, or what the runner keeps; under MPI on every rank), one that comes once the work
  is done waits for the outputs;
- writes the outputs atomically on the root (:func:`oclsci.io.write_outputs`), errors agreed;
- returns the runner's outcome on the root, None on the other ranks.

It prints nothing: ``progress`` (a maker of progress displays) and ``notify`` (the device
lines for stderr) come from the caller, and reach the root's runner only. The runner does
what is the workload's own: check and read the inputs, solve on the placement, name the
outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from oclsci.io import write_outputs
from oclsci.runtime import wants_mpi
from oclsci.runtime.device import create_context
from oclsci.runtime.signals import StopFlag

# progress(total, start) -> a context manager yielding update(done, total[, note]).
ProgressUpdate = Callable[..., None]
ProgressFactory = Callable[[int, int], contextlib.AbstractContextManager[ProgressUpdate]]
Notify = Callable[[str], None]
Writes = Iterable[tuple[Any, Callable[[], Any]]]


class Placement(Protocol):
    """Where a job runs: this process's device, or the ranks of an MPI world."""

    is_root: bool  # reads the inputs, writes the outputs, gets the outcome
    world: Any  # the MPI world (oclsci.mpi.world.World), None on one device

    def guarded(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run the whole job ``function(*args)``."""

    def agree(self, function: Callable[[], Any]) -> Any:
        """Run ``function`` on every rank; an error on any is raised on all."""

    def share(self, value: Any) -> Any:
        """The root's ``value`` on every rank."""

    def open_device(self, device: str | None, notify: Notify | None) -> Any:
        """This rank's ComputeContext; the root tells ``notify`` the device lines."""


class Runner(Protocol):
    """A workload's part of one run on one placement, made by the workload for a job."""

    # True: a stop signal raises SignalExit at the next poll (nothing to keep). False: the
    # runner's solve acts on it (a checkpoint, a stop agreed over ranks).
    raising: bool

    def prepare(self) -> None:
        """Check the job and read its inputs, before the device opens (errors agreed)."""

    def solve(self, compute: Any, stop_flag: StopFlag, progress: ProgressFactory | None,
              notify: Notify | None) -> Any:
        """Compute on ``compute``; the outcome on the root, None elsewhere (collective)."""

    def outputs(self, outcome: Any) -> Writes:
        """The root's ``(path, write)`` pairs, in order (a None path is skipped)."""


class OneDevicePlacement:
    """The whole job on this process's one device."""

    is_root = True
    world = None

    def guarded(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run ``function(*args)``: its errors go to the caller as they are."""
        return function(*args)

    def agree(self, function: Callable[[], Any]) -> Any:
        """Run ``function``."""
        return function()

    def share(self, value: Any) -> Any:
        """``value`` itself."""
        return value

    def open_device(self, device: str | None, notify: Notify | None) -> Any:
        """The device of ``--device``, ``PYOPENCL_CTX`` or the default choice."""
        compute = create_context(device)
        if notify is not None:
            notify(compute.banner())
        return compute


class RanksPlacement:
    """The job over the ranks of an MPI ``world``: rank 0 reads, writes and gets the outcome;
    an error that all ranks see is raised once, by rank 0 (the others end with its exit code
    and say nothing); an error on one rank aborts every rank."""

    def __init__(self, world: Any):
        self.world = world
        self.is_root = world.is_root

    def guarded(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run ``function(*args)``; an error that not every rank saw aborts every rank."""
        return self.world.run_guarded(function, *args)

    def agree(self, function: Callable[[], Any]) -> Any:
        """``World.agree``."""
        return self.world.agree(function)

    def share(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        return self.world.bcast(value)

    def open_device(self, device: str | None, notify: Notify | None) -> Any:
        """This rank's device (its node-local GPU); rank 0 tells ``notify`` every rank's."""
        return self.world.open_device(device, notify)


def launched_placement() -> Placement:
    """The ranks of the MPI world when a launcher started this process as one of several,
    else this process's device. Imports :mod:`oclsci.mpi` (and mpi4py) only in the first
    case: a one-device run loads none of it."""
    if wants_mpi():
        from oclsci.mpi.world import mpi_world

        world = mpi_world()
        if world is not None:
            return RanksPlacement(world)
    return OneDevicePlacement()


def on_root(placement: Placement, function: Callable[[], Any]) -> Any:
    """``function()`` on the root (None elsewhere), its errors raised on every rank."""
    return placement.agree(lambda: function() if placement.is_root else None)


@contextlib.contextmanager
def shown(progress: ProgressFactory | None, total: int,
          start: int = 0) -> Iterator[ProgressUpdate | None]:
    """``progress(total, start)``'s ``update`` while the block runs, or None without one."""
    if progress is None:
        yield None
        return
    with progress(total, start) as update:
        yield update


def drive(job: Any, runner: Callable[[Any, Placement], Runner], *,
          placement: Placement | None = None, progress: ProgressFactory | None = None,
          notify: Notify | None = None) -> Any:
    """Run ``job`` to its written outputs; return its outcome (None on the other ranks).

    ``runner(job, placement)`` makes the workload's :class:`Runner`; ``placement``:
    :func:`launched_placement` when None; ``job.device`` names the device. The outcome gets
    ``written``, the paths written.
    """
    placement = placement or launched_placement()
    if not placement.is_root:
        progress = notify = None
    return placement.guarded(_drive, job.device, runner(job, placement), placement, progress,
                             notify)


def _drive(device: str | None, runner: Runner, placement: Placement,
           progress: ProgressFactory | None, notify: Notify | None) -> Any:
    runner.prepare()
    with StopFlag(raising=runner.raising) as stop_flag:
        stop_flag.report_late = placement.is_root
        compute = placement.open_device(device, notify)
        outcome = runner.solve(compute, stop_flag, progress, notify)
        stop_flag.work_done()

        def finish() -> Any:
            outcome.written = write_outputs(runner.outputs(outcome))
            return outcome

        return on_root(placement, finish)
