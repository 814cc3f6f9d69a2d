"""Running cases under Oclgrind in subprocesses and reading the outcome of each.

:func:`run_cases` starts the runner (``python tests/oclgrind JOB.json LOG``,
:mod:`oclgrind.runner`) in processes whose environment shows Oclgrind, and splits
Oclgrind's stderr into per-case reports (:func:`reports_in`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oclgrind.install import make_vendors_dir, missing_reason, oclgrind_environ

# The package's folder: run as a script, it is the runner.
PACKAGE = Path(__file__).resolve().parent

# Reports that are not oclsci's: PyOpenCL probes every device for NVIDIA's compute capability
# (CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, 0x4000; pyopencl.characterize.nv_compute_capability)
# when it builds a program and creates a kernel, and handles the CL_INVALID_VALUE it gets.
HARMLESS_REPORTS = (
    "Oclgrind - OpenCL runtime error detected\n"
    "\tFunction: clGetDeviceInfo\n"
    "\tError:    CL_INVALID_VALUE\n"
    "\tFor argument 'param_name'",
)

# Oclgrind counts errors per process and stays silent after OCLGRIND_MAX_ERRORS of them.
SUPPRESSED = "errors generated - suppressing further errors"
BEGIN = "@@oclsci-case-begin "
END = "@@oclsci-case-end "


def reports_in(text: str) -> list[str]:
    """Oclgrind's reports in ``text``, harmless ones (:data:`HARMLESS_REPORTS`) left out.

    A report starts on an unindented line; its indented lines (and blank lines inside it)
    follow. Anything else on stderr counts as a report too: the runner sends Python warnings
    to stdout, so stderr carries only Oclgrind's output and the runner's marker lines.
    """
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith((BEGIN, END)) or not line.strip():
            continue
        if line[0].isspace() and blocks:
            blocks[-1].append(line.rstrip())
        else:
            blocks.append([line.rstrip()])
    reports = ["\n".join(block) for block in blocks]
    return [report for report in reports if report not in HARMLESS_REPORTS]


@dataclass
class CaseOutcome:
    """What happened to one case under Oclgrind."""

    case_id: str
    ran: bool = False
    ok: bool = False
    error: str | None = None
    reports: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    templates: list[str] = field(default_factory=list)
    unsupported: str | None = None  # oclsci refused the configuration (the test skips)

    @property
    def clean(self) -> bool:
        """Ran, gave the NumPy result, and Oclgrind reported nothing."""
        return self.ran and self.ok and not self.reports

    def explain(self) -> str:
        """A failure message: the error and every Oclgrind report."""
        lines = [f"case {self.case_id}:"]
        if not self.ran:
            lines.append("  did not run (the runner died before it; see the setup output)")
        if self.error:
            lines.append("  error: " + self.error)
        for report in self.reports:
            lines.append("  Oclgrind report:\n    " + report.replace("\n", "\n    "))
        return "\n".join(lines)


@dataclass
class RunResult:
    """All cases of one or more runner processes."""

    outcomes: dict[str, CaseOutcome]
    setup_reports: list[str]
    returncodes: list[int]
    stderr_tails: list[str]
    templates: set[str]
    seconds: float


def _chunks(cases: list[dict], count: int) -> list[list[dict]]:
    """Split ``cases`` in ``count`` lists of similar cost (estimated from grid size)."""
    cost = sorted(cases, key=lambda c: -int(c.get("cost", 1)))
    chunks: list[list[dict]] = [[] for _ in range(max(1, count))]
    totals = [0] * len(chunks)
    for case in cost:
        i = totals.index(min(totals))
        chunks[i].append(case)
        totals[i] += int(case.get("cost", 1))
    return [chunk for chunk in chunks if chunk]


class _Runner:
    """A runner process whose stdout and stderr threads read as it writes; ``last`` is when
    it last printed a line (a case done)."""

    def __init__(self, log: Path, process: subprocess.Popen):
        self.log, self.process = log, process
        self.out: list[str] = []
        self.err: list[str] = []
        self.last = time.monotonic()
        self.note = ""
        self.readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                        for stream, lines in ((process.stdout, self.out),
                                              (process.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            self.last = time.monotonic()

    def output(self) -> tuple[int, str, str]:
        """(return code, stdout, the end of its stderr and log) once it has ended."""
        for reader in self.readers:
            reader.join()
        logged = self.log.read_text(errors="replace") if self.log.exists() else ""
        return (self.process.returncode, "".join(self.out),
                (logged + "".join(self.err) + self.note)[-4000:])


def _wait(runners: list[_Runner], stall: float) -> None:
    """Wait for every runner; kill those left when none has printed for ``stall`` s."""
    while any(runner.process.poll() is None for runner in runners):
        if time.monotonic() - max(runner.last for runner in runners) > stall:
            for runner in runners:
                if runner.process.poll() is None:
                    runner.process.kill()
                    runner.note = f"\nrunner killed: no case finished for {stall:.0f} s"
        time.sleep(0.5)
    for runner in runners:
        runner.process.wait()


def run_cases(cases: list[dict], *, workers: int | None = None, stall: float = 900,
              extra_env: dict | None = None) -> RunResult:
    """Run ``cases`` under Oclgrind in ``workers`` parallel subprocesses; collect outcomes.

    ``workers`` defaults to ``$OCLSCI_OCLGRIND_WORKERS``, else 2 (or 1 on one core). A runner
    that dies (a crash, or no case finished by any runner for ``stall`` seconds: a hang, not
    a slow machine) leaves its remaining cases with ``ran=False``.
    """
    reason = missing_reason()
    if reason:
        raise RuntimeError(reason)
    workers = workers or int(os.environ.get("OCLSCI_OCLGRIND_WORKERS", "0")) or min(
        2, os.cpu_count() or 1)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="oclsci-oclgrind-") as tmp:
        vendors = make_vendors_dir(Path(tmp) / "vendors")
        env = oclgrind_environ(vendors)
        # Each process simulates its work-groups on one thread: the processes share the cores.
        if workers > 1:
            env.setdefault("OCLGRIND_NUM_THREADS", "1")
        env.update(extra_env or {})
        runners = []
        for index, chunk in enumerate(_chunks(cases, workers)):
            job, log = Path(tmp) / f"job{index}.json", Path(tmp) / f"stderr{index}.log"
            job.write_text(json.dumps(chunk))
            runners.append(_Runner(log, subprocess.Popen(
                [sys.executable, str(PACKAGE), str(job), str(log)], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)))
        _wait(runners, stall)
        outputs = [runner.output() for runner in runners]
    outcomes = {case["id"]: CaseOutcome(case["id"]) for case in cases}
    setup_reports: list[str] = []
    templates: set[str] = set()
    for returncode, out, tail in outputs:
        saw_setup = False
        for line in out.splitlines():
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if "setup_reports" in record:
                saw_setup = True
                setup_reports.extend(record["setup_reports"])
            elif "templates_built" in record:
                templates.update(record["templates_built"])
            elif record.get("id") in outcomes:
                outcome = outcomes[record["id"]]
                outcome.ran, outcome.ok = True, record["ok"]
                outcome.error, outcome.reports = record["error"], record["reports"]
                outcome.seconds, outcome.templates = record["seconds"], record["templates"]
                outcome.cpu_seconds = record.get("cpu_seconds", 0.0)
                outcome.unsupported = record.get("unsupported")
        if not saw_setup or returncode not in (0, 1):
            setup_reports.append(f"runner exited with status {returncode}; its stderr ends "
                                 f"with:\n{tail}")
    return RunResult(outcomes=outcomes, setup_reports=setup_reports,
                     returncodes=[code for code, _, _ in outputs],
                     stderr_tails=[tail for _, _, tail in outputs], templates=templates,
                     seconds=time.perf_counter() - start)
