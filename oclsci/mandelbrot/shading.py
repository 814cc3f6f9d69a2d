"""Colour a Mandelbrot smooth count like the seed's picture.

The seed shades the smooth count with ``matplotlib.colors.LightSource(azdeg=315, altdeg=10)``,
the ``hot`` colour map, ``PowerNorm(0.3)``, ``vert_exag=1.5`` and ``blend_mode='hsv'``. With
matplotlib installed (the ``plot`` extra) :func:`shade` calls exactly that; without it, a NumPy
port of the same steps (hot colour map, power normalisation, hill shading, HSV blend) gives
nearly the same picture.

:func:`oclsci.io.write_image` writes the picture (atomically).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from oclsci.errors import DeviceError, InputError, KernelBuildError, first_line, pip_extra
from oclsci.io import have_matplotlib
from oclsci.mandelbrot.palette import (
    ALTDEG,
    AZDEG,
    GAMMA,
    VERT_EXAG,
    rgb8,
    to_bytes,
)


def shade_matplotlib(smooth: np.ndarray) -> np.ndarray:
    """The seed's shading through matplotlib: RGB floats in [0, 1], shape (rows, cols, 3)."""
    import matplotlib  # optional (the plot extra) and slow: imported only for this renderer
    from matplotlib import colors

    light = colors.LightSource(azdeg=AZDEG, altdeg=ALTDEG)
    shaded = light.shade(np.asarray(smooth, dtype=np.float64), cmap=matplotlib.colormaps["hot"],
                         vert_exag=VERT_EXAG, norm=colors.PowerNorm(GAMMA), blend_mode="hsv")
    return np.asarray(shaded)[..., :3]


RENDERERS = ("auto", "device", "matplotlib", "numpy")


def shade(smooth: np.ndarray, renderer: str = "auto", origin: str = "lower",
          compute: Any = None) -> np.ndarray:
    """Colour a smooth count as the seed's picture: uint8 RGB, shape (rows, cols, 3).

    ``renderer``: ``"device"`` (on ``compute``'s OpenCL device, see
    :mod:`oclsci.mandelbrot.device_shading`), ``"matplotlib"``, ``"numpy"``, or ``"auto"``:
    the device when ``compute`` is given, else matplotlib when importable, else NumPy.
    ``origin="lower"`` puts row 0 (ymin) at the bottom, so that the picture shows the complex
    plane with the imaginary axis up; ``"upper"`` keeps row 0 at the top as ``imshow`` does
    by default in the seed (the same picture for a window symmetric about the real axis).
    """
    smooth = np.asarray(smooth)
    if smooth.ndim != 2 or smooth.size == 0:
        raise InputError(f"expected a non-empty 2-D array to colour, got shape {smooth.shape}")
    if origin not in ("lower", "upper"):
        raise InputError(f"origin must be 'lower' or 'upper', got {origin!r}")
    if renderer not in RENDERERS:
        raise InputError(f"renderer must be one of {', '.join(RENDERERS)}, got {renderer!r}")
    if renderer == "matplotlib" and not have_matplotlib():
        raise InputError(f"matplotlib is not installed: {pip_extra('plot')}, or use the "
                         "numpy or device renderer")
    if renderer == "device" and compute is None:
        raise InputError("the device renderer needs a compute context (compute=...)")
    if renderer in ("auto", "device") and compute is not None:
        from oclsci.mandelbrot.device_shading import shade_on_device  # loads pyopencl

        try:
            return shade_on_device(compute, smooth, origin)
        except (DeviceError, KernelBuildError) as error:
            if renderer == "device":
                raise
            warnings.warn(f"colouring on the device failed ({first_line(error)}); "
                          "colouring on the host instead", RuntimeWarning, stacklevel=2)
    if renderer == "auto":  # importing matplotlib costs about 0.2 s: only when it colours
        renderer = "matplotlib" if have_matplotlib() else "numpy"
    if renderer == "numpy":
        return rgb8(smooth, origin)
    return to_bytes(shade_matplotlib(smooth[::-1] if origin == "lower" else smooth))
