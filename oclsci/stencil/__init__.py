"""Your own stencil: a NumPy-style update, written as a restricted Python expression, run as
an OpenCL kernel whose results equal a NumPy reference bit for bit (docs/stencil.md).

- :mod:`~oclsci.stencil.api`: :class:`Stencil` (``run`` on a device, ``reference`` in NumPy)
  and the paced loop of a run;
- :mod:`~oclsci.stencil.language`: the expression language (:func:`parse`, what it refuses);
- :mod:`~oclsci.stencil.problem`: a run's inputs, checked and rounded to the field's dtype;
- :mod:`~oclsci.stencil.reference`: the NumPy reference;
- :mod:`~oclsci.stencil.codegen`: the update as OpenCL C for ``kernels/stencil/``;
- :mod:`~oclsci.stencil.solver`: buffers, the built kernel and launches on one device;
- :mod:`~oclsci.stencil.periodic`: periodic boundaries (ghost cells refreshed between
  launches).
"""

from oclsci.stencil.api import Stencil, run_steps
from oclsci.stencil.language import Expression, StencilSyntaxError, parse
from oclsci.stencil.solver import StencilSolver

__all__ = ["Expression", "Stencil", "StencilSolver", "StencilSyntaxError", "parse",
           "run_steps"]
