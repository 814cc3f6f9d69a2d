"""The NumPy port of the seed's Mandelbrot colouring: matplotlib's ``hot`` map, ``PowerNorm(0.3)``,
``LightSource(azdeg=315, altdeg=10)`` hill shading with ``vert_exag=1.5`` and its HSV blend,
step by step, with no matplotlib. :mod:`oclsci.mandelbrot.shading` chooses between this,
matplotlib and the device (:mod:`oclsci.mandelbrot.device_shading`, which runs the same steps
and takes its tables from here).
"""

from __future__ import annotations

import numpy as np

AZDEG = 315.0
ALTDEG = 10.0
VERT_EXAG = 1.5
GAMMA = 0.3

# matplotlib's "hot" colour map: (x, value) breakpoints of each channel.
_HOT = {
    "red": ((0.0, 0.0416), (0.365079, 1.0), (1.0, 1.0)),
    "green": ((0.0, 0.0), (0.365079, 0.0), (0.746032, 1.0), (1.0, 1.0)),
    "blue": ((0.0, 0.0), (0.746032, 0.0), (1.0, 1.0)),
}
# matplotlib quantises colour maps into a table of this many entries.
_LUT_SIZE = 256


def hot_table() -> np.ndarray:
    """matplotlib's ``hot`` map quantised as matplotlib does: (256, 3) RGB floats in [0, 1]."""
    table_x = np.linspace(0.0, 1.0, _LUT_SIZE)
    table = np.empty((_LUT_SIZE, 3))
    for k, channel in enumerate(("red", "green", "blue")):
        xs, ys = zip(*_HOT[channel], strict=False)
        table[:, k] = np.interp(table_x, xs, ys)
    return table


def hot_colormap(values: np.ndarray) -> np.ndarray:
    """RGB floats in [0, 1] of matplotlib's ``hot`` map for ``values`` in [0, 1] (NaN -> 0)."""
    x = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)
    index = np.clip((x * _LUT_SIZE).astype(np.int64), 0, _LUT_SIZE - 1)
    return hot_table()[index]


def light_direction(azdeg: float = AZDEG, altdeg: float = ALTDEG) -> np.ndarray:
    """The unit vector towards the light, as matplotlib's ``LightSource.direction``."""
    az = np.radians(90.0 - azdeg)
    alt = np.radians(altdeg)
    return np.array([np.cos(az) * np.cos(alt), np.sin(az) * np.cos(alt), np.sin(alt)])


def power_norm(data: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """matplotlib's ``PowerNorm(gamma)`` with limits autoscaled to the data's min and max."""
    data = np.asarray(data, dtype=np.float64)
    vmin, vmax = float(np.min(data)), float(np.max(data))
    if vmax <= vmin:
        return np.zeros_like(data)
    scaled = np.clip((data - vmin) / (vmax - vmin), 0.0, None)
    return np.power(scaled, gamma)


def hillshade(elevation: np.ndarray, azdeg: float = AZDEG, altdeg: float = ALTDEG,
              vert_exag: float = VERT_EXAG) -> np.ndarray:
    """Illumination in [0, 1] of a surface lit from ``azdeg``/``altdeg`` (matplotlib's maths).

    Row 0 is the top (north) of the picture.
    """
    elevation = np.asarray(elevation, dtype=np.float64)
    if min(elevation.shape) < 2:
        return np.ones_like(elevation)
    e_dy, e_dx = np.gradient(vert_exag * elevation, -1.0, 1.0)
    direction = light_direction(azdeg, altdeg)
    norm = np.sqrt(e_dx * e_dx + e_dy * e_dy + 1.0)
    intensity = (-e_dx * direction[0] - e_dy * direction[1] + direction[2]) / norm
    imin, imax = float(intensity.min()), float(intensity.max())
    if imax - imin > 1e-6:
        intensity = (intensity - imin) / (imax - imin)
    return np.clip(intensity, 0.0, 1.0)


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """Convert RGB floats in [0, 1] to HSV in [0, 1] (as ``matplotlib.colors.rgb_to_hsv``)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = np.max(rgb, axis=-1)
    minc = np.min(rgb, axis=-1)
    delta = maxc - minc
    value = maxc
    with np.errstate(invalid="ignore", divide="ignore"):
        sat = np.where(maxc > 0, delta / np.where(maxc > 0, maxc, 1), 0.0)
        safe = np.where(delta > 0, delta, 1.0)
        # As matplotlib: where several channels are the maximum, blue wins over green, green
        # over red.
        hue = np.zeros_like(maxc)
        hue = np.where(r == maxc, (g - b) / safe, hue)
        hue = np.where(g == maxc, 2.0 + (b - r) / safe, hue)
        hue = np.where(b == maxc, 4.0 + (r - g) / safe, hue)
    hue = np.where(delta > 0, (hue / 6.0) % 1.0, 0.0)
    return np.stack([hue, sat, value], axis=-1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """Convert HSV in [0, 1] to RGB floats in [0, 1] (as ``matplotlib.colors.hsv_to_rgb``)."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    i = np.floor(h * 6.0).astype(np.int64)
    f = h * 6.0 - i
    p = v * (1.0 - s)
    q = v * (1.0 - s * f)
    t = v * (1.0 - s * (1.0 - f))
    i = i % 6
    choices_r = [v, q, p, p, t, v]
    choices_g = [t, v, v, q, p, p]
    choices_b = [p, p, t, v, v, q]
    rgb = np.stack([np.choose(i, choices_r), np.choose(i, choices_g), np.choose(i, choices_b)],
                   axis=-1)
    grey = (s == 0)[..., None]
    return np.where(grey, v[..., None], rgb)


def blend_hsv(rgb: np.ndarray, intensity: np.ndarray, hsv_max_sat: float = 0.0,
              hsv_min_sat: float = 1.0, hsv_max_val: float = 1.0,
              hsv_min_val: float = 0.0) -> np.ndarray:
    """matplotlib's ``LightSource.blend_hsv`` with ``LightSource``'s default limits."""
    hsv = rgb_to_hsv(rgb)
    sat, val = hsv[..., 1], hsv[..., 2]
    light = 2.0 * intensity - 1.0
    coloured = np.abs(sat) > 1e-10
    brighter = light > 0
    darker = light < 0
    sat = np.where(coloured & brighter, (1 - light) * sat + light * hsv_max_sat, sat)
    sat = np.where(coloured & darker, (1 + light) * sat - light * hsv_min_sat, sat)
    val = np.where(brighter, (1 - light) * val + light * hsv_max_val, val)
    val = np.where(darker, (1 + light) * val - light * hsv_min_val, val)
    hsv = np.stack([hsv[..., 0], np.clip(sat, 0, 1), np.clip(val, 0, 1)], axis=-1)
    return hsv_to_rgb(hsv)


def shade_numpy(smooth: np.ndarray) -> np.ndarray:
    """The seed's shading in plain NumPy: RGB floats in [0, 1], shape (rows, cols, 3)."""
    # The largest finite smooth count (an infinite one) overflows the elevation, as it does in
    # matplotlib: its neighbours keep their colour unlit, without a warning.
    with np.errstate(over="ignore", invalid="ignore"):
        rgb = hot_colormap(power_norm(smooth, GAMMA))
        return blend_hsv(rgb, hillshade(smooth, AZDEG, ALTDEG, VERT_EXAG))


def rgb8(smooth: np.ndarray, origin: str = "lower") -> np.ndarray:
    """The NumPy port's picture of a smooth count as uint8 RGB, row 0 at the bottom with
    ``origin="lower"``."""
    data = smooth[::-1] if origin == "lower" else smooth
    return to_bytes(shade_numpy(data))


def to_bytes(rgb: np.ndarray) -> np.ndarray:
    """RGB floats in [0, 1] as uint8."""
    return np.clip(np.round(rgb * 255.0), 0, 255).astype(np.uint8)
