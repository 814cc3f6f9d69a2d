"""The Mandelbrot set of the seed talk: escape counts on a device, the NumPy reference, shading.

- :mod:`~oclsci.mandelbrot.renderer`: :class:`MandelbrotRenderer` and :func:`mandelbrot`;
- :mod:`~oclsci.mandelbrot.reference`: the seed's NumPy code, :func:`mandelbrot_numpy`;
- :mod:`~oclsci.mandelbrot.shading`: the seed's colouring (matplotlib or a NumPy port).
"""

from oclsci.mandelbrot.reference import mandelbrot_numpy
from oclsci.mandelbrot.renderer import MandelbrotRenderer, MandelbrotResult, mandelbrot
from oclsci.runtime.partition import row_band

__all__ = ["MandelbrotRenderer", "MandelbrotResult", "mandelbrot", "mandelbrot_numpy", "row_band"]
