"""Run the benchmark workloads on one device and gather one JSON-ready report.

The report (schema: ``oclsci/bench/schema.json``) names the device, driver, host, versions,
date and command line, holds the device-to-device copy bandwidth measured in the same run,
and one record per case with every variant's figures.
"""

from __future__ import annotations

import datetime
import importlib
import os
import platform
import socket
import statistics
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci import WORKLOADS as ALL_WORKLOADS
from oclsci import __version__
from oclsci.bench.core import VARIANT_ERRORS, Case, Progress
from oclsci.bench.measure import FULL, QUICK, run_case
from oclsci.errors import InputError, UnknownNameError, first_line
from oclsci.runtime.device import create_context
from oclsci.runtime.signals import StopFlag

SCHEMA_ID = "oclsci-bench/1"
# Workload name -> module of this package with ``cases(compute, quick) -> (cases, skipped)``.
# Workload -> the module of its cases, from the workloads' records (oclsci.WORKLOADS); some
# are run only when named (their references take minutes on a CPU core).
WORKLOADS = {workload.name: workload.bench for workload in ALL_WORKLOADS if workload.bench}
NOT_IN_ALL = tuple(workload.name for workload in ALL_WORKLOADS
                   if workload.bench and not workload.bench_in_all)


def parse_workloads(names: tuple[str, ...] | list[str]) -> list[str]:
    """Expand ``all`` (every workload but :data:`NOT_IN_ALL`) and refuse unknown names; keep
    the order given, without duplicates."""
    chosen: list[str] = []
    for name in names or ("all",):
        if name == "all":
            expanded = [w for w in WORKLOADS if w not in NOT_IN_ALL]
        elif name in WORKLOADS:
            expanded = [name]
        else:
            raise UnknownNameError(f"unknown workload {name!r}; choose "
                                   f"{', '.join(WORKLOADS)} or all")
        chosen += [w for w in expanded if w not in chosen]
    return chosen


def measure_copy_bandwidth(compute: Any, quick: bool = False, repeat: int = 5) -> dict:
    """Device-to-device ``clEnqueueCopyBuffer`` bandwidth (bytes read + written per second)."""
    device = compute.device
    nbytes = min(2**26 if quick else 2**30, device.max_mem_alloc_size // 2,
                 device.global_mem_size // 8)
    nbytes = 1 << (max(nbytes, 2**20).bit_length() - 1)
    copies = 4
    flags = cl.mem_flags
    source = cl.Buffer(compute.context, flags.READ_WRITE, nbytes)
    target = cl.Buffer(compute.context, flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(compute.queue, source, np.uint8(1), 0, nbytes)
    for _ in range(2):  # warm-up: first touch of the pages
        cl.enqueue_copy(compute.queue, target, source)
    samples, sources = [], set()
    for _ in range(repeat):
        stopwatch = compute.stopwatch()
        for _ in range(copies):
            stopwatch.record(cl.enqueue_copy(compute.queue, target, source))
        stopwatch.stop()
        samples.append(2 * nbytes * copies / stopwatch.device_seconds / 1e9)
        sources.add(stopwatch.source)
    source.release()
    target.release()
    return {"method": "clEnqueueCopyBuffer device to device; bytes read + written",
            "buffer_bytes": int(nbytes), "copies_per_sample": copies,
            "gb_per_s": statistics.median(samples), "gb_per_s_samples": samples,
            "timing_source": sources.pop() if len(sources) == 1 else "mixed"}


def _version(module: str) -> str | None:
    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return None


def environment(compute: Any) -> dict:
    """Device, host and software versions for the report."""
    device = dict(compute.describe(), chosen_by=compute.chosen_by, profiling=compute.profiling,
                  platform_version=compute.platform.version.strip(),
                  opencl_c_version=compute.device.opencl_c_version.strip(),
                  max_mem_alloc_bytes=compute.facts.max_alloc_bytes)
    versions = {"oclsci": __version__, "python": platform.python_version(),
                "numpy": np.__version__, "pyopencl": cl.VERSION_TEXT}
    for package in ("mako", "click", "pocl-binary-distribution"):
        versions[package] = _version(package)
    host = {"hostname": socket.gethostname(), "os": platform.platform(),
            "machine": platform.machine(), "processor": _cpu_name(),
            "cpu_count": os.cpu_count(), "load_average_start": _load_average()}
    return {"device": device, "host": host, "versions": versions}


def _load_average() -> list[float] | None:
    """The host's 1, 5 and 15-minute load averages (other work skews host timings)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            for line in stream:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_bench(workloads: list[str], *, device: Any = None, quick: bool = False,
              repeat: int = 3, progress: Callable[[str], None] | None = None,
              extra_variants: Callable[[Case], list] | None = None,
              command_line: list[str] | None = None,
              notify: Callable[[str], None] | None = None) -> dict:
    """Run ``workloads`` on one device; return the report (a JSON-ready dict).

    ``device``: a ComputeContext, or a SPEC to open (None: the default choice);
    ``notify(line)`` gets the device line. ``extra_variants(case)`` may add variants to a case
    (e.g. one under development; the tests add a wrong one). Stop signals are collected
    from the device's opening on (a raising :class:`~oclsci.runtime.signals.StopFlag`): the
    bench stops with :class:`~oclsci.runtime.signals.SignalExit` at its next synchronisation
    point (a paced launch loop, or the next measurement).
    """
    if repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {repeat}")
    workloads = parse_workloads(workloads)
    progress = progress or Progress(enabled=False)
    with StopFlag(raising=True):
        compute = device if hasattr(device, "queue") else create_context(device)
        if notify is not None:
            notify(compute.banner())
        return _measure(workloads, compute, quick, repeat, progress, extra_variants,
                        command_line)


def _measure(workloads: list[str], compute: Any, quick: bool, repeat: int,
             progress: Callable[[str], None], extra_variants: Callable[[Case], list] | None,
             command_line: list[str] | None) -> dict:
    started = datetime.datetime.now(datetime.timezone.utc)
    load_at_start = _load_average()
    progress("bench: measuring the device's copy bandwidth")
    copy = measure_copy_bandwidth(compute, quick)
    records, skipped = [], []
    for workload in workloads:
        # Imported when chosen: a bench of one workload loads only that one's modules.
        module = importlib.import_module(WORKLOADS[workload])
        progress(f"bench {workload}: preparing")
        try:
            cases, notes = module.cases(compute, quick)
        except VARIANT_ERRORS as error:
            cases, notes = [], ["could not prepare its cases: "
                                + first_line(error, with_type=True)]
        skipped += [{"workload": workload, "reason": note} for note in notes]
        for case in cases:
            if extra_variants is not None:
                case.variants += list(extra_variants(case))
            records.append(run_case(case, repeat, progress, copy["gb_per_s"],
                                    QUICK if quick else FULL))
    finished = datetime.datetime.now(datetime.timezone.utc)
    info = environment(compute)
    info["host"].update(load_average_start=load_at_start, load_average_end=_load_average())
    return {
        "schema": SCHEMA_ID,
        "created": started.isoformat(timespec="seconds"),
        "duration_seconds": (finished - started).total_seconds(),
        "command_line": list(sys.argv if command_line is None else command_line),
        "settings": {"workloads": workloads, "quick": bool(quick), "repeat": int(repeat)},
        **info,
        "copy_bandwidth": copy,
        "cases": records,
        "skipped": skipped,
    }


def failures(report: dict) -> list[str]:
    """``case/variant`` of every variant that failed its check or could not run."""
    return [f"{case['id']}/{result['variant']}" for case in report["cases"]
            for result in case["results"] if result["status"] in ("failed", "error")]
