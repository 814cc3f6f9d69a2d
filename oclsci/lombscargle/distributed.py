"""The Lomb-Scargle periodogram over MPI ranks: frequencies shared out, gathered on rank 0.

Each rank computes one contiguous band of the frequencies on its device (every frequency costs
the same) with :class:`oclsci.lombscargle.Periodogram`; each frequency goes through the same
arithmetic as in one process, so the gathered periodogram is identical to one process's.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import numpy as np

from oclsci.lombscargle import Periodogram
from oclsci.mpi.bands import gather_bands, rank_bands
from oclsci.mpi.world import World


def describe_frequency_bands(world: World) -> str:
    """One line on how :func:`periodogram_on_ranks` shares the frequencies out."""
    return (f"mpi: {world.size} ranks, frequencies shared out in contiguous bands, gathered "
            "on rank 0; device time: the slowest rank")


def periodogram_on_ranks(world: World, compute: Any, times: np.ndarray, values: np.ndarray,
                         freqs: np.ndarray, *, stop_flag: Any = None, progress: Any = None,
                         **options: Any) -> tuple[np.ndarray | None, float]:
    """The periodogram of ``(times, values)`` at ``freqs`` over the ranks of ``world``, each
    on its ``compute`` (collective; every rank passes the same samples and frequencies).

    Returns ``(pgram, seconds)``: the whole periodogram on rank 0 (None elsewhere) and the
    longest device time over the ranks. ``stop_flag``: the raising StopFlag around the call;
    it is polled between launches and a stop signal to any rank stops them all (rank 0 raises
    SignalExit, the others exit with 128 + N); once the bands are computed one only waits for
    the outputs. ``progress(total, start)``: a progress display as for
    :func:`oclsci.driver.drive`; rank 0 reports its own frequencies with it.
    """
    if stop_flag is not None:
        world.share_stops(stop_flag)
    bands = rank_bands(freqs.size, world.size, world.rank)
    plans = world.agree(lambda: {first: Periodogram(compute, times, values,
                                                    freqs[first:first + count], **options)
                                 for first, count in bands})
    seconds = {"device": 0.0}
    mine = sum(count for _, count in bands)
    done = {"before": 0}

    def band(first: int, count: int, update: Any) -> dict:
        plan = plans[first]
        report = None if update is None else \
            (lambda k, _total: update(done["before"] + k, mine))
        pgram = plan.run(should_stop=stop_flag, progress=report).get()
        done["before"] += count
        seconds["device"] += plan.timings.device_seconds
        return {"pgram": pgram}

    shown = progress(mine, 0) if progress is not None and world.is_root \
        else contextlib.nullcontext()
    with shown as update:
        full, _ = gather_bands(world, freqs.size, functools.partial(band, update=update),
                               stop_flag=stop_flag)
    device_seconds = world.allreduce_max(seconds["device"])
    if not world.is_root:
        return None, device_seconds
    return full["pgram"], device_seconds
