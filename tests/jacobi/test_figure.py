"""The --compare picture (oclsci.jacobi.figure): its panels' values, reduced without hiding
an error, and the residual against the NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

from oclsci.jacobi import figure
from oclsci.jacobi.reference import laplacian


@pytest.mark.parametrize("band", [1, 4, 7, 40])
def test_the_residual_by_bands_equals_numpy(band):
    rng = np.random.default_rng(1)
    x, rhs = rng.standard_normal((23, 17)), rng.standard_normal((23, 17))
    rows = figure.residual_rows(x, rhs)
    got = np.concatenate([rows(first, min(first + band, 23)) for first in range(0, 23, band)])
    assert np.array_equal(got, np.abs(laplacian(x) - rhs))


def test_reduction_keeps_every_blocks_largest_error_and_mean():
    values = np.arange(7 * 5, dtype=np.float64).reshape(7, 5)
    values[6, 4] = 1000.0  # in the last, partial block
    largest = figure.reduce_rows(lambda a, b: values[a:b], values.shape, 3, "max")
    mean = figure.reduce_rows(lambda a, b: values[a:b], values.shape, 3, "mean")
    assert largest.shape == mean.shape == (3, 2)
    assert largest[2, 1] == 1000.0 and largest[0, 0] == values[:3, :3].max()
    assert mean[1, 1] == values[3:6, 3:5].mean()


def test_colour_scale_runs_dark_to_light():
    rgb = figure.colour_scale(np.linspace(0, 1, 11))
    brightness = rgb.astype(int).sum(axis=1)
    assert rgb.dtype == np.uint8 and list(brightness) == sorted(brightness)
    assert tuple(figure.colour_scale(np.array([np.nan]))[0]) == (255, 255, 255)


def _columns_with_colour(image: np.ndarray) -> int:
    """Columns holding a pixel that is not gray (the colour-scaled error panel, its bar)."""
    spread = image.max(axis=2).astype(int) - image.min(axis=2)
    return int((spread > 30).any(axis=0).sum())


@pytest.mark.parametrize("shape", [(23, 17), (1300, 700)])
def test_panels_with_and_without_the_original(shape):
    rng = np.random.default_rng(2)
    original = rng.random(shape)
    rhs = laplacian(original)
    x = original + 1e-3 * rng.standard_normal(shape)
    with_original = figure.comparison(rhs, x, original)
    residual_only = figure.comparison(rhs, x)
    for image in (with_original, residual_only):
        assert image.dtype == np.uint8 and image.shape[2] == 3
        assert image.shape[0] <= figure.TITLE + max(figure.PANEL, figure.MIN_PANEL) \
            + 2 * figure.MARGIN
        assert _columns_with_colour(image) > figure.BAR  # the error panel is in colour
    assert with_original.shape[1] > residual_only.shape[1]  # one panel more
