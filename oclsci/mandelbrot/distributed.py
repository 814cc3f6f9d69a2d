"""Mandelbrot over MPI ranks: the image's rows dealt out in bands (oclsci.mpi.bands), gathered on
rank 0."""

from __future__ import annotations

import os
import time
from typing import Any

from oclsci.mandelbrot.renderer import MandelbrotRenderer, MandelbrotResult, MandelbrotTimings
from oclsci.mpi.bands import gather_bands, rank_bands
from oclsci.mpi.world import World

DEFAULT_BANDS_PER_RANK = 4


def resolve_bands_per_rank(requested: int | None = None) -> int:
    """``requested``, else ``OCLSCI_MPI_BANDS`` when a positive integer, else 4."""
    if requested is not None:
        return requested
    text = os.environ.get("OCLSCI_MPI_BANDS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_BANDS_PER_RANK


def describe_bands(world: World, height: int, bands_per_rank: int | None = None) -> str:
    """One line on how :func:`render_on_ranks` shares out ``height`` rows."""
    per_rank = resolve_bands_per_rank(bands_per_rank)
    bands = rank_bands(height, world.size, 0, per_rank)
    return (f"mpi: {world.size} ranks, {len(bands)} band(s) of rows each on rank 0 "
            f"({per_rank} per rank), gathered on rank 0; times below: the slowest rank")


def render_on_ranks(world: World, compute: Any, *, repeat: int, want_smooth: bool,
                    bands_per_rank: int | None = None, stop_flag: Any = None,
                    **params: Any) -> tuple[Any, Any, list | None]:
    """The Mandelbrot image of ``params`` over the ranks of ``world``, each on its
    ``compute``: rows shared out, gathered on rank 0 (collective).

    Each rank renders ``bands_per_rank`` bands of rows (see :func:`resolve_bands_per_rank`),
    dealt out in turn so that the costly rows near the set are spread over the ranks; the
    bands are exact pieces of the one-device image. The image is computed ``repeat`` times.
    Returns ``(renderer, result, timings)``: on rank 0 a renderer of the first band (for its
    parameters and kernel shape), the last computation's whole image as a
    :class:`~oclsci.mandelbrot.MandelbrotResult` (only it is kept: memory does not grow with
    ``repeat``) and the ``repeat`` computations'
    :class:`~oclsci.mandelbrot.MandelbrotTimings` (the slowest rank's device times, and the
    wall time of computing and gathering); Nones on the other ranks.
    :func:`describe_bands` says how the rows were shared out. ``stop_flag``: the raising
    StopFlag around the call; a stop signal to any rank then stops them all (rank 0 raises
    SignalExit, the others exit with 128 + N), and once the images are computed one only
    waits for the outputs.
    """
    bands_per_rank = resolve_bands_per_rank(bands_per_rank)
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
        return None, None, None
    return renderers[0], result, timings
