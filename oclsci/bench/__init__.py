"""``oclsci bench``: the seed talk's performance tables, side by side, on any device.

For each workload, NumPy on the host and every oclsci variant run the same problem in one
process; each result is checked against NumPy's (a wrong one is marked failed and never
counts as a win); each variant is warmed up, then timed several times (median), with the
host clock and OpenCL events. The report carries the device's copy bandwidth measured in the
same run. Modules: :mod:`.core` (timing, checks), :mod:`.runner` (devices, report),
:mod:`.report` (JSON, Markdown, PNG) and one module per workload.

>>> from oclsci.bench import run_bench, to_markdown
>>> report = run_bench(["jacobi"], quick=True)       # doctest: +SKIP
>>> print(to_markdown(report))                       # doctest: +SKIP
"""

from __future__ import annotations

from oclsci.bench.core import Case, Check, Timing, compare_arrays
from oclsci.bench.report import (
    schema,
    to_markdown,
    validate,
    write_json,
    write_markdown,
    write_plot,
)
from oclsci.bench.runner import SCHEMA_ID, WORKLOADS, failures, parse_workloads, run_bench

__all__ = [
    "Case", "Check", "Timing", "compare_arrays", "schema", "to_markdown",
    "validate", "write_json", "write_markdown", "write_plot", "SCHEMA_ID", "WORKLOADS",
    "failures", "parse_workloads", "run_bench",
]
