"""Rows shared out and gathered: Mandelbrot and other row-independent images over ranks."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from oclsci.mandelbrot.renderer import MandelbrotRenderer, MandelbrotResult, MandelbrotTimings
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


DEFAULT_BANDS_PER_RANK = 4


def resolve_bands_per_rank(requested: int | None = None) -> int:
    """``requested``, else ``OCLSCI_MPI_BANDS`` when a positive integer, else 4."""
    if requested is not None:
        return requested
    text = os.environ.get("OCLSCI_MPI_BANDS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_BANDS_PER_RANK


def describe_bands(world: World, height: int, bands_per_rank: int | None = None) -> str:
    """One line on how :func:`mandelbrot_distributed` shares out ``height`` rows."""
    per_rank = resolve_bands_per_rank(bands_per_rank)
    bands = rank_bands(height, world.size, 0, per_rank)
    return (f"mpi: {world.size} ranks, {len(bands)} band(s) of rows each on rank 0 "
            f"({per_rank} per rank), gathered on rank 0; times below: the slowest rank")


def mandelbrot_distributed(world: World, *, device: str | None, quiet: bool, repeat: int,
                           want_smooth: bool, bands_per_rank: int | None = None,
                           notify: Callable[[str], None] | None = None,
                           stop_flag: Any = None,
                           **params: Any) -> tuple[Any, Any, Any, list | None]:
    """``oclsci mandelbrot`` over the ranks of ``world``: rows shared out, gathered on rank 0.

    Each rank renders ``bands_per_rank`` bands of rows (see :func:`resolve_bands_per_rank`),
    dealt out in turn so that the costly rows near the set are spread over the ranks; the
    bands are exact pieces of the one-device image. The image is computed ``repeat`` times.
    Returns ``(compute, renderer, result, timings)``: on rank 0 the last computation's whole
    image as a :class:`~oclsci.mandelbrot.MandelbrotResult` (only it is kept: memory does not
    grow with ``repeat``) and the ``repeat`` computations'
    :class:`~oclsci.mandelbrot.MandelbrotTimings` (the slowest rank's device times, and the
    wall time of computing and gathering); on the other ranks ``result`` and ``timings`` are
    None.
    Unless ``quiet``, rank 0 passes the ranks' device lines to ``notify``;
    :func:`describe_bands` says how the rows were shared out. ``stop_flag``: the raising
    StopFlag around the call; a stop signal to any rank then stops them all (rank 0 raises
    SignalExit, the others exit with 128 + N), and once the images are computed one only
    waits for the outputs.
    """
    return world.run_guarded(_mandelbrot_distributed, world, device=device,
                             notify=None if quiet else notify, repeat=repeat,
                             want_smooth=want_smooth, bands_per_rank=bands_per_rank,
                             stop_flag=stop_flag, **params)


def _mandelbrot_distributed(world: World, *, device, notify, repeat, want_smooth,
                            bands_per_rank, stop_flag, **params):
    bands_per_rank = resolve_bands_per_rank(bands_per_rank)
    compute = world.open_device(device, notify)
    height = int(params["height"])
    bands = rank_bands(height, world.size, world.rank, bands_per_rank)
    renderers = world.agree(lambda: {first: MandelbrotRenderer(compute, rows=(first, count),
                                                               **params)
                                     for first, count in bands})
    result, timings = None, []
    for repeat_index in range(repeat):
        times = {"kernel": 0.0, "total": 0.0}

        def band(first: int, count: int, times: dict = times) -> dict:
            result = renderers[first].run(want_z=False, want_smooth=want_smooth)
            times["kernel"] += result.timings.kernel_seconds
            times["total"] += result.timings.total_seconds
            arrays = {"counts": result.counts}
            if result.smooth is not None:
                arrays["smooth"] = result.smooth
            return arrays

        result = full = None  # the last image goes before the next is gathered
        world.wait_for_all()
        started = time.perf_counter()
        if stop_flag is not None:
            world.share_stops(stop_flag)
        full, _ = gather_bands(world, height, band, bands_per_rank, stop_flag,
                               final=repeat_index == repeat - 1)
        wall = time.perf_counter() - started
        kernel = world.allreduce_max(times["kernel"])
        total = world.allreduce_max(times["total"])
        if world.is_root:
            timings.append(MandelbrotTimings(kernel_seconds=kernel, total_seconds=total,
                                             wall_seconds=wall))
            result = MandelbrotResult(
                counts=full["counts"], z=None, smooth=full.get("smooth"), timings=timings[-1],
                first_row=0, row_count=height, params=dict(renderers[0].params, rows=(0, height)),
                device=compute.name)
    if not world.is_root:
        return compute, None, None, None
    return compute, renderers[0], result, timings
