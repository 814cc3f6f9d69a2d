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

Each workload's checks are in its package (``oclsci/<workload>/selftest.py``), listed by
:data:`oclsci.WORKLOADS`. A check that fails to build or to launch is a FAIL with the
error's first line, not a crash.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oclsci import WORKLOADS
from oclsci.errors import OclsciError, first_line
from oclsci.io import check_output_path, write_text
from oclsci.runtime.device import ComputeContext, create_context
from oclsci.runtime.launch import timed

# Problem sizes: odd, not multiples of any work-group or tile; steps not a multiple of any
# kernel's steps per launch. --quick uses the smaller set.
SIZES = {"full": {"jacobi": (201, 263), "steps": 37, "mandelbrot": (301, 233, 300),
                  "elementwise": 100_003, "poisson": (201, 263), "lombscargle": (1001, 10_007)},
         "quick": {"jacobi": (67, 91), "steps": 13, "mandelbrot": (151, 117, 200),
                   "elementwise": 10_007, "poisson": (67, 91), "lombscargle": (201, 1009)}}


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


def all_checks(compute: ComputeContext, quick: bool = False) -> list[tuple[str, Callable]]:
    """Every workload's checks for ``compute`` (oclsci.WORKLOADS): ``(name, function returning
    (passed, diff, detail))``."""
    size = SIZES["quick" if quick else "full"]
    return [check for workload in WORKLOADS for check in workload.selftest_checks(compute, size)]


def run_check(name: str, check: Callable) -> Check:
    """Run one check; a build or launch error is a FAIL with the error's first line."""
    start = time.perf_counter()
    try:
        passed, diff, detail = check()
    except Exception as error:  # noqa: BLE001 - any failure of the device is a FAIL line
        return Check(name, False, None, time.perf_counter() - start,
                     first_line(error, with_type=True)[:200])
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


class SelftestFailed(OclsciError):
    """At least one check of ``oclsci selftest`` failed (exit 1)."""


@dataclass
class SelftestOutcome:
    """One selftest run: the device, every check's outcome, the seconds they took in all, and
    the report written (``--json``), if any."""

    compute: ComputeContext
    results: list[Check]
    seconds: float
    written: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Check]:
        """The checks that failed."""
        return [r for r in self.results if not r.passed]

    def raise_for_failures(self) -> None:
        """Raise :class:`SelftestFailed` naming the first failed checks, if any failed."""
        failed, compute = self.failed, self.compute
        if failed:
            raise SelftestFailed(f"selftest: {len(failed)} of {len(self.results)} checks failed "
                                 f"on {compute.spec} ({compute.name}): "
                                 + ", ".join(r.name for r in failed[:5])
                                 + (" ..." if len(failed) > 5 else ""))


def run_selftest(device: str | None = None, *, quick: bool = False,
                 json_path: str | Path | None = None,
                 opened: Callable[[ComputeContext], Any] | None = None,
                 report: Callable[[Check], Any] | None = None) -> SelftestOutcome:
    """``oclsci selftest``: open ``device`` (a SPEC; None: the default choice), run every check
    on it and write the JSON :func:`summary` to ``json_path`` (any suffix; refused before the
    device opens when it cannot be written). ``opened(compute)`` is called once the device is
    open, ``report(check)`` after each check. A failed check is in the outcome, not raised
    (:meth:`SelftestOutcome.raise_for_failures`)."""
    if json_path:  # an unwritable report fails now, not after the checks
        check_output_path(json_path, (Path(json_path).suffix.lower(),))
    compute = create_context(device)
    if opened is not None:
        opened(compute)
    seconds, results = timed(lambda: selftest(compute, quick=quick, report=report))
    outcome = SelftestOutcome(compute, results, seconds)
    if json_path:
        text = json.dumps(summary(compute, results, seconds), indent=2) + "\n"
        outcome.written.append(str(write_text(json_path, text)))
    return outcome
