"""CuPy-style elementwise kernels on OpenCL, and the seed talk's operations built with them.

- :mod:`~oclsci.elementwise.kernels`: :class:`ElementwiseKernel`;
- :mod:`~oclsci.elementwise.ops`: ``increment``, ``multiply_them``, ``add``, ``axpy``.
"""

from oclsci.elementwise.kernels import ElementwiseKernel
from oclsci.elementwise.ops import add, axpy, increment, multiply_them

__all__ = ["ElementwiseKernel", "add", "axpy", "increment", "multiply_them"]
