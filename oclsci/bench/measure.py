"""Run one case: warm-up, timed repeats within a time budget, checks, derived figures.

NumPy runs first; its result is the reference of every check. Each OpenCL variant is warmed
up (which builds its kernels), timed ``repeat`` times (median kept) and checked against NumPy:
its timed results when NumPy ran as many iterations (or more), else a separate run of NumPy's
iteration count (the timed results must then be finite). A variant whose result differs is
marked ``failed`` and gets no speed-up, throughput or bandwidth: it never appears as a win.

Time budget: where time grows linearly with iterations (``Case.extrapolate``), a variant too
slow to run all iterations ``repeat`` times within ``Budget.variant_seconds`` is timed on
fewer iterations and its times are extrapolated; its record says how many
(``iterations_timed``, ``extrapolated``) and the tables mark it. Repeats also stop once the
budget is spent (after one run at least); the record keeps every sample.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oclsci.bench.core import VARIANT_ERRORS, Case, Check, Timing, Variant, finite_only
from oclsci.errors import first_line
from oclsci.runtime.launch import timed


@dataclass(frozen=True)
class Budget:
    """Seconds of timed runs: NumPy's repeats, and each OpenCL variant's in all."""

    reference_seconds: float
    variant_seconds: float


FULL = Budget(reference_seconds=15.0, variant_seconds=10.0)
QUICK = Budget(reference_seconds=3.0, variant_seconds=1.5)
RESULT_FIGURES = ("wall_seconds", "device_seconds", "speedup_vs_numpy", "us_per_iteration",
                  "throughput", "gb_per_s", "percent_of_copy_bandwidth")


def _median(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _round_down(value: int) -> int:
    """Keep two significant digits (12345 -> 12000), for readable iteration counts."""
    scale = 10 ** max(0, len(str(value)) - 2)
    return max(1, value // scale * scale)


class CaseRun:
    """The state of one case being run (progress, NumPy's results by iteration count)."""

    def __init__(self, case: Case, repeat: int, budget: Budget,
                 progress: Callable[[str], None] | None):
        self.case, self.repeat, self.budget = case, repeat, budget
        self.progress = progress or (lambda text: None)
        self.references: dict[int, Any] = {}
        self.reference_failed = False

    def say(self, text: str) -> None:
        self.progress(f"bench {self.case.id}: {text}")

    def timed_runs(self, variant: Variant, iterations: int, budget: float | None) -> list:
        """``repeat`` timed runs; fewer (one at least) once ``budget`` seconds are spent."""
        samples, spent = [], 0.0
        for index in range(self.repeat):
            if budget is not None and samples and spent * (1 + 1 / len(samples)) > budget:
                break
            self.say(f"{variant.name}: run {index + 1}/{self.repeat} "
                     f"({iterations} {self.case.iteration_unit}s)")
            seconds, sample = timed(lambda: variant.run(iterations))
            samples.append(sample)
            spent += seconds
        return samples

    def reference_at(self, iterations: int) -> Any:
        """NumPy's result after ``iterations`` (computed once; None if NumPy failed)."""
        if self.reference_failed:
            return None
        if iterations not in self.references:
            self.say(f"numpy: reference result after {iterations} {self.case.iteration_unit}s")
            self.references[iterations] = self.case.reference.run(iterations).output
        return self.references[iterations]

    def check(self, output: Any, iterations: int) -> Check:
        reference = self.reference_at(iterations)
        if reference is None:
            return Check(False, "no NumPy result to compare with (NumPy failed)")
        check = self.case.checker(output, reference)
        check.message += f" after {iterations} {self.case.iteration_unit}s"
        return check

    def planned_iterations(self, variant: Variant, warmup: Timing) -> int:
        """All iterations, or fewer if the variant cannot run them within the budget."""
        case = self.case
        if not case.extrapolate:
            return case.iterations
        steps = max(case.warmup_iterations, 1)
        if warmup.wall / steps * case.iterations * self.repeat <= self.budget.variant_seconds:
            return case.iterations
        # The warm-up may include a lazy build (PoCL): time a second short run unless the
        # warm-up alone already shows that the variant is slow.
        if warmup.wall * self.repeat <= self.budget.variant_seconds:
            warmup = variant.run(case.warmup_iterations)
        per_iteration = warmup.wall / steps
        if per_iteration * case.iterations * self.repeat <= self.budget.variant_seconds:
            return case.iterations
        fit = int(self.budget.variant_seconds / self.repeat / max(per_iteration, 1e-12))
        timed = min(case.iterations, _round_down(max(fit, case.warmup_iterations)))
        # Just short of NumPy's run: take NumPy's count, so its result serves the check.
        return case.reference_iterations if timed < case.reference_iterations <= 2 * timed \
            else timed

    def run_reference(self, record: dict) -> None:
        case = self.case
        k = case.reference_iterations
        self.say("numpy: warm-up")
        case.reference.run(1)
        samples = self.timed_runs(case.reference, k, self.budget.reference_seconds)
        self.references[k] = samples[-1].output
        note = (f" (ran {k} {case.iteration_unit}s; time extrapolated to {case.iterations})"
                if k < case.iterations else "")
        fill(record, case, samples, k, Check(True, "reference" + note), k)

    def run_variant(self, variant: Variant, record: dict) -> None:
        case = self.case
        self.say(f"{variant.name}: warm-up")
        timed = self.planned_iterations(variant, variant.run(case.warmup_iterations))
        samples = self.timed_runs(variant, timed, self.budget.variant_seconds)
        if timed <= case.reference_iterations:  # the timed results themselves
            verdicts = [self.check(sample.output, timed) for sample in samples]
            check_iterations = timed
        else:  # NumPy ran fewer iterations: check on a separate, shorter run
            check_iterations = case.reference_iterations
            self.say(f"{variant.name}: check run ({check_iterations} "
                     f"{case.iteration_unit}s)")
            output = variant.run(check_iterations).output
            verdicts = [self.check(output, check_iterations),
                        *(finite_only(sample.output) for sample in samples)]
        check = next((v for v in verdicts if not v.passed), verdicts[0])
        fill(record, case, samples, timed, check, check_iterations)
        record["description"] = variant.description  # may name what the run chose


def new_record(variant: Variant, reference: bool) -> dict:
    """A result record with nothing measured yet."""
    return {"variant": variant.name, "kind": variant.kind, "description": variant.description,
            "reference": reference, "status": "ok", "check": None, "check_iterations": None,
            "iterations_timed": None, "extrapolated": False, "wall_seconds_samples": [],
            "device_seconds_samples": [], "timing_source": "host clock",
            **{key: None for key in RESULT_FIGURES}}


def fill(record: dict, case: Case, samples: list, timed: int, check: Check,
         check_iterations: int) -> None:
    """Put the timings (scaled to all iterations) and the verdict into ``record``."""
    scale = case.iterations / timed
    walls = [s.wall * scale for s in samples]
    devices = [None if s.device is None else s.device * scale for s in samples]
    for sample in samples:
        sample.output = None
    record.update(
        check={"passed": check.passed, "message": check.message, **check.figures},
        check_iterations=check_iterations, status="ok" if check.passed else "failed",
        iterations_timed=timed, extrapolated=timed < case.iterations,
        wall_seconds_samples=walls, device_seconds_samples=devices,
        wall_seconds=_median(walls), device_seconds=_median(devices),
        timing_source=samples[-1].source)


def derive(case: Case, record: dict, numpy_wall: float | None,
           copy_gbps: float | None) -> None:
    """Speed-up (wall clocks), and per-iteration figures from device time (else wall)."""
    seconds = record["device_seconds"] or record["wall_seconds"]
    wall = record["wall_seconds"]
    if numpy_wall and wall and wall > 0:
        record["speedup_vs_numpy"] = numpy_wall / wall
    if not seconds or seconds <= 0:
        return
    record["us_per_iteration"] = 1e6 * seconds / case.iterations
    record["throughput"] = case.work / seconds
    if case.bytes_moved:
        gbps = case.bytes_moved / seconds / 1e9
        record["gb_per_s"] = gbps
        if copy_gbps and record["kind"] == "opencl":
            record["percent_of_copy_bandwidth"] = 100.0 * gbps / copy_gbps


def run_case(case: Case, repeat: int, progress: Callable[[str], None] | None = None,
             copy_gbps: float | None = None, budget: Budget = FULL) -> dict:
    """Run NumPy and every variant of ``case``; return its JSON record (``schema.json``)."""
    state = CaseRun(case, repeat, budget, progress)
    results = []
    for index, variant in enumerate([case.reference, *case.variants]):
        record = new_record(variant, reference=index == 0)
        results.append(record)
        if getattr(variant, "skip_reason", None):
            record.update(status="skipped",
                          check={"passed": None, "message": variant.skip_reason})
            continue
        try:
            if index == 0:
                state.run_reference(record)
            else:
                state.run_variant(variant, record)
        except VARIANT_ERRORS as error:
            state.reference_failed |= index == 0
            message = first_line(error, with_type=True)
            record.update(status="error", check={"passed": False, "message": message},
                          **{key: None for key in RESULT_FIGURES})
            continue
        if record["status"] == "ok":
            derive(case, record, results[0]["wall_seconds"], copy_gbps)
    return {
        "id": case.id, "workload": case.workload, "title": case.title, "problem": case.problem,
        "iterations": case.iterations, "iteration_unit": case.iteration_unit,
        "reference_iterations": case.reference_iterations,
        "throughput_unit": case.throughput_unit, "work": case.work,
        "bytes_moved": case.bytes_moved, "repeat": repeat,
        "warmup_iterations": case.warmup_iterations, "notes": list(case.notes),
        "results": results,
    }
