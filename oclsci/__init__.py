"""oclsci: a vendor-neutral OpenCL toolkit for scientists on clusters.

One Python code for NVIDIA, AMD and Intel GPUs and for CPUs through PoCL. The device comes from
``device=`` / ``--device``, then ``PYOPENCL_CTX``, then the first GPU (see :mod:`oclsci.device`).
"""

from __future__ import annotations

__version__ = "0.1.0"

from .device import ComputeContext, create_context, list_devices  # noqa: E402
from .elementwise import ElementwiseKernel  # noqa: E402
from .errors import (  # noqa: E402
    DeviceError,
    InputError,
    Interrupted,
    KernelBuildError,
    NoPlatformError,
    OclsciError,
)

# Not re-exported: the function oclsci.mandelbrot.mandelbrot, whose name would hide the module.
from .mandelbrot import MandelbrotRenderer, MandelbrotResult  # noqa: E402
from .mandelbrot_reference import mandelbrot_numpy  # noqa: E402

__all__ = [
    "__version__",
    "ComputeContext",
    "create_context",
    "list_devices",
    "DeviceError",
    "InputError",
    "Interrupted",
    "KernelBuildError",
    "NoPlatformError",
    "OclsciError",
    "ElementwiseKernel",
    "MandelbrotRenderer",
    "MandelbrotResult",
    "mandelbrot_numpy",
]
