"""CuPy-style elementwise kernels on OpenCL, and the seed talk's operations built with them.

- :mod:`~oclsci.elementwise.kernels`: :class:`ElementwiseKernel`;
- :mod:`~oclsci.elementwise.ops`: ``increment``, ``multiply_them``, ``add``, ``axpy``;
- :mod:`~oclsci.elementwise.measure`: :func:`run_operation`, one operation checked against
  NumPy and timed (``oclsci elementwise OP``).
"""

from oclsci.elementwise.kernels import ElementwiseKernel
from oclsci.elementwise.measure import OperationResult, run_operation
from oclsci.elementwise.ops import add, axpy, increment, multiply_them

__all__ = ["ElementwiseKernel", "OperationResult", "add", "axpy", "increment",
           "multiply_them", "run_operation"]
