"""Lomb-Scargle's corner cases (see :mod:`oclsci.corners`): every variant
(:data:`oclsci.lombscargle.VARIANTS`) in both precisions, fast math in float32, one sample at
one frequency and frequency counts that are not multiples of the vector width; within the
error bound of :func:`~oclsci.lombscargle.float32_bound` (float32) or 1e-10 (float64) of
:func:`~oclsci.lombscargle.lombscargle_numpy`'s peak.

``sin()`` and ``cos()`` run in place of ``sincos()`` (``paired_sincos=False``): the Oclgrind
simulator's uninitialised-value checker cannot follow sincos()'s private pointer (a fatal
error in Oclgrind 21.10).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.corners import case_id, case_rng


def corner_cases() -> list[dict]:
    """Each variant, precision and fast-math setting (fast math in float32 for the stride
    and vector variants) over 1 sample at 1 frequency and 6 samples at 13."""
    from oclsci.lombscargle import VARIANTS

    cases = []
    for variant in VARIANTS:
        for dtype in ("float32", "float64"):
            for fast_math in (False, True):
                if fast_math and (dtype == "float64" or variant not in ("stride", "vector")):
                    continue
                for n, f in ((1, 1), (6, 13)):
                    cases.append({"id": case_id("lombscargle", variant, dtype,
                                                "fast" if fast_math else "", f"n{n}", f"f{f}"),
                                  "kind": "lombscargle", "variant": variant, "dtype": dtype,
                                  "fast_math": fast_math, "n": n, "f": f, "cost": n * f + 1})
    return cases


def run_corner_case(compute: Any, case: dict) -> None:
    """Run ``case`` on ``compute``; its largest error, relative to the peak, must be within
    the bound."""
    from oclsci.lombscargle import Periodogram, float32_bound, lombscargle_numpy

    rng = case_rng(case["id"])
    x = rng.uniform(0, 10, case["n"])
    y = rng.normal(size=case["n"]) + 0.5
    freqs = np.linspace(0.1, 3.0, case["f"])
    plan = Periodogram(compute, x, y, freqs, dtype=case["dtype"], fast_math=case["fast_math"],
                       variant=case["variant"], paired_sincos=False)
    got = plan.run().get().astype(np.float64)
    want = lombscargle_numpy(x, y, freqs)
    bound = 1e-10 if case["dtype"] == "float64" else float32_bound(x, freqs, case["fast_math"])
    error = float(np.max(np.abs(got - want))) / max(float(np.max(want)), 1e-300)
    if not error <= bound:
        raise AssertionError(f"max error {error:.3g} of the peak (bound {bound:.3g})")
