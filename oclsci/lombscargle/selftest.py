"""``oclsci selftest``'s Lomb-Scargle checks: every kernel variant and ``auto`` against the
NumPy periodogram, within the bound of the dtype
(:func:`~oclsci.lombscargle.periodogram.float32_bound`; 1e-9 in float64).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oclsci.lombscargle.kernels import VARIANTS
from oclsci.lombscargle.periodogram import float32_bound, lombscargle
from oclsci.lombscargle.reference import lombscargle_numpy


def selftest_checks(compute: Any, size: dict) -> Iterator[tuple[str, Callable]]:
    """``(name, check)`` pairs for ``compute`` at ``size`` (oclsci.selftest.SIZES); each check
    returns (passed, largest difference, detail)."""
    samples, count = size["lombscargle"]
    rng = np.random.default_rng(18)
    x = np.sort(rng.uniform(0, 100, samples))
    y = np.sin(1.3 * x) + rng.standard_normal(samples)
    freqs = np.linspace(0.01, 10, count)
    expected = lombscargle_numpy(x, y, freqs)
    scale = max(float(np.max(expected)), samples * float(np.mean(y ** 2)) / 4)
    for dtype in compute.facts.float_dtypes:
        bound = 1e-9 if dtype == np.float64 else float32_bound(x, freqs)
        for variant in ("auto", *VARIANTS):
            def check(variant=variant, dtype=dtype, bound=bound):
                got = lombscargle(x, y, freqs, dtype=dtype, device=compute, variant=variant)
                diff = float(np.max(np.abs(got.astype(np.float64) - expected)))
                return diff <= bound * scale, diff, f"bound {bound * scale:.3g}"
            yield f"lombscargle {variant} {dtype.name} {samples} x {count}", check
