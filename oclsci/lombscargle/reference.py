"""NumPy reference of the Lomb-Scargle periodogram: SciPy's algorithm, frequencies in blocks.

:func:`lombscargle_numpy` computes what ``scipy.signal.lombscargle(x, y, freqs,
normalize=...)`` computes (SciPy >= 1.15: unit weights, ``floating_mean=False``), in float64,
two passes over the samples per frequency as SciPy does, with frequencies taken in blocks so
that memory stays bounded (SciPy builds two ``len(x) x len(freqs)`` arrays at once).
It is the reference of the tests and of ``oclsci bench lombscargle`` where SciPy is missing.
"""

from __future__ import annotations

import numpy as np

# Sample-frequency pairs per block (two float64 arrays of this many elements at a time).
BLOCK_PAIRS = 2**22


def lombscargle_numpy(x, y, freqs, *, precenter: bool = False,
                      normalize: bool | str = False) -> np.ndarray:
    """The Lomb-Scargle periodogram of samples ``(x, y)`` at angular frequencies ``freqs``.

    ``precenter`` subtracts the mean of ``y`` first; ``normalize`` False/"power" gives power
    in SciPy's legacy units (``A**2 N / 4`` for a sine of amplitude A), True/"normalize" the
    power over the mean of ``y**2``. Float64 throughout; inputs are not validated.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    freqs = np.asarray(freqs, dtype=np.float64).ravel()
    if precenter:
        y = y - y.mean()
    n = x.size
    weights = np.full(n, 1.0 / n)
    weights_y = weights * y
    epsneg = np.finfo(np.float64).epsneg
    out = np.empty(freqs.size)
    block = max(1, BLOCK_PAIRS // max(n, 1))
    for start in range(0, freqs.size, block):
        w = freqs[start:start + block]
        wt = np.multiply.outer(x, w)                     # (n, block)
        cos, sin = np.cos(wt), np.sin(wt)
        cc = weights @ (cos * cos)
        ss = 1.0 - cc
        cs = weights @ (cos * sin)
        tau = 0.5 * np.arctan2(2.0 * cs, cc - ss)
        wt -= tau
        cos, sin = np.cos(wt), np.sin(wt)
        yc = weights_y @ cos
        ys = weights_y @ sin
        cc = weights @ (cos * cos)
        ss = 1.0 - cc
        cc[cc < epsneg] = epsneg
        ss[ss < epsneg] = epsneg
        out[start:start + block] = 2.0 * (yc * yc / cc + ys * ys / ss)
    if normalize in (False, "power"):
        out *= n / 4.0
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            out *= 0.5 / np.dot(weights_y, y)
    return out
