"""A user's stencil on one OpenCL device: padded buffers, the built kernel, launches.

Every buffer holds the grid inside a ring of ``radius`` cells (the boundary value in the
field's buffers, zero in the read-only fields'), rows padded to a multiple of 16 elements.
Kernels write the interior only, so the ring keeps its value for the whole run. The field
ping-pongs between two buffers, or rotates through three when the update reads ``u.prev``
(previous, current, next).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.launch import Launch
from oclsci.stencil.codegen import template_params
from oclsci.stencil.language import Binary, Node
from oclsci.stencil.problem import Problem

TEMPLATE = "stencil/step"
ROW_ALIGN = 16  # elements: rows start aligned
# Work-group shapes on GPUs (contiguous axis first); CPUs let the runtime choose.
GPU_LOCAL = {2: (64, 4), 3: (32, 4, 2)}


def divides(node: Node) -> bool:
    """Whether the tree holds a division."""
    if isinstance(node, Binary):
        return node.op == "/" or divides(node.left) or divides(node.right)
    return hasattr(node, "operand") and divides(node.operand)


def build_options(problem: Problem) -> tuple[str, ...]:
    """float32 division correctly rounded, as NumPy's (OpenCL allows 2.5 ulp otherwise)."""
    if problem.dtype == np.float32 and divides(problem.expression.root):
        return ("-cl-fp32-correctly-rounded-divide-sqrt",)
    return ()


class StencilSolver:
    """Device buffers and the one-step kernel for ``problem`` (its steps are the caller's to
    run: :meth:`advance`)."""

    def __init__(self, compute: ComputeContext, problem: Problem):
        self.compute = compute
        self.problem = problem
        self.dtype = compute.check_dtype(problem.dtype)
        self.radius = radius = problem.expression.radius
        self.dims = dims = problem.u0.ndim
        padded = tuple(size + 2 * radius for size in problem.shape)
        self.row_stride = -(-padded[-1] // ROW_ALIGN) * ROW_ALIGN
        self.layout = padded[:-1] + (self.row_stride,)
        levels = 3 if problem.expression.uses_prev else 2
        nbytes = (levels + len(problem.fields)) * int(np.prod(self.layout)) * self.dtype.itemsize
        shape = "x".join(map(str, problem.shape))
        compute.check_allocation(nbytes, f"a {shape} {self.dtype.name} stencil grid")
        self.iteration = 0

        first = [problem.u0] if levels == 2 else [problem.prev0, problem.u0]
        self.levels = [self._upload(array, problem.boundary) for array in first]
        while len(self.levels) < levels:
            self.levels.append(self._upload(problem.u0, problem.boundary))
        self.field_buffers = [self._upload(array, self.dtype.type(0), writable=False)
                              for array in problem.fields.values()]
        params = template_params(problem.expression, dims, self.dtype)
        options = build_options(problem)
        kernel = programs.new_kernel(compute, TEMPLATE, options=options, **params)
        self.global_size, self.local_size = self._launch_shape(kernel)
        # One kernel per rotation of the levels, its arguments set once.
        self._launches = []
        for rotation in range(levels):
            if rotation:
                kernel = programs.new_kernel(compute, TEMPLATE, options=options, **params)
            kernel.set_args(*self._arguments(rotation))
            self._launches.append(Launch(compute.queue, kernel, self.global_size,
                                         self.local_size))

    def _upload(self, interior: np.ndarray, ring: Any, writable: bool = True) -> Any:
        host = np.full(self.layout, ring, dtype=self.dtype)
        host[tuple(slice(self.radius, self.radius + s) for s in interior.shape)] = interior
        flags = cl.mem_flags.COPY_HOST_PTR | (cl.mem_flags.READ_WRITE if writable
                                              else cl.mem_flags.READ_ONLY)
        return cl.Buffer(self.compute.context, flags, hostbuf=host)

    def _roles(self, rotation: int) -> tuple[Any, Any, Any]:
        """(previous, current, next) buffers after ``rotation`` steps (previous None without
        u.prev)."""
        levels = self.levels
        if len(levels) == 2:
            return None, levels[rotation % 2], levels[(rotation + 1) % 2]
        return (levels[rotation % 3], levels[(rotation + 1) % 3], levels[(rotation + 2) % 3])

    def _arguments(self, rotation: int) -> list:
        prev, current, following = self._roles(rotation)
        args = [following, current] + ([prev] if prev is not None else [])
        args += self.field_buffers
        args += list(self.problem.params.values())
        args += [np.int32(size) for size in self.problem.shape] + [np.int32(self.row_stride)]
        return args

    def _launch_shape(self, kernel: Any) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """The contiguous axis first; on GPUs whole work-groups of :data:`GPU_LOCAL` when the
        built kernel allows them."""
        sizes = tuple(reversed(self.problem.shape))
        local = None if self.compute.is_cpu else GPU_LOCAL[self.dims]
        if local is not None and int(np.prod(local)) <= programs.kernel_work_group_size(
                self.compute, kernel):
            return tuple(-(-s // g) * g for s, g in zip(sizes, local, strict=True)), local
        return sizes, None

    def advance(self, steps: int) -> Any:
        """Enqueue ``steps`` steps without waiting; return the last launch's event (None for
        no steps)."""
        event = None
        count = len(self._launches)
        for index in range(int(steps)):
            launch = self._launches[(self.iteration + index) % count]
            if index == steps - 1:
                event = launch.with_event()
            else:
                launch.fast()
        self.iteration += int(steps)
        return event

    def read(self) -> np.ndarray:
        """The field now (after the steps enqueued so far), as a new array of the grid's
        shape."""
        host = np.empty(self.layout, dtype=self.dtype)
        cl.enqueue_copy(self.compute.queue, host, self._roles(self.iteration)[1])
        r = self.radius
        return host[tuple(slice(r, r + s) for s in self.problem.shape)].copy()
