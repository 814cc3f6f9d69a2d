"""Jacobi reconstruction of an image from its Laplacian (the seed talk's solver).

- :mod:`~oclsci.jacobi.solver`: :class:`JacobiSolver` (buffers, kernels, launches, residual
  sums);
- :mod:`~oclsci.jacobi.runner`: :func:`run`, the paced loop between exchanges, residual
  checks, checkpoints and stop requests (an MPI run passes a halo object, see
  :mod:`oclsci.mpi`), the checks of its arguments, :class:`JacobiResult`, and :func:`jacobi`
  on one device;
- :mod:`~oclsci.jacobi.reference`: the NumPy reference every kernel matches bit for bit;
- :mod:`~oclsci.jacobi.kernels`: the registry of kernels, one spec each
  (:mod:`~oclsci.jacobi.specs`), their configurations: defaults, the tuned ones, the choice;
- :mod:`~oclsci.jacobi.tuner`: the search of ``oclsci tune``;
- :mod:`~oclsci.jacobi.checkpoint`, :mod:`~oclsci.jacobi.picture`: checkpoints, the built-in
  picture;
- :mod:`~oclsci.jacobi.job`, :mod:`~oclsci.jacobi.driver`: a frozen :class:`JacobiJob` and
  :func:`run_job`, which turns it into a finished run (outputs, checkpoint, comparison
  picture) on one device or on the ranks of an MPI job through :mod:`oclsci.driver`, the
  driver of every command; the command line calls it.
"""

from oclsci.jacobi.driver import JacobiOutcome, run_job
from oclsci.jacobi.job import JacobiJob
from oclsci.jacobi.runner import JacobiResult, SingleDevice, jacobi, relative_residual, run
from oclsci.jacobi.solver import KERNEL_NAMES, JacobiSolver, choose_fitting_config

__all__ = ["KERNEL_NAMES", "JacobiJob", "JacobiOutcome", "JacobiResult", "JacobiSolver",
           "SingleDevice", "choose_fitting_config", "jacobi", "relative_residual", "run",
           "run_job"]
