"""The Lomb-Scargle periodogram on OpenCL devices (the seeds' fourth workload).

:func:`lombscargle` gives ``scipy.signal.lombscargle``'s results on any OpenCL device;
:func:`lombscargle_numpy` is the NumPy reference beside it.
"""

from __future__ import annotations

from oclsci.lombscargle.kernels import VARIANTS, auto_variant
from oclsci.lombscargle.periodogram import (
    DEFAULT_VARIANT,
    Periodogram,
    float32_bound,
    lombscargle,
)
from oclsci.lombscargle.reference import lombscargle_numpy

__all__ = ["DEFAULT_VARIANT", "VARIANTS", "auto_variant", "float32_bound", "Periodogram",
           "lombscargle", "lombscargle_numpy"]
