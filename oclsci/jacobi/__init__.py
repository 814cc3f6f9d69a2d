"""Jacobi reconstruction of an image from its Laplacian (the seed talk's solver).

- :mod:`~oclsci.jacobi.solver`: :class:`JacobiSolver`, :func:`run` and :func:`jacobi` on one
  device (an MPI run passes a halo object, see :mod:`oclsci.mpi`);
- :mod:`~oclsci.jacobi.reference`: the NumPy reference every kernel matches bit for bit;
- :mod:`~oclsci.jacobi.kernels`: the registry of kernels, one spec each
  (:mod:`~oclsci.jacobi.specs`);
- :mod:`~oclsci.jacobi.tuning`: kernel configurations, defaults, the tuning cache and search;
- :mod:`~oclsci.jacobi.checks`, :mod:`~oclsci.jacobi.checkpoint`,
  :mod:`~oclsci.jacobi.picture`: argument checks, checkpoints, the built-in picture;
- :mod:`~oclsci.jacobi.job`, :mod:`~oclsci.jacobi.driver`: a frozen :class:`JacobiJob` and
  :func:`run_job`, which turns it into a finished run (outputs, checkpoint, comparison
  picture) on one device or on the ranks of an MPI job; the command line calls it.
"""

from oclsci.jacobi.driver import JacobiOutcome, run_job
from oclsci.jacobi.job import JacobiJob
from oclsci.jacobi.solver import (
    KERNEL_NAMES,
    JacobiResult,
    JacobiSolver,
    SingleDevice,
    choose_fitting_config,
    jacobi,
    relative_residual,
    run,
)

__all__ = ["KERNEL_NAMES", "JacobiJob", "JacobiOutcome", "JacobiResult", "JacobiSolver",
           "SingleDevice", "choose_fitting_config", "jacobi", "relative_residual", "run",
           "run_job"]
