"""The Lomb-Scargle periodogram over MPI ranks: frequencies shared out, gathered on rank 0.

Each rank computes one contiguous band of the frequencies on its device (every frequency costs
the same) with :class:`oclsci.signal.Periodogram`; each frequency goes through the same
arithmetic as in one process, so the gathered periodogram is identical to one process's.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from oclsci.mpi.mandelbrot import gather_bands, rank_bands
from oclsci.mpi.world import World


def lombscargle_distributed(world: World, times: np.ndarray, values: np.ndarray,
                            freqs: np.ndarray, *, device: str | None, quiet: bool,
                            **options: Any) -> tuple[Any, np.ndarray | None, float]:
    """``oclsci lombscargle`` over the ranks of ``world`` (collective).

    Returns ``(compute, pgram, seconds)``: the whole periodogram on rank 0 (None elsewhere)
    and the longest device time over the ranks.
    """
    return world.run_guarded(_distributed, world, times, values, freqs, device=device,
                             quiet=quiet, **options)


def _distributed(world: World, times, values, freqs, *, device, quiet, **options):
    from oclsci.runtime.device import create_context
    from oclsci.signal import Periodogram

    compute = world.agree(create_context, device, quiet=True, local_rank=world.local_rank)
    banners = world.comm.gather(f"oclsci: rank {world.rank}: " +
                                compute.banner()[len("oclsci: "):], root=0)
    if world.is_root and not quiet:
        print("\n".join(banners), file=sys.stderr)
    bands = rank_bands(freqs.size, world.size, world.rank)
    plans = world.agree(lambda: {first: Periodogram(compute, times, values,
                                                    freqs[first:first + count], **options)
                                 for first, count in bands})
    seconds = {"device": 0.0}

    def band(first: int, count: int) -> dict:
        plan = plans[first]
        pgram = plan.run().get()
        seconds["device"] += plan.timings.device_seconds
        return {"pgram": pgram}

    full, _ = gather_bands(world, freqs.size, band)
    device_seconds = world.allreduce_max(seconds["device"])
    if not world.is_root:
        return compute, None, device_seconds
    if not quiet:
        print(f"mpi: {world.size} ranks, frequencies shared out in contiguous bands, gathered "
              "on rank 0; device time: the slowest rank")
    return compute, full["pgram"], device_seconds
