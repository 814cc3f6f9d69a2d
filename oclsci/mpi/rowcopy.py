"""Ranges of elements copied between device buffers in one kernel launch.

An overlapped rank copies the rows between its sub-slabs on its device once a period: a few
ranges (two ways across each strip's edge, per level that travels and per buffer that
receives them; 8 on a middle Jacobi rank). As one ``clEnqueueCopyBuffer`` each, every range
costs a launch (about 6 us on an H200, more than its bytes take); :class:`RowCopier` copies
them all in one launch of ``kernels/mpi/copy_rows.cl.mako``, as unsigned words, so that every
bit arrives as it was (NaN payloads, -0.0).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.runtime import programs

TEMPLATE = "mpi/copy_rows"
GROUP_SIZE = 256  # work-items per group (fewer where the built kernel allows fewer)


class RowCopier:
    """Copies of element ranges between buffers of ``dtype`` elements on ``compute``'s
    device, in one launch per :meth:`enqueue`. One kernel per number of ranges (its program
    memoised per context); the ranges' offsets are set when they change, the buffers at each
    call (ping-pong solvers swap theirs between calls)."""

    def __init__(self, compute: Any, dtype: Any):
        self.compute = compute
        itemsize = np.dtype(dtype).itemsize
        word = math.gcd(itemsize, 8)
        self.word = np.dtype(f"u{word}")
        self.words_per_element = itemsize // word
        self._kernels: dict[int, Any] = {}
        self._spans: dict[int, tuple] = {}
        self._sizes: dict[int, tuple[tuple[int], tuple[int]]] = {}

    def _kernel(self, count: int) -> Any:
        if count not in self._kernels:
            self._kernels[count] = programs.new_kernel(self.compute, TEMPLATE, copies=count,
                                                       word=self.word)
        return self._kernels[count]

    def enqueue(self, queue: Any, copies: list[tuple[Any, int, Any, int, int]],
                wait_for: list | None = None) -> Any:
        """Enqueue on ``queue`` one launch doing every copy of ``copies``: (source buffer,
        first element read, destination buffer, first element written, elements), after
        the events ``wait_for``. The ranges written must not overlap any range read or
        written. Return the launch's event (None, and nothing launched, without copies)."""
        copies = [copy for copy in copies if copy[4] > 0]
        if not copies:
            return None
        kernel = self._kernel(len(copies))
        scale = self.words_per_element
        spans = tuple((first * scale, to * scale, count * scale)
                      for _, first, _, to, count in copies)
        if self._spans.get(len(copies)) != spans:
            end = 0
            for c, (first, to, count) in enumerate(spans):
                end += count
                kernel.set_arg(5 * c + 2, np.uint64(first))
                kernel.set_arg(5 * c + 3, np.uint64(to))
                kernel.set_arg(5 * c + 4, np.uint64(end))
            local = min(GROUP_SIZE, programs.kernel_work_group_size(self.compute, kernel))
            self._sizes[len(copies)] = ((-(-end // local) * local,), (local,))
            self._spans[len(copies)] = spans
        for c, (source, _, destination, _, _) in enumerate(copies):
            kernel.set_arg(5 * c, source)
            kernel.set_arg(5 * c + 1, destination)
        global_size, local_size = self._sizes[len(copies)]
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size,
                                          wait_for=wait_for or None)
