"""Corner cases: every launch a workload can make, on tiny problems, checked against NumPy.

Each workload's record (:data:`oclsci.WORKLOADS`, its ``corner_cases`` field) names its
corner-case module, ``oclsci/<workload>/corners.py``, which defines

* ``corner_cases() -> list[dict]``: JSON-able cases, each with a unique ``id`` (see
  :func:`case_id`), a ``kind`` (which of the workload's launches it makes), a ``cost`` (a rough
  measure of its work, to share cases out among processes) and what the run needs: every
  kernel of the workload over its corner parameters (one cell, one row, sizes that divide
  nothing, work-groups larger and smaller than the problem, both precisions);
* ``run_corner_case(compute, case)``: runs it on ``compute`` and compares with the workload's
  NumPy reference; raises ``AssertionError`` naming what differs, or :class:`Unsupported` when
  oclsci refuses the configuration on that device;
* optionally ``prepare_corner_cases(compute, cases)``: what must be made before any case runs
  (buffers and solvers made up front).

They run on any device (:func:`run_corner_case` here takes a case of any workload). The
Oclgrind suite (``tests/oclgrind/``, docs/testing.md) runs them under the simulator, which also
reports out-of-bounds accesses, data races and reads of uninitialised memory.
"""

from __future__ import annotations

import hashlib
import importlib
from types import ModuleType
from typing import Any

from oclsci import WORKLOADS


class Unsupported(Exception):
    """oclsci refuses this case's configuration on this device (the case is skipped)."""


def case_id(*parts: Any) -> str:
    """A case id: the non-empty ``parts`` joined by dashes."""
    return "-".join(str(part) for part in parts if part != "")


def case_rng(case_id: str):
    """A random generator seeded by the case's id: the same data at every run."""
    import numpy as np

    seed = int.from_bytes(hashlib.sha1(case_id.encode()).digest()[:8], "little")
    return np.random.default_rng(seed)


def corner_module(workload: str) -> ModuleType:
    """The corner-case module of the workload named ``workload``."""
    record = next((w for w in WORKLOADS if w.name == workload), None)
    if record is None or record.corner_cases is None:
        raise KeyError(f"workload {workload!r} has no corner cases")
    return importlib.import_module(record.corner_cases)


def workload_corner_cases(workload: str) -> list[dict]:
    """The corner cases of ``workload``, each marked with its ``workload``."""
    return [dict(case, workload=workload)
            for case in corner_module(workload).corner_cases()]


def all_corner_cases() -> list[dict]:
    """The corner cases of every workload that has them, in the order of the records."""
    return [case for workload in WORKLOADS if workload.corner_cases
            for case in workload_corner_cases(workload.name)]


def prepare_corner_cases(compute: Any, cases: list[dict]) -> None:
    """Let each workload among ``cases`` make what its cases need up front."""
    for workload in dict.fromkeys(case["workload"] for case in cases if "workload" in case):
        prepare = getattr(corner_module(workload), "prepare_corner_cases", None)
        if prepare is not None:
            prepare(compute, [case for case in cases if case.get("workload") == workload])


def run_corner_case(compute: Any, case: dict) -> None:
    """Run ``case`` (marked with its workload) on ``compute`` and compare with NumPy
    (:class:`Unsupported` for a float64 case on a device without float64)."""
    if case.get("dtype") == "float64" and not compute.supports_fp64:
        raise Unsupported(f"device {compute.name} has no float64")
    corner_module(case["workload"]).run_corner_case(compute, case)
