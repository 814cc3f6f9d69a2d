"""oclsci: a vendor-neutral OpenCL toolkit for scientists on clusters.

One Python code for NVIDIA, AMD and Intel GPUs and for CPUs through PoCL. The device comes from
``device=`` / ``--device``, then ``PYOPENCL_CTX``, then the first GPU (see
:mod:`oclsci.runtime.device`). docs/architecture.md draws how the packages depend on each other.
"""

from __future__ import annotations

__version__ = "0.1.0"

from oclsci.errors import (  # noqa: E402
    DeviceError,
    InputError,
    Interrupted,
    KernelBuildError,
    NoPlatformError,
    OclsciError,
)

# Loaded on first use (PEP 562), so that the command line starts NumPy's and the drivers'
# threads itself, with the stop signals blocked in them (see oclsci.runtime.signals).
_LAZY = {
    "ComputeContext": "runtime.device", "create_context": "runtime.device",
    "list_devices": "runtime.device",
    "ElementwiseKernel": "elementwise.kernels",
    # Not re-exported: the function oclsci.mandelbrot.mandelbrot, whose name would hide the
    # package.
    "MandelbrotRenderer": "mandelbrot.renderer", "MandelbrotResult": "mandelbrot.renderer",
    "mandelbrot_numpy": "mandelbrot.reference",
    "Stencil": "stencil.api",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oclsci' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


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
