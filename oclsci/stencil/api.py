"""The Python API: :class:`Stencil`, a parsed update that runs on a device (:meth:`Stencil.run`)
or in NumPy (:meth:`Stencil.reference`) with the same bits.

::

    heat = Stencil("u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)",
                   params={"k": 0.2})
    u = heat.run(u0, steps=1000)                      # NumPy in, NumPy out
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from oclsci.arrays import check_finite
from oclsci.errors import ArgumentTypeError
from oclsci.runtime.device import as_compute_context
from oclsci.stencil.language import Expression, parse
from oclsci.stencil.periodic import PeriodicGrid
from oclsci.stencil.problem import Problem, check_boundary, prepare
from oclsci.stencil.reference import stencil_numpy
from oclsci.stencil.runner import run_steps
from oclsci.stencil.solver import StencilSolver, divides

__all__ = ["Stencil", "run_steps"]


class Stencil:
    """A user's update of one field ``u`` (see :mod:`oclsci.stencil.language` for the
    expression): ``params`` gives the scalar parameters' values, ``fields`` the names of the
    read-only fields (default: every name that is not a parameter), ``boundary`` the value of
    ``u`` beyond the grid (Dirichlet; zero by default, as ``oclsci jacobi`` has it; fields
    read as zero there), or ``"periodic"``: the grid wraps around on every axis, ``u`` and
    the fields alike (:mod:`oclsci.stencil.periodic`). A refused expression raises
    :class:`~oclsci.stencil.language.StencilSyntaxError` (an InputError) in one line."""

    def __init__(self, expression: str, *, params: Mapping[str, float] | None = None,
                 fields: Iterable[str] | None = None, boundary: float | str = 0.0):
        if params is not None and not isinstance(params, Mapping):
            raise ArgumentTypeError(f"params must map names to numbers, got "
                                    f"{type(params).__name__}")
        if isinstance(fields, str):
            fields = [fields]
        self.params = dict(params or {})
        self.expression: Expression = parse(expression, self.params, fields)
        self.boundary = check_boundary(boundary)

    def __repr__(self) -> str:
        return f"Stencil({self.expression.text!r}: {self.expression.describe()})"

    def problem(self, u0: Any, steps: int, *, fields: Mapping | None = None,
                params: Mapping | None = None, prev: Any = None, dtype: Any = None) -> Problem:
        """The checked, rounded inputs of a run (``params`` override the stencil's)."""
        return prepare(self.expression, u0, steps, fields=fields,
                       params={**self.params, **(params or {})}, prev=prev, dtype=dtype,
                       boundary=self.boundary)

    def run(self, u0: Any, steps: int, *, fields: Mapping | None = None,
            params: Mapping | None = None, prev: Any = None, dtype: Any = None,
            device: Any = None, kernel: str = "auto", kernel_params: Mapping | None = None,
            progress: Callable[[int, int], None] | None = None,
            should_stop: Callable[[], Any] | None = None) -> np.ndarray:
        """``steps`` updates of ``u0`` on a device; returns the field, bit for bit what
        :meth:`reference` returns.

        ``fields``: name -> array of u0's shape; ``prev``: the previous level at the start
        (default u0); ``dtype``: float32 or float64 (default u0's if one of them, else
        float32); ``device``: a SPEC string, a ComputeContext or None (default selection);
        ``kernel``: ``auto`` (chosen for the device and grid) or a kernel's name (``step``,
        ``tiled``, ``stream``: docs/stencil.md), ``kernel_params`` its parameters (the
        kernel's defaults for the device otherwise);
        ``progress(done, steps)`` and ``should_stop()`` as Jacobi's runner takes them.
        A result that overflowed raises :class:`~oclsci.errors.NonFiniteResultError`; on a
        device that may flush float32 subnormal numbers to zero, inputs that hold them warn
        (:meth:`~oclsci.runtime.device.ComputeContext.warn_if_flushed`)."""
        problem = self.problem(u0, steps, fields=fields, params=params, prev=prev,
                               dtype=dtype)
        compute = as_compute_context(device)
        if problem.periodic:
            grid = PeriodicGrid(compute, problem, kernel=kernel, kernel_params=kernel_params)
            solver, halo = grid.solver, grid
        else:
            solver = grid = StencilSolver(compute, problem, kernel=kernel,
                                          kernel_params=kernel_params)
            halo = None
        run_steps(solver, problem.steps, halo=halo, progress=progress, should_stop=should_stop)
        return check_finite(grid.read(), divides=divides(problem.expression.root))

    def reference(self, u0: Any, steps: int, *, fields: Mapping | None = None,
                  params: Mapping | None = None, prev: Any = None,
                  dtype: Any = None) -> np.ndarray:
        """The same run in NumPy (arguments as :meth:`run`'s), for checks."""
        return stencil_numpy(self.problem(u0, steps, fields=fields, params=params, prev=prev,
                                          dtype=dtype))

    def tune(self, shape: Any, *, dtype: Any = np.float32, device: Any = None,
             budget: float = 30.0, kernels: Iterable[str] | None = None, save: bool = True,
             log: Callable[[str], None] | None = None) -> Any:
        """Search, within about ``budget`` seconds, the fastest exact kernel configuration of
        this stencil on a grid of ``shape`` (:func:`oclsci.stencil.tuner.tune`, as ``oclsci
        tune --stencil`` does), and save the winners in the tuning cache (unless ``save`` is
        false), where ``kernel="auto"`` finds them for grids of the same size class. Returns
        the :class:`~oclsci.kernelspec.search.TuneReport`."""
        from oclsci.kernelspec.search import save_report
        from oclsci.stencil.tuner import tune

        report = tune(as_compute_context(device), self, shape, dtype, budget=budget,
                      kernels=tuple(kernels) if kernels else None, log=log)
        if save and report.best is not None:
            save_report(report)
        return report
