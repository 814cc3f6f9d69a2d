"""Mandelbrot over MPI ranks: the image's rows dealt out in bands (oclsci.mpi.bands), gathered on
rank 0."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
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
