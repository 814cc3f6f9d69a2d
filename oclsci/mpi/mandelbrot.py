"""Rows shared out and gathered: Mandelbrot and other row-independent images over ranks."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from oclsci.mpi.slabs import split_rows
from oclsci.mpi.world import TAG_GATHER, World


def rank_bands(height: int, parts: int, rank: int,
               bands_per_rank: int = 1) -> list[tuple[int, int]]:
    """``(first_row, row_count)`` of the bands of ``rank``: the image's rows cut into
    ``parts * bands_per_rank`` contiguous bands, dealt out in turn (more than one band per
    rank spreads the costly rows of a Mandelbrot image over the ranks)."""
    total = max(1, min(int(height), parts * max(1, int(bands_per_rank))))
    bounds = split_rows(int(height), total)
    return [(start, stop - start) for start, stop in bounds[rank::parts] if stop > start]


def gather_bands(world: World, height: int, compute_band: Callable[[int, int], dict],
                 bands_per_rank: int = 1) -> tuple[dict | None, float]:
    """Compute this rank's bands of rows and gather whole images on rank 0 (collective).

    ``compute_band(first_row, row_count)`` returns a dict of arrays with ``row_count`` rows
    (e.g. ``{"counts": ..., "smooth": ...}``); the same names, dtypes and widths on every
    rank. Rank 0 gets ``{name: array with height rows}``, the others None; every rank gets
    the longest computing time over ranks, in seconds.
    """
    started = time.perf_counter()
    pieces = [(first, compute_band(first, count))
              for first, count in rank_bands(height, world.size, world.rank, bands_per_rank)]
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


def mandelbrot_distributed(world: World, *, device: str | None, quiet: bool, repeat: int,
                           want_smooth: bool, bands_per_rank: int | None = None,
                           **params: Any) -> tuple[Any, Any, list | None]:
    """``oclsci mandelbrot`` over the ranks of ``world``: rows shared out, gathered on rank 0.

    Each rank renders ``bands_per_rank`` bands of rows (default 4, or
    ``OCLSCI_MPI_BANDS``), dealt out in turn so that the costly rows near the set are spread
    over the ranks; the bands are exact pieces of the one-device image. Returns
    ``(compute, renderer, results)``: on rank 0 the whole image as a list of ``repeat``
    :class:`~oclsci.mandelbrot.MandelbrotResult` (timings: the slowest rank's device times,
    and the wall time of computing and gathering), on the other ranks ``results`` is None.
    """
    return world.run_guarded(_mandelbrot_distributed, world, device=device, quiet=quiet,
                             repeat=repeat, want_smooth=want_smooth,
                             bands_per_rank=bands_per_rank, **params)


def _mandelbrot_distributed(world: World, *, device, quiet, repeat, want_smooth, bands_per_rank,
                            **params):
    from oclsci.mandelbrot.renderer import MandelbrotRenderer, MandelbrotResult, MandelbrotTimings
    from oclsci.runtime.device import create_context

    if bands_per_rank is None:
        text = os.environ.get("OCLSCI_MPI_BANDS", "").strip()
        bands_per_rank = int(text) if text.isdigit() and int(text) > 0 \
            else DEFAULT_BANDS_PER_RANK
    compute = world.agree(create_context, device, quiet=True, local_rank=world.local_rank,
                          local_ranks=world.local_ranks)
    banners = world.comm.gather(f"oclsci: rank {world.rank}: " +
                                compute.banner()[len("oclsci: "):], root=0)
    if world.is_root and not quiet:
        print("\n".join(banners), file=sys.stderr)
    height = int(params["height"])
    bands = rank_bands(height, world.size, world.rank, bands_per_rank)
    renderers = world.agree(lambda: {first: MandelbrotRenderer(compute, rows=(first, count),
                                                               **params)
                                     for first, count in bands})
    results = []
    for _ in range(repeat):
        times = {"kernel": 0.0, "total": 0.0}

        def band(first: int, count: int, times: dict = times) -> dict:
            result = renderers[first].run(want_z=False, want_smooth=want_smooth)
            times["kernel"] += result.timings.kernel_seconds
            times["total"] += result.timings.total_seconds
            arrays = {"counts": result.counts}
            if result.smooth is not None:
                arrays["smooth"] = result.smooth
            return arrays

        world.comm.Barrier()
        started = time.perf_counter()
        full, _ = gather_bands(world, height, band, bands_per_rank)
        wall = time.perf_counter() - started
        kernel = world.allreduce_max(times["kernel"])
        total = world.allreduce_max(times["total"])
        if world.is_root:
            timings = MandelbrotTimings(kernel_seconds=kernel, total_seconds=total,
                                        wall_seconds=wall)
            results.append(MandelbrotResult(
                counts=full["counts"], z=None, smooth=full.get("smooth"), timings=timings,
                first_row=0, row_count=height, params=dict(renderers[0].params, rows=(0, height)),
                device=compute.name))
    if not world.is_root:
        return compute, None, None
    if not quiet:
        print(f"mpi: {world.size} ranks, {len(bands)} band(s) of rows each on rank 0 "
              f"({bands_per_rank} per rank), gathered on rank 0; times below: the slowest rank")
    return compute, renderers[0], results
