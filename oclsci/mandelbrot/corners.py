"""Mandelbrot's corner cases (see :mod:`oclsci.corners`): the escape-time kernel over vector
widths, unrolling, precisions, outputs, bands and tiny windows, against
:func:`~oclsci.mandelbrot.reference.mandelbrot_numpy`; the device colouring
(``mandelbrot_shade``) against the NumPy colouring."""

from __future__ import annotations

from typing import Any

import numpy as np

from oclsci.corners import Unsupported, case_id, case_rng
from oclsci.errors import InputError

# width, height, maxiter, (xmin, xmax, ymin, ymax), rows: one pixel; widths that are not
# multiples of the pixels per work-item; a band of rows; one iteration.
WINDOWS = (
    (1, 1, 3, (-2.25, 0.75, -1.25, 1.25), None),
    (7, 3, 20, (-2.25, 0.75, -1.25, 1.25), None),
    (37, 5, 12, (-0.75, -0.74, 0.1, 0.11), (1, 3)),
    (17, 4, 1, (-2.0, 2.0, -2.0, 2.0), None),
)
# (vector_width, unroll): one pixel per work-item (GPUs), then CPU vectors.
VECTORS = ((1, None), (2, 1), (4, None), (4, 3), (8, 8), (16, 2))


def render_cases() -> list[dict]:
    """The escape-time kernel: every vector shape, both precisions (float64 on every other
    window), with and without z and the smooth count."""
    cases = []
    for vector_width, unroll in VECTORS:
        for dtype in ("float32", "float64"):
            for index, (width, height, maxiter, bounds, rows) in enumerate(WINDOWS):
                if dtype == "float64" and index % 2:
                    continue
                want_z, want_smooth = index % 2 == 0, index != 3
                cases.append({
                    "id": case_id("mandelbrot", f"vw{vector_width}",
                                  f"u{unroll}" if unroll else "", dtype, f"{width}x{height}",
                                  f"it{maxiter}", "rows" if rows else "",
                                  "z" if want_z else "", "smooth" if want_smooth else ""),
                    "kind": "mandelbrot", "vector_width": vector_width, "unroll": unroll,
                    "dtype": dtype, "width": width, "height": height, "maxiter": maxiter,
                    "bounds": bounds, "rows": rows, "want_z": want_z,
                    "want_smooth": want_smooth, "cost": width * height * maxiter // 4 + 1,
                })
    return cases


def shading_cases() -> list[dict]:
    """The device colouring: both precisions, both origins, thin strips and one pixel, a
    constant image, sizes that leave work-items idle."""
    return [{"id": case_id("shade", dtype, f"{shape[0]}x{shape[1]}", values, origin),
             "kind": "shade", "dtype": dtype, "shape": shape, "values": values,
             "origin": origin, "cost": 4 * shape[0] * shape[1] + 1}
            for dtype in ("float32", "float64")
            for shape, values in (((13, 21), "noise"), ((1, 9), "noise"), ((7, 1), "noise"),
                                  ((1, 1), "noise"), ((5, 6), "constant"), ((40, 33), "noise"))
            for origin in ("lower", "upper")]


def corner_cases() -> list[dict]:
    """Every Mandelbrot corner case: the escape-time kernel, then the colouring."""
    return render_cases() + shading_cases()


def _run_render(compute: Any, case: dict) -> None:
    from oclsci.mandelbrot.reference import mandelbrot_numpy
    from oclsci.mandelbrot.renderer import MandelbrotRenderer

    xmin, xmax, ymin, ymax = case["bounds"]
    window = dict(width=case["width"], height=case["height"], maxiter=case["maxiter"],
                  xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax, dtype=case["dtype"],
                  rows=tuple(case["rows"]) if case["rows"] else None)
    try:
        renderer = MandelbrotRenderer(compute, vector_width=case["vector_width"],
                                      unroll=case["unroll"], **window)
    except InputError as error:
        raise Unsupported(str(error)) from None
    result = renderer.run(want_z=case["want_z"], want_smooth=case["want_smooth"])
    counts, _ = mandelbrot_numpy(**window)
    wrong = int(np.count_nonzero(result.counts != counts))
    if wrong > max(1, 0.005 * counts.size):
        raise AssertionError(f"{wrong} of {counts.size} escape counts differ from NumPy")


def _run_shade(compute: Any, case: dict) -> None:
    from oclsci.mandelbrot.device_shading import shade_on_device
    from oclsci.mandelbrot.shading import shade

    rng = case_rng(case["id"])
    shape = tuple(case["shape"])
    smooth = (rng.random(shape) * 40 if case["values"] == "noise"
              else np.full(shape, 3.0)).astype(case["dtype"])
    got = shade_on_device(compute, smooth, case["origin"]).astype(int)
    want = shade(smooth, renderer="numpy", origin=case["origin"]).astype(int)
    worst = int(np.abs(got - want).max())
    if worst > (1 if compute.supports_fp64 else 3):
        raise AssertionError(f"colours differ from NumPy's by up to {worst} levels")


def run_corner_case(compute: Any, case: dict) -> None:
    """Run ``case`` on ``compute`` and compare with NumPy (``Unsupported`` when the renderer
    refuses the vector shape or the precision)."""
    {"mandelbrot": _run_render, "shade": _run_shade}[case["kind"]](compute, case)
