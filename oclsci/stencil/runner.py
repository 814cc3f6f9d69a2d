"""The loop that runs a stencil's steps: paced chunks of launches between the points where a
run must stop (halo exchanges over MPI ranks, checkpoints, polls for stop requests).

:func:`run_steps` takes a :class:`~oclsci.stencil.solver.StencilSolver` (one device's grid or
one rank's slab) and a ``halo``: :class:`OneDevice`, or an MPI rank's
:class:`~oclsci.mpi.slabs.SlabHalo`, which exchanges ghost layers and agrees on stops over
the ranks. Every rank takes the same decisions at the same steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oclsci.errors import Interrupted
from oclsci.runtime.launch import Pacer
from oclsci.runtime.signals import EXIT_SIGNAL_BASE, signal_name, stop_exit_code


class OneDevice:
    """The halo of a run on one device: nothing to exchange, its own stop requests."""

    steps_between_exchanges = 0

    def exchange(self, solver: Any) -> None:
        """Nothing to exchange on one device."""

    def agree(self, stop: Any, launches: int) -> tuple[Any, int]:
        """One device: its own stop request and chunk size."""
        return stop, launches


def run_steps(solver: Any, steps: int, *, done: int | None = None, halo: Any = None,
              progress: Callable[[int, int], None] | None = None,
              should_stop: Callable[[], Any] | None = None,
              checkpoint: Callable[[int], None] | None = None,
              checkpoint_every: int = 0) -> int:
    """Advance ``solver`` until the run has done ``steps`` steps in all; return that count.

    ``done``: the steps the run had done when ``solver`` started (a resumed run's; default
    ``solver.iteration``). Between chunks of launches (the host about a tenth of a second
    ahead of the device): exchange ghost layers every ``halo.steps_between_exchanges`` of the
    solver's steps, call ``checkpoint(done)`` every ``checkpoint_every`` steps of the run,
    report ``progress(done, steps)`` (the last at the end) and, when ``should_stop()``
    answers true (a stop signal's number, agreed over ranks by ``halo.agree``), call
    ``checkpoint(done)`` when given and raise :class:`~oclsci.errors.Interrupted`: exit 75
    after a checkpoint, else 128 + the signal's number.
    """
    halo = halo or OneDevice()
    per_launch = solver.steps_per_launch
    period = halo.steps_between_exchanges
    done = solver.iteration if done is None else int(done)
    pacer = Pacer()
    next_poll = done + pacer.launches() * per_launch
    periodic = checkpoint_every if checkpoint else 0
    reported = done
    while done < steps:
        ends = [steps, next_poll]
        if period:
            ends.append(done + period - solver.iteration % period)
        if periodic:
            ends.append((done // periodic + 1) * periodic)
        chunk = min(ends) - done
        pacer.submitted(solver.advance(chunk), -(-chunk // per_launch))
        done += chunk
        if period and solver.iteration % period == 0:
            halo.exchange(solver)
        if periodic and done % periodic == 0 and done < steps:
            checkpoint(done)
        if done < next_poll:
            continue
        # Every rank polls at the same step and agrees on the next poll.
        stop, launches = halo.agree(should_stop() if should_stop else False, pacer.launches())
        next_poll = done + launches * per_launch
        if progress:
            progress(done, steps)
            reported = done
        if stop and done < steps:
            pacer.drain()
            code = stop_exit_code(stop)
            signum = code - EXIT_SIGNAL_BASE if code > EXIT_SIGNAL_BASE else None
            by = signal_name(signum) if signum else "a stop request"
            if checkpoint:
                checkpoint(done)
                raise Interrupted(f"stopped by {by} at step {done}; checkpoint written",
                                  signum=signum)
            raise Interrupted(f"stopped by {by} at step {done}", exit_code=code, signum=signum)
    pacer.drain()
    if progress and reported < done:
        progress(done, steps)
    return done
