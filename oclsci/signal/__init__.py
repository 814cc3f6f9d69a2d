"""Signal processing on OpenCL devices: the Lomb-Scargle periodogram (the seeds' fourth workload).

:func:`lombscargle` gives ``scipy.signal.lombscargle``'s results on any OpenCL device;
:func:`lombscargle_numpy` is the NumPy reference beside it.
"""

from __future__ import annotations

from .lombscargle import VARIANTS, Periodogram, lombscargle
from .reference import lombscargle_numpy

__all__ = ["VARIANTS", "Periodogram", "lombscargle", "lombscargle_numpy"]
