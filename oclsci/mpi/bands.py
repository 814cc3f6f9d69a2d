"""Bands of rows shared out over MPI ranks and gathered on rank 0, for workloads whose rows
(or frequencies) are independent: each rank computes its bands, rank 0 assembles them
(Mandelbrot's rows, Lomb-Scargle's frequencies)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from oclsci.mpi.slabs import split_rows
from oclsci.mpi.world import TAG_GATHER, World
from oclsci.runtime.signals import SignalExit


def rank_bands(height: int, parts: int, rank: int,
               bands_per_rank: int = 1) -> list[tuple[int, int]]:
    """``(first_row, row_count)`` of the bands of ``rank``: the image's rows cut into
    ``parts * bands_per_rank`` contiguous bands, dealt out in turn (more than one band per
    rank spreads the costly rows of a Mandelbrot image over the ranks)."""
    total = max(1, min(int(height), parts * max(1, int(bands_per_rank))))
    bounds = split_rows(int(height), total)
    return [(start, stop - start) for start, stop in bounds[rank::parts] if stop > start]


def gather_bands(world: World, height: int, compute_band: Callable[[int, int], dict],
                 bands_per_rank: int = 1, stop_flag: Any = None,
                 final: bool = True) -> tuple[dict | None, float]:
    """Compute this rank's bands of rows and gather whole images on rank 0 (collective).

    ``compute_band(first_row, row_count)`` returns a dict of arrays with ``row_count`` rows
    (e.g. ``{"counts": ..., "smooth": ...}``); the same names, dtypes and widths on every
    rank. Rank 0 gets ``{name: array with height rows}``, the others None; every rank gets
    the longest computing time over ranks, in seconds. ``stop_flag``: a raising StopFlag
    whose peers are the ranks (:meth:`World.share_stops`); a stop signal taken on any rank
    stops every rank before the gather (see :meth:`World.settle_stop`, and ``final``).
    """
    started = time.perf_counter()
    pieces = []
    try:
        for first, count in rank_bands(height, world.size, world.rank, bands_per_rank):
            pieces.append((first, compute_band(first, count)))
    except SignalExit:
        if stop_flag is None:
            raise
    if stop_flag is not None:
        world.settle_stop(stop_flag, final)
    seconds = world.allreduce_max(time.perf_counter() - started)
    layouts = world.comm.gather([(first, {name: (array.dtype.str, array.shape)
                                          for name, array in piece.items()})
                                 for first, piece in pieces], root=0)
    if not world.is_root:
        for _, piece in pieces:
            for name in sorted(piece):
                world.send_array(piece[name], 0, TAG_GATHER)
        return None, seconds
    names = {name: (dtype, shape[1:]) for layout in layouts for _, arrays in layout
             for name, (dtype, shape) in arrays.items()}
    full = {name: np.empty((int(height), *rest), dtype=np.dtype(dtype))
            for name, (dtype, rest) in names.items()}
    for first, piece in pieces:
        for name, array in piece.items():
            full[name][first:first + len(array)] = array
    for rank in range(1, world.size):
        for first, arrays in layouts[rank]:
            for name in sorted(arrays):
                rows = arrays[name][1][0]
                target = full[name][first:first + rows]
                world.recv_array(target, rank, TAG_GATHER)
    return full, seconds
