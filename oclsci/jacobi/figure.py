"""The picture ``oclsci jacobi --compare`` writes: what went in, what came out, and how good
it is, each panel labelled with what it shows and its range.

Panels, left to right: the input B (the Laplacian), the reconstruction X, and then, when the
original picture is known (the built-in one, or a checkpoint of a run that started from it),
the original and the error |X - original|; otherwise the residual |L X - B|, zero for the
exact solution. The error
panel is on a colour scale (perceptually ordered, dark = small) with a colour bar. Large grids
are shown reduced: a panel's longest side is at most :data:`PANEL` pixels, each pixel the
mean of its block (the error: the largest of its block, so that no error hides), computed a
band of rows at a time, so that the picture needs little memory beyond the grid itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageDraw, ImageFont

PANEL = 512
MIN_PANEL = 256
MARGIN = 10
TITLE = 36
BAR = 14

# A perceptually ordered dark-to-light scale (samples of matplotlib's "viridis").
_SCALE = np.array([(68, 1, 84), (72, 40, 120), (62, 74, 137), (49, 104, 142),
                   (38, 130, 142), (31, 158, 137), (53, 183, 121), (109, 205, 89),
                   (180, 222, 44), (253, 231, 37)], dtype=np.float64)

Rows = Callable[[int, int], np.ndarray]  # rows(first, stop) -> those rows' values


def colour_scale(values: np.ndarray) -> np.ndarray:
    """Values in 0..1 to RGB bytes along the scale (NaN: white)."""
    values = np.asarray(values, dtype=np.float64)
    position = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0) * (len(_SCALE) - 1)
    low = np.minimum(position.astype(int), len(_SCALE) - 2)
    weight = (position - low)[..., None]
    rgb = _SCALE[low] * (1 - weight) + _SCALE[low + 1] * weight
    rgb[np.isnan(values)] = 255
    return np.round(rgb).astype(np.uint8)


def reduce_rows(rows: Rows, shape: tuple[int, int], factor: int, how: str) -> np.ndarray:
    """The ``shape`` grid that ``rows`` yields, reduced by ``factor`` in both directions:
    each cell the mean (``how="mean"``) or the largest value (``"max"``) of its block
    (edge blocks partial). One band of ``factor`` rows at a time."""
    m, n = shape
    out = np.empty((math.ceil(m / factor), math.ceil(n / factor)))
    pad = out.shape[1] * factor - n
    for index, first in enumerate(range(0, m, factor)):
        band = np.asarray(rows(first, min(first + factor, m)), dtype=np.float64)
        if pad:
            band = np.pad(band, ((0, 0), (0, pad)), constant_values=np.nan)
        blocks = band.reshape(band.shape[0], out.shape[1], factor)
        out[index] = np.nanmax(blocks, axis=(0, 2)) if how == "max" else \
            np.nanmean(blocks, axis=(0, 2))
    return out


def residual_rows(x: np.ndarray, rhs: np.ndarray) -> Rows:
    """|L X - B| by rows (L the 5-point Laplacian with a zero boundary), in float64."""
    m, n = x.shape

    def rows(first: int, stop: int) -> np.ndarray:
        # Rows first - 1 .. stop of X, zero beyond the grid, with a zero column each side.
        block = np.zeros((stop - first + 2, n + 2))
        lo, hi = max(first - 1, 0), min(stop + 1, m)
        block[lo - first + 1:hi - first + 1, 1:-1] = x[lo:hi]
        lap = (block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, :-2] + block[1:-1, 2:]
               - 4.0 * block[1:-1, 1:-1])
        return np.abs(lap - np.asarray(rhs[first:stop], dtype=np.float64))
    return rows


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: its small bitmap font
        return ImageFont.load_default()


def _label(value: float) -> str:
    return f"{value:.3g}"


def _gray(values: np.ndarray) -> Image.Image:
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    scaled = np.zeros(values.shape) if high <= low else (values - low) / (high - low)
    return Image.fromarray(np.round(np.nan_to_num(scaled) * 255).astype(np.uint8)).convert("RGB")


def comparison(rhs: np.ndarray, x: np.ndarray, original: np.ndarray | None = None
               ) -> np.ndarray:
    """The labelled picture (H x W x 3 bytes) of ``rhs``, its reconstruction ``x`` and, with
    ``original``, the original and the error; else the residual."""
    m, n = x.shape
    factor = max(1, math.ceil(max(m, n) / PANEL))
    zoom = max(1, MIN_PANEL // max(m, n))  # small grids drawn larger, pixels kept square

    def whole(array: np.ndarray) -> Rows:
        return lambda first, stop: array[first:stop]

    panels = [("input B (Laplacian)", reduce_rows(whole(rhs), (m, n), factor, "mean")),
              ("reconstruction X", reduce_rows(whole(x), (m, n), factor, "mean"))]
    if original is not None:
        panels.append(("original", reduce_rows(whole(original), (m, n), factor, "mean")))
        error_name = "error |X - original|"
        error = reduce_rows(lambda a, b: np.abs(np.asarray(x[a:b], np.float64)
                                                - np.asarray(original[a:b], np.float64)),
                            (m, n), factor, "max")
    else:
        error_name = "residual |L X - B|"
        error = reduce_rows(residual_rows(x, rhs), (m, n), factor, "max")
    if factor > 1:
        error_name += f", largest of {factor}x{factor}"
    top = max(float(np.nanmax(error)), 0.0)
    images = [(name, f"{_label(float(np.nanmin(v)))} .. {_label(float(np.nanmax(v)))}",
               _gray(v)) for name, v in panels]
    images.append((error_name, f"0 .. {_label(top)}",
                   Image.fromarray(colour_scale(error / top if top > 0 else error * 0))))
    height, width = error.shape[0] * zoom, error.shape[1] * zoom
    font, small = _font(13), _font(11)
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    columns = [max(width, round(measure.textlength(name, font=font)),
                   round(measure.textlength(scale, font=small))) for name, scale, _ in images]
    canvas = Image.new("RGB", (MARGIN + sum(c + MARGIN for c in columns) + BAR + 60,
                               TITLE + height + 2 * MARGIN), "white")
    draw = ImageDraw.Draw(canvas)
    left = MARGIN
    for (name, scale, image), column in zip(images, columns, strict=True):
        canvas.paste(image.resize((width, height), Image.NEAREST), (left, TITLE))
        draw.text((left, 2), name, fill="black", font=font)
        draw.text((left, 18), scale, fill="dimgray", font=small)
        left += column + MARGIN
    # The colour bar beside the error: 0 at the bottom, the largest error at the top.
    bar_left = left - (columns[-1] - width)
    ramp = colour_scale(np.linspace(1, 0, height)[:, None].repeat(BAR, axis=1))
    canvas.paste(Image.fromarray(ramp), (bar_left, TITLE))
    for fraction in (1.0, 0.5, 0.0):
        y = TITLE + round((1 - fraction) * (height - 1))
        draw.line([(bar_left + BAR, y), (bar_left + BAR + 3, y)], fill="black")
        draw.text((bar_left + BAR + 5, min(max(y - 6, TITLE - 4), TITLE + height - 8)),
                  _label(fraction * top), fill="black", font=small)
    return np.asarray(canvas)
