"""A user's stencil on one OpenCL device: padded buffers, the chosen kernel, launches.

Every buffer holds the grid inside a ring of ``radius`` cells (the boundary value in the
field's buffers, zero in the read-only fields'), rows padded to a multiple of 16 elements.
Kernels write the interior only, so the ring keeps its value for the whole run (with
periodic boundaries, :mod:`oclsci.stencil.periodic` rewrites it between launches).

The one-step kernel (``step``) ping-pongs the field between two buffers, or rotates it through
three when the update reads ``u.prev`` (previous, current, next). The blocked kernels
(``tiled``, ``stream``, ``column``: several steps a launch) ping-pong between two buffers, or
two pairs (previous, current) with ``u.prev``: each launch writes the last level and the one
before it. Steps that do not fill a launch go in one launch of a kernel built for them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.errors import InputError, InvalidArgumentError
from oclsci.kernelspec import round_up
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext
from oclsci.runtime.launch import Launch
from oclsci.stencil.codegen import blocked_params, template_params
from oclsci.stencil.kernels import StencilConfig, choose
from oclsci.stencil.language import Binary, Expression, Node, loads
from oclsci.stencil.problem import Problem
from oclsci.stencil.specs import Geometry

ROW_ALIGN = 16  # elements: rows start aligned


class WorkGroupTooLarge(InputError):
    """A configuration's work-group exceeds what its built kernel allows on the device."""


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


def stencil_geometry(expression: Expression, shape: tuple[int, ...],
                     dtype: np.dtype) -> Geometry:
    """What the kernels' launches and limits depend on, for ``expression`` on a grid of
    ``shape`` in ``dtype``: among them every (source, offset) it reads."""
    dims = len(shape)
    reads = frozenset((load.source, load.offset or (0,) * dims) for load in loads(expression.root))
    return Geometry(tuple(shape), expression.radius, expression.uses_prev,
                    np.dtype(dtype).itemsize, reads)


def padded_layout(shape: tuple[int, ...], radius: int) -> tuple[int, ...]:
    """The device buffers' shape for a grid of ``shape``: ``radius`` boundary cells on each
    side of every axis, rows padded to start aligned."""
    padded = tuple(size + 2 * radius for size in shape)
    return padded[:-1] + (round_up(padded[-1], ROW_ALIGN),)


def geometry(problem: Problem, dtype: np.dtype) -> Geometry:
    """What the kernels' launches and limits depend on, for ``problem``."""
    return stencil_geometry(problem.expression, problem.shape, dtype)


def program(problem: Problem, dtype: np.dtype, config: StencilConfig) -> tuple[str, tuple, dict]:
    """What builds ``config``'s kernel for ``problem``: the template, the build options and
    the template's parameters (:func:`oclsci.runtime.programs.build_program`'s arguments)."""
    blocked = config.spec.steps_param is not None
    params = (config.spec.codegen or (blocked_params if blocked else template_params))(
        problem.expression, problem.u0.ndim, dtype)
    params.update(config.template_params(), windowed=False)  # every layer (StencilSolver: some)
    return config.spec.template, build_options(problem), params


@dataclass(frozen=True)
class NeededLayers:
    """Layers ``first`` .. ``stop - 1`` along the grid's slowest axis are the only ones read
    at the iterations that are multiples of ``period``, and after any launch: the others may
    go stale (an MPI strip's ghost layers, which every exchange refreshes)."""

    first: int
    stop: int
    period: int

    def window(self, iteration: int, steps: int, radius: int, layers: int) -> tuple[int, int]:
        """The layers that a launch of ``steps`` steps from ``iteration`` must write: these,
        and ``radius`` more on each side per step that follows it before the next multiple
        of the period (clipped to the grid's ``layers``)."""
        after = -(iteration + steps) % self.period
        return (max(0, self.first - radius * after),
                min(layers, self.stop + radius * after))


class StencilSolver:
    """Device buffers and the chosen kernel for ``problem`` (its steps are the caller's to
    run: :meth:`advance`). ``kernel``: a name of :data:`oclsci.stencil.kernels.KERNELS` or
    ``auto`` (a configuration tuned for the device first: :func:`oclsci.stencil.kernels.choose`);
    ``kernel_params`` override the kernel's defaults; ``candidates``, when given, are the
    configurations to try instead (best first: the first that builds runs). With ``needed``
    (:class:`NeededLayers`), kernels that can write some layers only (those taking
    ``z_first`` and ``z_stop``) write those that will be read, and the others go stale."""

    def __init__(self, compute: ComputeContext, problem: Problem, kernel: str = "auto",
                 kernel_params: Mapping | None = None,
                 candidates: list[StencilConfig] | None = None,
                 needed: NeededLayers | None = None):
        if problem.periodic:
            raise InvalidArgumentError("a periodic problem runs on oclsci.stencil.periodic."
                                       "PeriodicGrid (Stencil.run chooses it), not on "
                                       "StencilSolver alone")
        self.compute = compute
        self.problem = problem
        self.dtype = compute.check_dtype(problem.dtype)
        compute.warn_if_flushed(self.dtype, problem.u0, problem.prev0, problem.boundary,
                                *problem.fields.values(), *problem.params.values())
        self.radius = radius = problem.expression.radius
        self.dims = problem.u0.ndim
        self.geo = geometry(problem, self.dtype)
        candidates = candidates or choose(compute, kernel, self.geo, problem.expression,
                                          self.dtype, kernel_params)
        self.blocked = candidates[0].spec.steps_param is not None
        self.layout = padded_layout(problem.shape, radius)
        self.row_stride = self.layout[-1]
        uses_prev = problem.expression.uses_prev
        levels = (4 if self.blocked else 3) if uses_prev else 2
        nbytes = (levels + len(problem.fields)) * int(np.prod(self.layout)) * self.dtype.itemsize
        shape = "x".join(map(str, problem.shape))
        compute.check_allocation(nbytes, f"a {shape} {self.dtype.name} stencil grid")
        self.iteration = 0
        self.phase = 0  # blocked kernels: which pair of buffers holds the field

        first = [problem.u0] if not uses_prev else [problem.prev0, problem.u0]
        self.levels = [self._upload(array, problem.boundary) for array in first]
        while len(self.levels) < levels:
            self.levels.append(self._upload(problem.u0, problem.boundary))
        self.field_buffers = [self._upload(array, self.dtype.type(0), writable=False)
                              for array in problem.fields.values()]
        self.needed = needed
        self._launches: dict[tuple[int, int, int], list[Launch]] = {}
        for index, config in enumerate(candidates):
            # auto's fallbacks may leave the blocked kernels for the one-step kernel, which
            # keeps one level fewer with u.prev (the buffers were made for the first).
            self.config, self.blocked = config, config.spec.steps_param is not None
            del self.levels[(4 if self.blocked else 3) if uses_prev else 2:]
            try:
                self._launches[(config.steps_per_launch, *self._all_layers)] = \
                    self._build(config, self._all_layers)
                break
            except WorkGroupTooLarge:
                if index == len(candidates) - 1:
                    raise
        self.steps_per_launch = self.config.steps_per_launch

    def _upload(self, interior: np.ndarray, ring: Any, writable: bool = True) -> Any:
        host = np.full(self.layout, ring, dtype=self.dtype)
        host[tuple(slice(self.radius, self.radius + s) for s in interior.shape)] = interior
        flags = cl.mem_flags.READ_WRITE if writable else cl.mem_flags.READ_ONLY
        buffer = cl.Buffer(self.compute.context, flags, host.nbytes)
        # On the device now (a host pointer's copy may wait for the first launch, and count
        # in a run's time).
        cl.enqueue_copy(self.compute.queue, buffer, host, is_blocking=True)
        return buffer

    def _roles(self, rotation: int) -> tuple[Any, Any, Any, Any]:
        """(previous in, current in, previous out, current out) buffers of the launch after
        ``rotation`` launches (the previous ones None without u.prev; the step kernel writes
        no previous level: the current one becomes it)."""
        levels = self.levels
        if len(levels) == 2:
            return None, levels[rotation % 2], None, levels[(rotation + 1) % 2]
        if not self.blocked:
            return (levels[rotation % 3], levels[(rotation + 1) % 3], None,
                    levels[(rotation + 2) % 3])
        first, second = levels[:2], levels[2:]
        (prev_in, cur_in), (prev_out, cur_out) = ((first, second) if rotation % 2 == 0
                                                  else (second, first))
        return prev_in, cur_in, prev_out, cur_out

    @property
    def _all_layers(self) -> tuple[int, int]:
        return 0, self.problem.shape[0]

    def _arguments(self, config: StencilConfig, rotation: int, values: Mapping) -> list:
        prev_in, current, prev_out, following = self._roles(rotation)
        args = [following, current]
        if prev_in is not None:
            args += [prev_out, prev_in] if self.blocked else [prev_in]
        args += self.field_buffers
        args += list(self.problem.params.values())
        if self.blocked:
            args.append(self.problem.boundary)
        args += [np.int32(size) for size in self.problem.shape] + [np.int32(self.row_stride)]
        args += config.spec.bind(values)
        return args

    def _build(self, config: StencilConfig, window: tuple[int, int]) -> list[Launch]:
        """One launch of ``config`` per rotation of the buffers, arguments set once; it writes
        the layers ``window`` (first, stop) where the kernel can write some only."""
        template, options, params = program(self.problem, self.dtype, config)
        params["windowed"] = window != self._all_layers
        values = dict(config.params, z_first=window[0], z_stop=window[1])
        global_size, local_size = config.spec.launch(values, self.geo)
        launches = []
        for rotation in range(2 if self.blocked else len(self.levels)):
            kernel = programs.new_kernel(self.compute, template, options=options, **params)
            if rotation == 0 and local_size is not None and int(np.prod(local_size)) > \
                    programs.kernel_work_group_size(self.compute, kernel):
                raise WorkGroupTooLarge(f"kernel {config.describe()}: work-groups of "
                                        f"{int(np.prod(local_size))} too large here")
            kernel.set_args(*self._arguments(config, rotation, values))
            launches.append(Launch(self.compute.queue, kernel, global_size, local_size))
        return launches

    def _launch(self, steps: int) -> Launch:
        window = self._all_layers
        if self.needed is not None and self.windowed:
            window = self.needed.window(self.iteration, steps, self.radius, window[1])
        key = (steps, *window)
        if key not in self._launches:
            try:
                self._launches[key] = self._build(self.config.with_steps(steps), window)
            except WorkGroupTooLarge:
                if window == self._all_layers:
                    raise
                self.needed = None  # the kernel built to write some layers does not fit: all
                return self._launch(steps)
        launches = self._launches[key]
        rotation = self.phase if self.blocked else self.iteration
        return launches[rotation % len(launches)]

    @property
    def windowed(self) -> bool:
        """Whether the kernel can write some layers only (it takes z_first and z_stop)."""
        return any(argument.name == "z_first" for argument in self.config.spec.arguments)

    def _after(self, steps: int) -> None:
        self.iteration += steps
        self.phase ^= 1

    def advance(self, steps: int) -> Any:
        """Enqueue ``steps`` steps without waiting (full launches, then one for the rest);
        return the last launch's event (None for no steps)."""
        full, rest = divmod(int(steps), self.steps_per_launch)
        sizes = [self.steps_per_launch] * full + ([rest] if rest else [])
        event = None
        for index, size in enumerate(sizes):
            launch = self._launch(size)
            if index == len(sizes) - 1:
                event = launch.with_event()
            else:
                launch.fast()
            self._after(size)
        return event

    @property
    def layer_stride(self) -> int:
        """Elements of one padded layer along the slowest axis (a row in 2-D, a plane in
        3-D)."""
        return int(np.prod(self.layout[1:]))

    def buffers_now(self) -> tuple[Any, Any]:
        """(the previous level's buffer, None without u.prev; the current level's): what the
        next step reads, after the steps enqueued so far."""
        rotation = self.phase if self.blocked else self.iteration
        previous, current = self._roles(rotation)[:2]
        return previous, current

    @property
    def halo_levels(self) -> list[LevelRows]:
        """The levels that an exchange of ghost layers refreshes (u.prev's first, then u's),
        as rows of :attr:`layer_stride` elements: see :class:`oclsci.mpi.slabs.SlabHalo`."""
        return [LevelRows(self, index) for index, buffer in enumerate(self.buffers_now())
                if buffer is not None]

    def read(self) -> np.ndarray:
        """The field now (after the steps enqueued so far), as a new array of the grid's
        shape."""
        return self._interior(self.buffers_now()[1])

    def read_prev(self) -> np.ndarray | None:
        """The previous time level now (None when the update does not read u.prev)."""
        previous = self.buffers_now()[0]
        return None if previous is None else self._interior(previous)

    def _interior(self, buffer: Any) -> np.ndarray:
        host = np.empty(self.layout, dtype=self.dtype)
        cl.enqueue_copy(self.compute.queue, host, buffer)
        r = self.radius
        return host[tuple(slice(r, r + s) for s in self.problem.shape)].copy()


class LevelRows:
    """One time level of a :class:`StencilSolver` as padded rows (layers along the slowest
    axis), numbered from the first layer of the ring: ``index`` 0 the previous level, 1 the
    current one, as :meth:`StencilSolver.buffers_now` gives them when asked."""

    def __init__(self, solver: StencilSolver, index: int):
        self.solver = solver
        self.index = index
        self.compute = solver.compute
        self.dtype = solver.dtype
        self.row_stride = solver.layer_stride

    @property
    def x_buffer(self) -> Any:
        """The level's buffer now."""
        return self.solver.buffers_now()[self.index]

    def write_rows(self, first: int, rows: np.ndarray) -> None:
        """Overwrite rows from ``first`` with ``rows`` (finished when it returns)."""
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        cl.enqueue_copy(self.compute.queue, self.x_buffer, rows,
                        dst_offset=first * self.row_stride * self.dtype.itemsize)
