"""``oclsci selftest``: build and run every kernel oclsci may choose on a device, check each.

The first command on a new node. Each check builds one kernel configuration, runs it on a
small but non-trivial problem and compares with the NumPy reference:

* Jacobi: every kernel of :data:`oclsci.jacobi.kernels.KERNELS` with the device's default
  configuration, and the configuration ``--kernel auto`` picks (tuned or default), for the
  test's grid and for a large one (:data:`LARGE_GRID`: the configurations are run on the
  test's grid), in float32 and float64 (where the device has fp64), bit for bit;
* Mandelbrot: the device's kernel shape in both dtypes, escape counts as in the tests (at most
  0.5% of the pixels may differ by rounding at the set's edge);
* elementwise: every ready-made operation in signed, unsigned and floating types, exactly;
* Poisson: multigrid and conjugate gradients to a tolerance per dtype, the residual of the
  device's solution recomputed in float64 by NumPy;
* Lomb-Scargle: every kernel variant and ``auto`` against the NumPy periodogram, within the
  bound of the dtype (:func:`~oclsci.lombscargle.periodogram.float32_bound`; 1e-9 in float64).

A check that fails to build or to launch is a FAIL with the error's first line, not a crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from oclsci.elementwise.ops import OPS
from oclsci.errors import first_line
from oclsci.jacobi.kernels import KERNELS
from oclsci.jacobi.reference import jacobi_numpy
from oclsci.jacobi.runner import run
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.tuning import choose_config, device_default
from oclsci.lombscargle.periodogram import VARIANTS, float32_bound, lombscargle
from oclsci.lombscargle.reference import lombscargle_numpy
from oclsci.mandelbrot.reference import mandelbrot_numpy
from oclsci.mandelbrot.renderer import mandelbrot
from oclsci.poisson import solve as poisson_solve
from oclsci.poisson.hierarchy import build_levels
from oclsci.poisson.reference import residual as poisson_residual
from oclsci.runtime.device import ComputeContext

# Problem sizes: odd, not multiples of any work-group or tile; steps not a multiple of any
# kernel's steps per launch. --quick uses the smaller set.
SIZES = {"full": {"jacobi": (201, 263), "steps": 37, "mandelbrot": (301, 233, 300),
                  "elementwise": 100_003, "poisson": (201, 263), "lombscargle": (1001, 10_007)},
         "quick": {"jacobi": (67, 91), "steps": 13, "mandelbrot": (151, 117, 200),
                   "elementwise": 10_007, "poisson": (67, 91), "lombscargle": (201, 1009)}}
# The grid whose configurations are checked too: large enough for every large-grid default and
# for ``auto``'s choice on large grids (streaming from 2^25 cells on GPUs).
LARGE_GRID = (16384, 16384)
MANDELBROT_AGREEMENT = 0.995
POISSON_TOL = {"float32": 1e-4, "float64": 1e-8}
POISSON_METHODS = ("multigrid", "cg")
ELEMENTWISE_TYPES = ("int8", "uint16", "int32", "int64", "float32", "float64")


@dataclass
class Check:
    """The outcome of one check: PASS or FAIL, the largest difference, the seconds it took."""

    name: str
    passed: bool
    max_difference: float | None
    seconds: float
    detail: str = ""

    def line(self) -> str:
        """One line of the report."""
        diff = "-" if self.max_difference is None else f"{self.max_difference:.3g}"
        detail = f"  {self.detail}" if self.detail else ""
        return (f"{'PASS' if self.passed else 'FAIL'}  {self.name:<44} max diff {diff:<9} "
                f"{self.seconds:7.2f} s{detail}")


def _dtypes(compute: ComputeContext) -> tuple[np.dtype, ...]:
    if compute.supports_fp64:
        return (np.dtype(np.float32), np.dtype(np.float64))
    return (np.dtype(np.float32),)


def _jacobi_checks(compute: ComputeContext, size: dict) -> Iterator[tuple[str, Callable]]:
    rng = np.random.default_rng(15)
    shape, steps = size["jacobi"], size["steps"]
    for dtype in _dtypes(compute):
        rhs = (rng.standard_normal(shape) * 100).astype(dtype)
        expected = jacobi_numpy(rhs, steps, dtype=dtype)
        configs: dict[str, tuple[str, Any]] = {}  # by description: each configuration once
        for grid, suffix in ((shape, ""), (LARGE_GRID, " (large grids)")):
            auto = choose_config(compute, "auto", dtype, grid)
            configs.setdefault(auto.describe(), (f"auto={auto.name}{suffix}", auto))
            for name in KERNELS:
                config = device_default(compute, name, dtype, grid)
                configs.setdefault(config.describe(), (f"{name}{suffix}", config))
        for label, config in configs.values():
            def check(config=config, rhs=rhs, expected=expected, dtype=dtype):
                solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
                run(solver, steps)
                got = solver.read()
                diff = float(np.max(np.abs(got.astype(np.float64) - expected)))
                return diff == 0.0 and bool(np.all(np.isfinite(got))), diff, config.describe()
            yield f"jacobi {label} {dtype.name} {shape[0]}x{shape[1]} {steps} steps", check


def _mandelbrot_checks(compute: ComputeContext, size: dict) -> Iterator[tuple[str, Callable]]:
    width, height, maxiter = size["mandelbrot"]
    for dtype in _dtypes(compute):
        def check(dtype=dtype):
            result = mandelbrot(width, height, maxiter, dtype=dtype, device=compute)
            expected, _ = mandelbrot_numpy(width, height, maxiter, dtype=dtype)
            agreement = float(np.mean(result.counts == expected))
            diff = float(np.max(np.abs(result.counts.astype(np.int64) - expected)))
            return (agreement >= MANDELBROT_AGREEMENT and expected.max() > 0, diff,
                    f"{100 * agreement:.2f}% of counts equal")
        yield f"mandelbrot {dtype.name} {width}x{height} maxiter {maxiter}", check


def _random(rng: np.random.Generator, size: int, dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    return rng.standard_normal(size).astype(dtype)


def _elementwise_checks(compute: ComputeContext, size: dict) -> Iterator[tuple[str, Callable]]:
    rng = np.random.default_rng(16)
    count = size["elementwise"]
    for type_name in ELEMENTWISE_TYPES:
        dtype = np.dtype(type_name)
        if dtype == np.float64 and not compute.supports_fp64:
            continue
        for op in OPS.values():
            def check(op=op, dtype=dtype):
                arrays = [_random(rng, count, dtype) for _ in op.arrays]
                scalar = dtype.type(3)
                with np.errstate(over="ignore"):
                    expected = op.reference(*([scalar] if op.scalar_position == 0 else []),
                                            *arrays, *([scalar] if op.scalar_position else []))
                args = list(arrays)
                if op.scalar_position is not None:
                    args.insert(op.scalar_position, scalar)
                written = {name: array for name, array in zip(op.arrays, arrays, strict=True)}
                out = op.kernel(*args, device=compute)
                got = written.get(op.written, out)
                diff = float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64))))
                return bool(np.array_equal(got, expected)), diff, ""
            yield f"elementwise {op.name} {type_name} n={count}", check


def _poisson_checks(compute: ComputeContext, size: dict) -> Iterator[tuple[str, Callable]]:
    shape = size["poisson"]
    rhs = np.random.default_rng(17).standard_normal(shape)
    level = build_levels(shape)[0]
    scale = float(np.linalg.norm(rhs))
    for dtype in _dtypes(compute):
        tol = POISSON_TOL[dtype.name]
        for method in POISSON_METHODS:
            def check(method=method, dtype=dtype, tol=tol):
                result = poisson_solve(rhs, tol, method=method, dtype=dtype, device=compute)
                relative = float(np.linalg.norm(poisson_residual(
                    level, result.x.astype(np.float64), rhs))) / scale
                return (result.converged and relative < 2 * tol, relative,
                        f"{result.cycles} cycles, residual {relative:.3g} (NumPy, float64)")
            yield f"poisson {method} {dtype.name} {shape[0]}x{shape[1]} tol {tol:g}", check


def _lombscargle_checks(compute: ComputeContext,
                        size: dict) -> Iterator[tuple[str, Callable]]:
    samples, count = size["lombscargle"]
    rng = np.random.default_rng(18)
    x = np.sort(rng.uniform(0, 100, samples))
    y = np.sin(1.3 * x) + rng.standard_normal(samples)
    freqs = np.linspace(0.01, 10, count)
    expected = lombscargle_numpy(x, y, freqs)
    scale = max(float(np.max(expected)), samples * float(np.mean(y ** 2)) / 4)
    for dtype in _dtypes(compute):
        bound = 1e-9 if dtype == np.float64 else float32_bound(x, freqs)
        for variant in ("auto", *VARIANTS):
            def check(variant=variant, dtype=dtype, bound=bound):
                got = lombscargle(x, y, freqs, dtype=dtype, device=compute, variant=variant)
                diff = float(np.max(np.abs(got.astype(np.float64) - expected)))
                return diff <= bound * scale, diff, f"bound {bound * scale:.3g}"
            yield f"lombscargle {variant} {dtype.name} {samples} x {count}", check


def all_checks(compute: ComputeContext, quick: bool = False) -> list[tuple[str, Callable]]:
    """Every check for ``compute``: ``(name, function returning (passed, diff, detail))``."""
    size = SIZES["quick" if quick else "full"]
    return [*_jacobi_checks(compute, size), *_mandelbrot_checks(compute, size),
            *_elementwise_checks(compute, size), *_poisson_checks(compute, size),
            *_lombscargle_checks(compute, size)]


def run_check(name: str, check: Callable) -> Check:
    """Run one check; a build or launch error is a FAIL with the error's first line."""
    start = time.perf_counter()
    try:
        passed, diff, detail = check()
    except Exception as error:  # noqa: BLE001 - any failure of the device is a FAIL line
        return Check(name, False, None, time.perf_counter() - start,
                     f"{type(error).__name__}: {first_line(error)[:200]}")
    return Check(name, bool(passed), None if diff is None else float(diff),
                 time.perf_counter() - start, detail)


def selftest(compute: ComputeContext, *, quick: bool = False,
             report: Callable[[Check], Any] | None = None) -> list[Check]:
    """Run every check on ``compute``, calling ``report`` after each; return the outcomes."""
    results = []
    for name, check in all_checks(compute, quick=quick):
        outcome = run_check(name, check)
        results.append(outcome)
        if report is not None:
            report(outcome)
    return results


def summary(compute: ComputeContext, results: list[Check], seconds: float) -> dict:
    """The JSON document of ``oclsci selftest --json``."""
    failed = [r.name for r in results if not r.passed]
    return {"device": compute.describe(), "passed": not failed, "checks": len(results),
            "failed": failed, "seconds": seconds, "results": [asdict(r) for r in results]}
