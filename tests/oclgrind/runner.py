"""The runner (the package run as a script, in the Oclgrind environment) and its commands.

``python tests/oclgrind JOB.json [LOG]`` runs the cases of JOB.json on the Oclgrind device,
prints one JSON line per case on stdout, brackets each case's stderr between marker lines,
and exits non-zero when any case failed or Oclgrind printed any report;
``--cases`` lists the case ids, ``--check`` runs every case and prints what failed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from oclgrind.cases import all_cases
from oclgrind.checks import run_case
from oclgrind.driver import BEGIN, END, SUPPRESSED, reports_in, run_cases
from oclsci.corners import Unsupported, prepare_corner_cases


def _templates_built(compute: Any) -> set[str]:
    return {key[1] for key in compute.program_cache if key and key[0] == "program"}


class StderrCapture:
    """Send file descriptor 2 (where Oclgrind writes) to a log file, read back per case.

    Everything captured is also copied to the original stderr, so a human running the script
    sees Oclgrind's output as usual.
    """

    def __init__(self, log_path: str | os.PathLike):
        self.path = Path(log_path)
        sys.stderr.flush()
        self.saved = os.dup(2)
        self.log = open(self.path, "wb+", buffering=0)  # noqa: SIM115 - closed in close()
        os.dup2(self.log.fileno(), 2)
        self.offset = 0

    def take(self) -> str:
        """The text written on fd 2 since the previous call."""
        sys.stderr.flush()
        with open(self.path, "rb") as stream:
            stream.seek(self.offset)
            data = stream.read()
        self.offset += len(data)
        os.write(self.saved, data)
        return data.decode(errors="replace")

    def close(self) -> None:
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.log.close()


def runner_main(job_path: str, log_path: str | None = None) -> int:
    """Run the cases of ``job_path`` on the Oclgrind device, one JSON line each on stdout.

    Exit status 0 only when every case gave the NumPy result and Oclgrind reported nothing.
    """
    import warnings

    # Keep stderr for Oclgrind: Python warnings go to stdout.
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"# warning: {category.__name__}: {message}", flush=True)

    warnings.showwarning = show
    cases = json.loads(Path(job_path).read_text())
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="oclsci-oclgrind-")) / "stderr.log"
    capture = StderrCapture(log_path)
    try:
        from oclsci.runtime.device import create_context

        compute = create_context("oclgrind", reuse=False)
        setup = reports_in(capture.take())
        if "oclgrind" not in compute.platform.name.lower():
            setup.append(f"device {compute.spec} ({compute.platform.name}) is not Oclgrind's")
        prepare_corner_cases(compute, cases)
        setup += reports_in(capture.take())
        print(json.dumps({"setup_reports": setup, "device": compute.name}), flush=True)
        failures = len(setup)
        silenced_by = None
        for case in cases:
            sys.stderr.write(f"{BEGIN}{case['id']}\n")
            start, cpu = time.perf_counter(), time.process_time()
            error = unsupported = None
            before = _templates_built(compute)
            try:
                run_case(compute, case)
                compute.queue.finish()
            except Unsupported as exc:
                unsupported = str(exc)
            except Exception as exc:  # noqa: BLE001 - reported per case
                error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                if not isinstance(exc, AssertionError):
                    error += "\n" + traceback.format_exc(limit=-3)
            sys.stderr.write(f"{END}{case['id']}\n")
            reports = reports_in(capture.take())
            if silenced_by:
                reports.append(f"not checked: Oclgrind stopped reporting after case {silenced_by}"
                               " reached OCLGRIND_MAX_ERRORS")
            elif any(SUPPRESSED in report for report in reports):
                silenced_by = case["id"]
            failures += error is not None or bool(reports)
            print(json.dumps({
                "id": case["id"], "ok": error is None, "error": error, "reports": reports,
                "unsupported": unsupported,
                "seconds": round(time.perf_counter() - start, 3),
                "cpu_seconds": round(time.process_time() - cpu, 3),
                "templates": sorted(_templates_built(compute) - before)}), flush=True)
        print(json.dumps({"templates_built": sorted(_templates_built(compute))}), flush=True)
    finally:
        capture.close()
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    """``python tests/oclgrind JOB.json [STDERR.log]``: the runner (in the Oclgrind
    environment); ``--cases``: print every case id; ``--check``: run every case in the
    Oclgrind environment and print what failed (exit status 1 on any)."""
    if len(argv) == 2 and argv[1] == "--cases":
        for case in all_cases():
            print(case["id"])
        return 0
    if len(argv) == 2 and argv[1] == "--check":
        result = run_cases(all_cases())
        bad = [o for o in result.outcomes.values() if not o.clean]
        for outcome in bad:
            print(outcome.explain())
        for report in result.setup_reports:
            print("setup report:\n" + report)
        slowest = sorted(result.outcomes.values(), key=lambda o: -o.cpu_seconds)[:10]
        print("slowest cases (CPU seconds):")
        for outcome in slowest:
            print(f"  {outcome.cpu_seconds:6.2f}  {outcome.case_id}")
        cpu = sum(o.cpu_seconds for o in result.outcomes.values())
        print(f"{len(result.outcomes) - len(bad)}/{len(result.outcomes)} cases clean in "
              f"{result.seconds:.1f} s ({cpu:.1f} s of CPU in the cases); templates built: "
              f"{sorted(result.templates)}")
        return 1 if bad or result.setup_reports else 0
    if len(argv) in (2, 3) and not argv[1].startswith("-"):
        return runner_main(argv[1], argv[2] if len(argv) == 3 else None)
    print(main.__doc__, file=sys.stderr)
    return 2
