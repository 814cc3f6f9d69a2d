"""Where a rank's exchange can run behind its interior's steps: the cut of every rank's slab
into sub-slabs (a strip at each edge that faces another rank, the interior between them) and
whether the ranks overlap (``OCLSCI_MPI_OVERLAP``). :mod:`oclsci.mpi.overlap` runs the
sub-slabs; docs/mpi.md, "Overlap", tells why and when.
"""

from __future__ import annotations

import os
from typing import Any

from oclsci.errors import InputError
from oclsci.mpi.slabs import Decomposition
from oclsci.mpi.world import World


def wants_overlap(compute: Any, environ: Any = None) -> bool:
    """Whether to overlap: ``OCLSCI_MPI_OVERLAP=1`` or ``0``; unset or ``auto``: on GPUs
    (on a CPU device MPI's host work and the kernels share the same cores)."""
    text = (environ if environ is not None else os.environ).get("OCLSCI_MPI_OVERLAP", "")
    text = text.strip().lower()
    if text in ("", "auto"):
        return bool(compute.is_gpu)
    if text not in ("0", "1"):
        raise InputError(f"OCLSCI_MPI_OVERLAP must be 0, 1 or auto, got {text!r}")
    return text == "1"


def agreed_overlap(world: World, compute: Any) -> bool:
    """Whether every rank of ``world`` (more than one) wants the overlap (collective): one
    choice for all, else the summaries' collectives would wait for each other forever."""
    return world.size > 1 and bool(world.comm.allreduce(
        int(world.agree(wants_overlap, compute)), op=world.MPI.MIN))


def sub_slabs(decomposition: Decomposition) -> tuple[Decomposition, list[int]] | None:
    """The sub-slabs of every rank's slab, and the rank owning each; None when a slab is too
    thin for strips of ``halo + fixed`` rows and an interior at least that high."""
    edge = decomposition.halo + decomposition.fixed
    last = decomposition.parts - 1
    around = decomposition.periodic  # every slab has neighbours on both sides
    bounds, owners = [], []
    for slab in decomposition.slabs:
        top = edge if slab.rank > 0 or around else 0
        bottom = edge if slab.rank < last or around else 0
        if slab.rows - top - bottom < edge:
            return None
        cuts = sorted({slab.first, slab.first + top, slab.stop - bottom, slab.stop})
        for first, stop in zip(cuts, cuts[1:], strict=False):
            bounds.append((first, stop))
            owners.append(slab.rank)
    return (Decomposition.from_bounds(decomposition.m, decomposition.n, bounds,
                                      decomposition.halo, fixed=decomposition.fixed,
                                      ring=decomposition.ring, periodic=around), owners)
