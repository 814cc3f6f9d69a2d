"""What a Jacobi kernel spec is (:class:`KernelSpec`), and the pieces specs share.

One module per kernel (``seed``, ``coalesced``, ...) defines ``SPEC``;
:mod:`oclsci.jacobi.kernels` lists them. Spec functions take ``p``, a configuration's
parameters with defaults filled in (:meth:`KernelSpec.resolve`), and make configurations as
``(params, local_size)`` pairs (:data:`Choice`); ``facts`` describe a device:
``{"is_cpu", "cus" (compute units), "max_wg" (work-items per group), "local_mem" (bytes)}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oclsci.errors import InputError

Choice = tuple[dict, tuple[int, int] | None]
Launch = tuple[tuple[int, ...], tuple[int, ...] | None]


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class Param:
    """A kernel parameter: its type, default (None: required), bounds and allowed values."""

    name: str
    kind: type = int
    default: Any = None
    low: int = 1
    high: int | None = None
    choices: tuple = ()
    template: bool = True  # False: it shapes the launch only, the template never sees it
    test_values: Sequence = ()  # small values that tests draw (property tests)

    def parse(self, text: str) -> Any:
        """``text`` as this parameter's value (booleans: true/false or 1/0, any case); raises
        ValueError naming the parameter otherwise. Bounds are the spec's validation's."""
        if self.kind is bool:
            flags = {"true": True, "1": True, "false": False, "0": False}
            if text.strip().lower() not in flags:
                raise ValueError(f"{self.name} takes true or false, not {text!r}")
            return flags[text.strip().lower()]
        try:
            return self.kind(text)
        except ValueError:
            kind = "an integer" if self.kind is int else f"a {self.kind.__name__}"
            raise ValueError(f"{self.name} takes {kind}, not {text!r}") from None


@dataclass(frozen=True)
class Argument:
    """An argument of the OpenCL kernel: its name and kind (buffer, int or long)."""

    name: str
    kind: str = "int"

    def value(self, raw: Any) -> Any:
        """``raw`` as the kernel takes it (np.int32 for int, np.int64 for long)."""
        if self.kind == "int":
            return np.int32(raw)
        if self.kind == "long":
            return np.int64(raw)
        return raw


# Arguments every Jacobi kernel starts with; multi-step kernels add the step count.
GRID_ARGUMENTS = (Argument("x_new", "buffer"), Argument("x_old", "buffer"),
                  Argument("rhs", "buffer"), Argument("m"), Argument("n"),
                  Argument("row_stride"))
STEPS = Argument("steps")

BOTH, CPU, GPU = frozenset({"cpu", "gpu"}), frozenset({"cpu"}), frozenset({"gpu"})

# The cost model's device figures: launch overheads, rates and bandwidth (a rough guide).
CPU_LAUNCH, CPU_STREAM_PER_CU, CPU_CACHE_PER_CU = 20e-6, 3e8, 2e9
GPU_LAUNCH_HOST, GPU_LAUNCH, GPU_BANDWIDTH = 6e-6, 3e-6, 3.0e12


def cpu_stream_rate(itemsize: int, facts: Mapping) -> float:
    """Cells per second a CPU streams through memory."""
    return CPU_STREAM_PER_CU * facts["cus"] * 4 / itemsize


def streaming_cost(cells: int, itemsize: int, facts: Mapping, *, cpu_passes: float = 1.0,
                   gpu_penalty: float = 1.0) -> float:
    """Seconds per step of a one-step kernel that streams X and B from memory."""
    if facts["is_cpu"]:
        return CPU_LAUNCH + cells / cpu_stream_rate(itemsize, facts) * cpu_passes
    return max(GPU_LAUNCH_HOST, GPU_LAUNCH + cells * 3 * itemsize * gpu_penalty / GPU_BANDWIDTH)


def _one_cell(p: Mapping, shape: tuple[int, int], items: int) -> int:
    return 1


@dataclass(frozen=True)
class KernelSpec:
    """Everything about one Jacobi kernel (see the module's docstring)."""

    name: str
    params: tuple[Param, ...]
    # The OpenCL kernel's arguments in order; the solver binds them by name.
    arguments: tuple[Argument, ...]
    # (p, local_size, m, n) -> (global size, local size) for an m x n interior.
    launch: Callable[[Mapping, Any, int, int], Launch]
    # (facts, dtype, shape or None) -> configurations best first, before the device's limits.
    defaults: Callable[[Mapping, np.dtype, Any], list[Choice]]
    # (p, local_size, shape, itemsize, facts) -> rough seconds per step (orders the tuner).
    cost: Callable[[Mapping, Any, tuple[int, int], int, Mapping], float]
    # The parameter giving the steps one launch advances (argument "steps").
    steps_param: str | None = None
    summary: str = ""  # what it is, in a few words, for --help
    # p -> the work-group shape the kernel fixes; None: the configuration's local_size.
    work_group: Callable[[Mapping], tuple[int, ...]] | None = None
    # (p, itemsize) -> bytes of local memory per work-group.
    local_mem: Callable[[Mapping, int], int] | None = None
    # (p, m, n) -> scratch buffer layout: "scratch_elements" and the scalar arguments.
    scratch: Callable[[Mapping, int, int], dict] | None = None
    # p -> why the parameters cannot work together, or None.
    check: Callable[[Mapping], str | None] | None = None
    # (shape, dtype, facts) -> the tuning space; None: nothing to tune.
    candidates: Callable[[tuple[int, int], np.dtype, Mapping], list[Choice]] | None = None
    suits: frozenset = BOTH  # device kinds ("cpu", "gpu") worth running it on
    auto_on: frozenset = frozenset()  # device kinds where ``auto`` may mean this kernel
    # ``auto`` takes it for grids of at least this many cells (the largest reached wins).
    auto_min_cells: int = 0
    tuned_on: frozenset = frozenset()  # device kinds where ``oclsci tune`` tries it unasked
    # p -> (rows, columns) of its unit of work: tests aim grid sizes at its edges.
    tile: Callable[[Mapping], tuple[int, int]] = lambda p: (16, 16)
    # (p, shape, work-items) -> cell updates per work-item and step (simulation cost).
    work_per_item: Callable[[Mapping, tuple[int, int], int], int] = _one_cell
    examples: tuple[Choice, ...] = ()  # run bit for bit on every test device
    corner_cases: tuple[Choice, ...] = ()  # run under Oclgrind; every parameter varies

    @property
    def template(self) -> str:
        """The template's name, ``jacobi/<name>``."""
        return f"jacobi/{self.name}"

    def param(self, key: str) -> Param:
        """The parameter called ``key`` (KeyError if none)."""
        for param in self.params:
            if param.name == key:
                return param
        raise KeyError(key)

    def resolve(self, params: Mapping) -> dict:
        """Every parameter's value: ``params`` with defaults filled in."""
        values = {}
        for param in self.params:
            if param.name in params:
                values[param.name] = params[param.name]
            elif param.default is None:
                raise InputError(f"kernel {self.name!r} needs parameter {param.name!r}")
            else:
                values[param.name] = param.default
        return values

    def argument_index(self, name: str) -> int:
        """Position of the kernel argument called ``name`` (ValueError if none)."""
        return [argument.name for argument in self.arguments].index(name)
