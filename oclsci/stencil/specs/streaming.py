"""``streaming``: Jacobi's register-streaming kernel (``kernels/jacobi/streaming.cl.mako``)
rendered with a stencil's update, for 2-D radius-1 star stencils (five points at most)
whose read-only fields are read at the cell itself, without u.prev.

The template, its parameters, their geometry, defaults (segment heights for the device),
checks, launch, tuning space and cost are Jacobi's streaming kernel's
(:mod:`oclsci.jacobi.specs.streaming`), called here through the stencil spec's signatures:
the seed's Jacobi written as a stencil runs the same kernel as ``oclsci jacobi``. Differences:
``rhs_in_regs`` is an integer 0 or 1 here (the stencil's parameters are integers); it keeps
every field's rows in registers for the level above (one field costs what Jacobi's B does;
the defaults drop it for two fields or more), and fields may be none. The boundary needs
nothing: the kernel never writes the ring, which holds the boundary value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from oclsci.jacobi.specs import streaming as jacobi
from oclsci.kernelspec import GPU, Argument, Launch
from oclsci.stencil.codegen import streaming_params
from oclsci.stencil.language import UPDATED
from oclsci.stencil.specs import Geometry, StencilKernelSpec

# Jacobi's parameters, with rhs_in_regs an integer 0 or 1.
PARAMS = tuple(replace(param, kind=int, default=0, low=0, high=1, test_values=(0, 1))
               if param.name == "rhs_in_regs" else param for param in jacobi.PARAMS)
FIVE_POINTS = {(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)}


def handles(geo: Geometry) -> str | None:
    """A 2-D stencil reading u at the cell and its four neighbours at most (one of them at
    least: radius 1), fields at the cell only, no u.prev; None when it is one, else what is
    not."""
    if geo.dims != 2:
        return f"takes 2-D stencils only, this one is {geo.dims}-D"
    if geo.uses_prev:
        return "does not take u.prev"
    if not geo.reads:
        return "takes 2-D five-point stencils only (this stencil's reads are not known)"
    if geo.radius == 0:
        # Jacobi's layout: one row and column of boundary cells around the grid.
        return "takes stencils of radius 1 only, this one reads no neighbour (radius 0)"
    for source, offset in sorted(geo.reads):
        if source == UPDATED and offset not in FIVE_POINTS:
            return (f"takes radius-1 star (five-point) stencils only, this one reads "
                    f"u{list(offset)}")
        if source != UPDATED and offset != (0, 0):
            return (f"reads fields at the cell only, this one reads {source!r} at "
                    f"{list(offset)}")
    return None


def fields(geo: Geometry) -> int:
    """The read-only fields the stencil reads."""
    return len({source for source, _ in geo.reads if source != UPDATED})


def jacobi_params(p: Mapping) -> dict:
    """``p`` as Jacobi's spec functions take it (rhs_in_regs a bool)."""
    return dict(p, rhs_in_regs=bool(p["rhs_in_regs"]))


def stencil_params(p: Mapping) -> dict:
    """Jacobi's parameters ``p`` as this spec's (rhs_in_regs 0 or 1)."""
    return dict(p, rhs_in_regs=int(p["rhs_in_regs"]))


def dtype(geo: Geometry) -> np.dtype:
    """The field's dtype (float32 or float64, by item size)."""
    return np.dtype(np.float32 if geo.itemsize == 4 else np.float64)


def defaults(facts: Mapping, geo: Geometry) -> list[dict]:
    """Jacobi's streaming defaults for the device and grid (segments fitted to the grid's
    height on GPUs), fields kept in registers only for one field at most; none for stencils
    the kernel does not take."""
    if handles(geo):
        return []
    found = []
    for p, _ in jacobi.defaults(facts, dtype(geo), geo.shape):
        p = stencil_params(p)
        if fields(geo) > 1:
            p["rhs_in_regs"] = 0
        if p not in found:
            found.append(p)
    return found


def candidates(facts: Mapping, geo: Geometry) -> list[dict]:
    """Jacobi's streaming tuning space for the grid (none for stencils it does not take)."""
    if handles(geo):
        return []
    return [stencil_params(p) for p, _ in jacobi.candidates(geo.shape, dtype(geo), facts)]


def check(p: Mapping, geo: Geometry) -> str | None:
    """Jacobi's checks (a tile inside the halo; rhs_in_regs with skew 1)."""
    return jacobi.check(jacobi_params(p))


def local_mem(p: Mapping, geo: Geometry) -> int:
    """Jacobi's: both edges of every level's rows, for two parities."""
    return jacobi.local_mem(p, geo.itemsize)


def launch(p: Mapping, geo: Geometry) -> Launch:
    """Jacobi's: a work-group of ``local_w`` per strip tile and segment."""
    return jacobi.launch(p, None, *geo.shape)


def cost(p: Mapping, geo: Geometry, facts: Mapping) -> float:
    """Jacobi's cost model for the same configuration and grid."""
    return jacobi.cost(jacobi_params(p), None, geo.shape, geo.itemsize, facts)


def derived(p: Mapping) -> dict:
    """Jacobi's geometry of the configuration (rows apart, halo, tile, slots...), and
    rhs_in_regs as a bool."""
    return dict(jacobi.geometry(p), rhs_in_regs=bool(p["rhs_in_regs"]))


SPEC = StencilKernelSpec(
    name="streaming", template="jacobi/streaming",
    summary="Jacobi's register streaming, 2-D five-point stencils with fields at the cell",
    params=PARAMS, launch=launch, defaults=defaults, steps_param="max_steps",
    local_mem=local_mem, check=check, candidates=candidates, cost=cost,
    arguments=(Argument("max_steps"),), suits=GPU, handles=handles, derived=derived,
    codegen=streaming_params,
)
