"""The built-in 400x266 grayscale picture (generated, so no file or network is needed)."""

from __future__ import annotations

import numpy as np

HEIGHT, WIDTH = 266, 400


def builtin_picture() -> np.ndarray:
    """A 266 x 400 uint8 scene: sky gradient, sun, two mountain ridges, a building, a lake.

    Deterministic: the same pixels on every machine.
    """
    rows, cols = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float64)
    # Sky: brighter towards the horizon.
    image = 90.0 + 110.0 * rows / HEIGHT
    # Sun.
    image[(rows - 60) ** 2 + (cols - 300) ** 2 < 28 ** 2] = 250.0
    # Far and near ridges.
    far = 130 + 25 * np.sin(cols / 37.0) + 12 * np.sin(cols / 11.0 + 1.0)
    image[rows > far] = 120.0 - 0.15 * (rows - far)[rows > far]
    near = 175 + 18 * np.sin(cols / 53.0 + 2.0) + 6 * np.sin(cols / 7.0)
    image[rows > near] = 70.0
    # A building with windows (a nod to the seed's Jean Zay picture).
    building = (cols >= 60) & (cols < 150) & (rows >= 95) & (rows < 215)
    image[building] = 185.0
    windows = building & ((cols - 66) % 14 < 7) & ((rows - 103) % 16 < 8) & (rows < 200)
    image[windows] = 40.0
    # Lake with ripples.
    lake = rows >= 215
    image[lake] = 110.0 + 20.0 * np.sin(rows[lake] * 1.3) * np.cos(cols[lake] / 9.0)
    return np.clip(np.round(image), 0, 255).astype(np.uint8)
