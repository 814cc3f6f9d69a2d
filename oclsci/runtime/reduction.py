"""Two-stage reductions: a kernel writes one partial result per work-group, the host adds them.

The kernels reduce with the defs of ``kernels/reduce.cl.mako`` (each work-item's share of the
items, then a tree over the work-group). :class:`GroupReduction` holds one such kernel with its
partial-results buffer: it sizes the launch (:func:`group_count`), converts the scalar
arguments to their declared types, launches, and finishes each field of the partial results
on the host: sums in float64 (integers exactly), minima and maxima. The values are combined in
an order fixed by the group size, the number of groups and the kernel's walk over its items,
so a reduction gives the same bits every time on a device. :func:`map_reduction` builds the
template's own kernel, the reduction of an expression over ``count`` items (the shape of
``pyopencl.reduction.ReductionKernel``, whose second stage runs on the device instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InvalidArgumentError
from oclsci.runtime import programs

# How each field of the partial results is finished on the host.
FINISHES = ("sum", "min", "max")
# Work-groups per compute unit, unless the items fill fewer.
GROUPS_PER_UNIT = 4


def group_count(compute: Any, group_size: int, items: int | None = None,
                per_unit: int = GROUPS_PER_UNIT) -> int:
    """Work-groups of a reduction on ``compute``: ``per_unit`` per compute unit, or fewer where
    ``items`` (units of work, one per work-item) fill fewer groups of ``group_size``; >= 1."""
    groups = per_unit * max(1, compute.facts.compute_units)
    if items is not None:
        groups = min(groups, math.ceil(items / group_size))
    return max(1, groups)


def _finish(how: str, values: np.ndarray) -> Any:
    if how == "min":
        return values.min()
    if how == "max":
        return values.max()
    if values.dtype.kind == "f":
        return np.sum(values, dtype=np.float64)
    return np.sum(values, dtype=np.int64 if values.dtype.kind == "i" else np.uint64)


class GroupReduction:
    """One reduction kernel and its partial results (see the module's docstring).

    ``kernel`` takes ``arg_types`` arguments (a NumPy dtype for each scalar, None for each
    buffer), then the partial-results buffer of ``result_dtype``, and is launched with
    ``group_size`` work-items per group. ``finish`` names, for each field the kernel writes per
    group, how the host finishes it: ``"sum"``, ``"min"`` or ``"max"``. Launches take
    :func:`group_count` work-groups (``per_unit`` per compute unit at most).
    """

    def __init__(self, compute: Any, kernel: Any, *, group_size: int, arg_types: Sequence[Any],
                 result_dtype: Any, finish: Sequence[str] = ("sum",),
                 per_unit: int = GROUPS_PER_UNIT):
        unknown = [how for how in finish if how not in FINISHES]
        if unknown or not finish:
            raise InvalidArgumentError(f"a reduction finishes each field by one of {FINISHES}, "
                                       f"got {tuple(finish)}")
        self.compute, self.kernel, self.group_size = compute, kernel, int(group_size)
        self.arg_types = tuple(None if t is None else np.dtype(t) for t in arg_types)
        self.finish = tuple(finish)
        self.per_unit = per_unit
        self.max_groups = group_count(compute, self.group_size, per_unit=per_unit)
        self.partial = np.zeros(self.max_groups * len(self.finish), dtype=result_dtype)
        self.buffer = cl.Buffer(compute.context, cl.mem_flags.WRITE_ONLY, self.partial.nbytes)
        self.groups = self.max_groups

    def enqueue(self, *args: Any, items: int | None = None) -> Any:
        """Launch over ``args``: :attr:`max_groups` work-groups, or fewer where ``items`` (one
        per work-item) fill fewer; return the launch's event. Scalars may be Python numbers."""
        if len(args) != len(self.arg_types):
            raise InvalidArgumentError(f"this reduction takes {len(self.arg_types)} arguments, "
                                       f"got {len(args)}")
        typed = [arg if t is None else t.type(arg)
                 for arg, t in zip(args, self.arg_types, strict=True)]
        self.groups = group_count(self.compute, self.group_size, items, self.per_unit)
        self.kernel.set_args(*typed, self.buffer)
        return cl.enqueue_nd_range_kernel(self.compute.queue, self.kernel,
                                          (self.groups * self.group_size,), (self.group_size,))

    def result(self) -> Any:
        """The last launch's result (waits for it): a NumPy scalar for one field (sums in
        float64, or int64/uint64), else a tuple of them."""
        fields = len(self.finish)
        partial = self.partial[:self.groups * fields]
        cl.enqueue_copy(self.compute.queue, partial, self.buffer)
        results = tuple(_finish(how, partial[index::fields])
                        for index, how in enumerate(self.finish))
        return results[0] if fields == 1 else results

    def __call__(self, *args: Any, items: int | None = None) -> Any:
        """:meth:`enqueue`, then :meth:`result`."""
        self.enqueue(*args, items=items)
        return self.result()


class MapReduction(GroupReduction):
    """A :func:`map_reduction`: its last argument, ``count``, also sizes the launch."""

    def enqueue(self, *args: Any, items: int | None = None) -> Any:
        """:meth:`GroupReduction.enqueue` over ``count`` (the last argument) items."""
        return super().enqueue(*args, items=int(args[-1]) if items is None and args else items)


def map_reduction(compute: Any, *, params: Sequence[tuple[str, Any, bool]], map_expr: str,
                  result_dtype: Any, combine: str = "+", neutral: str = "0",
                  finish: str = "sum", group_size: int | None = None,
                  chunked: bool | None = None, preamble: str = "",
                  dtype: Any = None) -> MapReduction:
    """The reduction of ``map_expr`` (C, of the item index ``k`` and the parameters) over
    ``count`` items, by ``combine`` (``"+"``, or a C function of two values such as ``"fmin"``)
    from ``neutral``, in ``result_dtype``; call it with the parameters' values, then ``count``.

    ``params``: (name, dtype, is_array) for each parameter; an array is a buffer of that dtype.
    ``finish`` as :class:`GroupReduction`'s. Defaults: 16 work-items per group and one
    contiguous run of items per work-item on CPUs, 256 and a strided walk on other devices;
    ``dtype`` is ``real_t`` for ``map_expr`` and ``preamble``.
    """
    group_size = group_size or (16 if compute.is_cpu else 256)
    chunked = compute.is_cpu if chunked is None else chunked
    declared = tuple((name, programs.cl_type(t), bool(is_array)) for name, t, is_array in params)
    kernel = programs.get_kernel(
        compute, "reduce", dtype=dtype, result_dtype=np.dtype(result_dtype), params=declared,
        preamble=preamble, map_expr=map_expr, neutral=neutral, combine=combine,
        group_size=group_size, chunked=chunked,
        uses_fp64=any(np.dtype(t) == np.float64 for t in
                      (result_dtype, dtype or np.float32, *(p[1] for p in params))))
    arg_types = [None if is_array else t for _, t, is_array in params] + [np.uint64]
    return MapReduction(compute, kernel, group_size=group_size, arg_types=arg_types,
                        result_dtype=result_dtype, finish=(finish,))
