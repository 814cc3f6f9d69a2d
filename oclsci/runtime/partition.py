"""Rows shared out in contiguous blocks of nearly equal sizes, for ranks or bands.

The first ``rows % parts`` blocks get one more row. MPI slabs (:mod:`oclsci.mpi.slabs`) and
Mandelbrot bands (:mod:`oclsci.mandelbrot.renderer`) both cut rows this way.
"""

from __future__ import annotations

from oclsci.errors import InputError


def row_band(rows: int, parts: int, index: int) -> tuple[int, int]:
    """``(first_row, row_count)`` of block ``index`` of ``parts`` over ``rows`` rows."""
    if parts < 1 or not 0 <= index < parts:
        raise InputError(f"band {index} of {parts}: need 0 <= index < parts")
    base, extra = divmod(int(rows), parts)
    first = index * base + min(index, extra)
    return first, base + (1 if index < extra else 0)


def split_rows(rows: int, parts: int) -> list[tuple[int, int]]:
    """``(first, stop)`` of each of ``parts`` blocks over ``rows`` rows, in order."""
    bounds = []
    for index in range(int(parts)):
        first, count = row_band(rows, int(parts), index)
        bounds.append((first, first + count))
    return bounds
