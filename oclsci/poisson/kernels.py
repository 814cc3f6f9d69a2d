"""The multigrid solver's kernels as specs (:class:`~oclsci.kernelspec.KernelSpec`).

Every kernel is one function of ``kernels/poisson/multigrid.cl.mako`` (``poisson_multigrid_``
and the step); its spec lists its arguments, which :class:`oclsci.poisson.multigrid.Multigrid`
binds by name, the work-group it wants on each device kind, and its launch shape. 2-D
kernels take the level's rows and columns (the smoother one cell of a colour per work-item,
so half the columns), flat ones a count of elements. The template's parameters (dtype, the
dot product's group) are the program's, shared by every kernel; the dot product is not here
(a reduction, with its own launch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oclsci.kernelspec import Argument, KernelSpec, round_up
from oclsci.kernelspec.registry import Registry
from oclsci.poisson.hierarchy import COARSEST_CELLS

TEMPLATE = "poisson/multigrid"
KERNEL_PREFIX = "poisson_multigrid_"  # + the step: the template's kernels' names
# Work-groups of the 2-D kernels (columns, rows) and of the flat ones, per device kind.
GRID_LOCAL = {"cpu": (64, 1), "gpu": (32, 4)}
FLAT_LOCAL = {"cpu": (64,), "gpu": (256,)}


def _buffers(*names: str) -> tuple[Argument, ...]:
    return tuple(Argument(name, "buffer") for name in names)


def _ints(*names: str) -> tuple[Argument, ...]:
    return tuple(Argument(name) for name in names)


def grid(p: Mapping, local: Any, m: int, n: int):
    """One work-item per cell of an m x n level, columns along dimension 0."""
    return (round_up(max(n, 1), local[0]), round_up(max(m, 1), local[1])), local


def half_grid(p: Mapping, local: Any, m: int, n: int):
    """One work-item per cell of one colour: half the columns, rounded up."""
    return grid(p, local, m, -(-n // 2))


def flat(p: Mapping, local: Any, count: int):
    """One work-item per element."""
    return (round_up(max(count, 1), local[0]),), local


def one_group(p: Mapping, local: Any):
    """A single work-group."""
    return local, local


def _spec(step: str, arguments: tuple[Argument, ...], launch: Any,
          local_sizes: Mapping = GRID_LOCAL) -> KernelSpec:
    return KernelSpec(name=step, template=TEMPLATE, function=KERNEL_PREFIX + step,
                      arguments=arguments, launch=launch, local_sizes=local_sizes)


LEVEL = _buffers("rows", "cols") + _ints("m", "n", "row0", "mg")
REGISTRY = Registry((
    _spec("smooth_rb", _buffers("u", "f") + LEVEL + _ints("colour"), half_grid),
    _spec("smooth_jacobi", _buffers("u_out", "u_in", "f") + LEVEL + (Argument("weight", "real"),),
          grid),
    _spec("residual", _buffers("r", "u", "f") + LEVEL, grid),
    _spec("apply", _buffers("out", "u") + LEVEL, grid),
    _spec("restrict", _buffers("coarse", "r", "row_weights", "col_weights")
          + _ints("mc", "nc", "row0c", "n", "row0f", "mf", "row_step", "col_step"), grid),
    _spec("interpolate_add", _buffers("u", "e", "row_lower", "row_weights", "col_lower",
                                      "col_weights")
          + _ints("m", "n", "row0f", "nc", "row0c", "mc"), grid),
    _spec("coarse_solve", _buffers("u", "f", "rows", "cols") + _ints("m", "n", "sweeps"),
          one_group, {"cpu": (COARSEST_CELLS,), "gpu": (COARSEST_CELLS,)}),
    _spec("axpby", (Argument("z", "buffer"), Argument("alpha", "real"), Argument("x", "buffer"),
                    Argument("beta", "real"), Argument("y", "buffer"), Argument("count", "ulong")),
          flat, FLAT_LOCAL),
    _spec("zero", (Argument("u", "buffer"), Argument("count", "ulong")), flat, FLAT_LOCAL),
), noun="multigrid kernel")
KERNELS: dict[str, KernelSpec] = REGISTRY.specs
