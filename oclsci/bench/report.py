"""Write a benchmark report as JSON, a Markdown table or a PNG chart (atomically)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from oclsci.io import (
    atomic_path,
    check_output_path,
    require_matplotlib,
    write_outputs,
    write_text,
)

SCHEMA_PATH = Path(__file__).with_name("schema.json")


@lru_cache(maxsize=1)
def schema() -> dict:
    """The JSON schema of the report."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(report: dict) -> None:
    """Raise ``jsonschema.ValidationError`` if ``report`` breaks the schema (needs jsonschema)."""
    import jsonschema  # optional (the test extra): imported only to validate

    jsonschema.validate(report, schema())


def write_json(report: dict, path: str | Path) -> None:
    """Write the report as indented JSON, atomically."""
    write_text(path, json.dumps(report, indent=2, allow_nan=False) + "\n")


def write_markdown(report: dict, path: str | Path) -> None:
    """Write the Markdown tables, atomically."""
    write_text(path, to_markdown(report))


def check_plot_available() -> None:
    """Refuse ``--plot`` before any work when matplotlib is missing."""
    require_matplotlib("--plot")


def check_report_paths(json_path: str | Path | None = None,
                       markdown_path: str | Path | None = None,
                       plot_path: str | Path | None = None) -> None:
    """Refuse, before any work, a report output that could not be written (a folder, a
    missing or unwritable folder, a suffix other than the format's) and a plot without
    matplotlib (:func:`oclsci.io.check_output_path`)."""
    check_output_path(json_path, (".json",))
    check_output_path(markdown_path, (".md", ".markdown"))
    check_output_path(plot_path, (".png",))
    if plot_path:
        check_plot_available()


def write_reports(report: dict, *, json_path: str | Path | None = None,
                  markdown_path: str | Path | None = None,
                  plot_path: str | Path | None = None) -> list[str]:
    """Write ``report`` to each path given: JSON, Markdown tables, PNG chart, each atomically
    (:func:`oclsci.io.write_outputs`: a failure says what was written before it); return
    the paths written."""
    return write_outputs([(json_path, lambda: write_json(report, json_path)),
                          (markdown_path, lambda: write_markdown(report, markdown_path)),
                          (plot_path, lambda: write_plot(report, plot_path))])


def number(value: Any, digits: int = 3) -> str:
    """A figure with ``digits`` significant digits, without exponents for everyday sizes."""
    if value is None:
        return "—"
    value = float(value)
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10 ** digits:
        return f"{value:,.0f}"
    if magnitude >= 1e-4:
        decimals = max(0, digits - 1 - int(f"{magnitude:e}".split("e")[1]))
        return f"{value:.{decimals}f}"
    return f"{value:.{digits - 1}e}"


def _prefix(values: list[float]) -> tuple[str, float]:
    top = max((v for v in values if v), default=0.0)
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if top >= scale:
            return prefix, scale
    return "", 1.0


def _check_cell(result: dict) -> str:
    check = result.get("check") or {}
    message = str(check.get("message", "")).replace("|", "/")
    if result["status"] == "ok":
        return "reference" if result["reference"] else "ok"
    if result["status"] == "skipped":
        return f"skipped: {message}"
    if result["status"] == "failed":
        return f"**FAILED** ({message})"
    return f"**ERROR** ({message})"


def _spread(result: dict) -> str:
    """How many timed runs, and (max - min) / median of their wall times."""
    samples = result["wall_seconds_samples"]
    if not samples:
        return "—"
    median = result["wall_seconds"] or 0
    if len(samples) == 1 or median <= 0:
        return str(len(samples))
    return f"{len(samples)} ({100 * (max(samples) - min(samples)) / median:.0f}%)"


def _how(result: dict, case: dict) -> str:
    """How a result was timed and checked, when it is not the plain case."""
    unit = case["iteration_unit"]
    parts = []
    if result["extrapolated"]:
        parts.append(f"timed on {result['iterations_timed']} {unit}s, extrapolated")
    if result["check_iterations"] and not result["reference"]:
        parts.append(f"checked after {result['check_iterations']} {unit}s")
    if result["wall_seconds_samples"] and len(result["wall_seconds_samples"]) < case["repeat"]:
        parts.append(f"{len(result['wall_seconds_samples'])} timed run(s) (time budget)")
    return f" ({'; '.join(parts)})" if parts else ""


def case_table(case: dict, level: int = 3) -> str:
    """The Markdown table of one case (a heading of ``level``), notes and descriptions."""
    unit = case["iteration_unit"]
    prefix, scale = _prefix([r["throughput"] or 0 for r in case["results"]])
    header = ["variant", "check", "wall s", "runs (spread)", "device s",
              f"speed-up vs {reference_name(case)}",
              f"µs/{unit}",
              f"{prefix} {case['throughput_unit']}".strip(), "GB/s", "% of copy BW"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    marked = False
    for result in case["results"]:
        wall = number(result["wall_seconds"])
        if result["extrapolated"] and result["wall_seconds"] is not None:
            wall += "*"
            marked = True
        throughput = None if result["throughput"] is None else result["throughput"] / scale
        speedup = result["speedup_vs_numpy"]
        cells = [f"`{result['variant']}`", _check_cell(result), wall, _spread(result),
                 number(result["device_seconds"]),
                 "—" if speedup is None else f"{number(speedup)}x",
                 number(result["us_per_iteration"]), number(throughput),
                 number(result["gb_per_s"]), number(result["percent_of_copy_bandwidth"], 2)]
        rows.append("| " + " | ".join(cells) + " |")
    lines = [f"{'#' * level} {case['title']}", "", *rows, ""]
    if marked:
        lines += [f"\\* timed on fewer {unit}s and extrapolated linearly (see below).", ""]
    lines += [f"- {note}" for note in case["notes"]]
    lines += [f"- `{r['variant']}`: {r['description']}{_how(r, case)}" for r in case["results"]]
    return "\n".join(lines) + "\n"


def _load(host: dict) -> str:
    start, end = host.get("load_average_start"), host.get("load_average_end")
    if not start:
        return ""
    return (f"; load average {start[0]:g} at the start, {end[0]:g} at the end" if end
            else f"; load average {start[0]:g} at the start")


def to_markdown(report: dict, level: int = 2) -> str:
    """The report as Markdown: a heading of ``level`` naming the device, a table per case."""
    device, host, copy = report["device"], report["host"], report["copy_bandwidth"]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v)
    settings = report["settings"]
    lines = [
        f"{'#' * level} oclsci bench: {device['name']} ({device['platform']})",
        "",
        f"- date: {report['created']}; command: `{' '.join(report['command_line'])}`",
        f"- device {device['spec']}: {device['type']}, {device['compute_units']} compute units, "
        f"{device['global_mem_bytes'] / 2**30:.1f} GiB; driver {device['driver_version']}; "
        f"{device['opencl_version']}",
        f"- host: {host['processor']}, {host['cpu_count']} logical CPUs; {host['os']}"
        + _load(host),
        f"- versions: {versions}",
        f"- device copy bandwidth: **{number(copy['gb_per_s'])} GB/s** "
        f"({copy['buffer_bytes'] // 2**20} MiB buffers, read + write bytes, median of "
        f"{len(copy['gb_per_s_samples'])})",
        f"- median of {settings['repeat']} timed runs after a warm-up"
        + (" (--quick: smaller problems)" if settings["quick"] else ""),
        "",
        "Wall: host clock from the first enqueue to `queue.finish()` (set-up, build and "
        "transfers excluded); median of the runs, whose spread is (max - min) / median. "
        "Device: OpenCL profiling events. Speed-up: the reference's wall time (NumPy's, or "
        "SciPy's where SciPy is the reference) over the variant's. µs per iteration, "
        "throughput, GB/s (minimum bytes a variant must move) and % of copy bandwidth: from "
        "device time where there is one. A variant whose result differs from the "
        "reference's is marked FAILED and gets no figures but its times.",
        "",
    ]
    lines += [case_table(case, level + 1) for case in report["cases"]]
    if report["skipped"]:
        lines += ["Skipped:", ""]
        lines += [f"- {item['workload']}: {item['reason']}" for item in report["skipped"]]
        lines.append("")
    return "\n".join(lines)


#: How the reports' reference variants read in a label.
REFERENCE_NAMES = {"numpy": "NumPy", "scipy": "SciPy", "scipy-direct": "SciPy's direct solver"}


def reference_name(case: dict) -> str:
    """What a case's speed-ups are measured against: NumPy, or SciPy where SciPy is the
    reference."""
    reference = next((r for r in case["results"] if r["reference"]), None)
    if reference is None:
        return "the reference"
    return REFERENCE_NAMES.get(reference["variant"], reference["variant"])


def chart_bars(case: dict) -> list[dict]:
    """One bar per variant of ``case``: its label (``*``: extrapolated; a failed check
    named), speed-up over the reference (0: no figure), the range of speed-ups its timed runs
    give (the spread; None with one run), and how to draw it."""
    reference = next((r for r in case["results"] if r["reference"]), None)
    reference_wall = reference["wall_seconds"] if reference else None
    bars = []
    for result in case["results"]:
        value = result["speedup_vs_numpy"] or 0.0
        samples = [s for s in result["wall_seconds_samples"] or [] if s and s > 0]
        spread = None
        if reference_wall and value and len(samples) > 1:
            spread = (reference_wall / max(samples), reference_wall / min(samples))
        label = result["variant"] + (" *" if result["extrapolated"] else "") + (
            "" if result["status"] == "ok" else f" ({result['status'].upper()})")
        bars.append({"label": label, "value": value, "spread": spread,
                     "colour": "tab:grey" if result["reference"] else
                     "tab:blue" if result["status"] == "ok" else "tab:red",
                     "hatch": "//" if result["extrapolated"] else ""})
    return bars


def write_plot(report: dict, path: str | Path) -> None:
    """A PNG of the speed-ups over each case's reference (NumPy, or SciPy), one panel per
    case: a dashed line at 1x (as fast as the reference), the spread of the timed runs as
    error bars, extrapolated figures hatched and starred, --quick said in the title."""
    check_plot_available()
    import matplotlib  # optional (the plot extra) and slow: imported only to plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    cases = report["cases"]
    figure, axes = plt.subplots(len(cases) or 1, 1, squeeze=False,
                                figsize=(8, 1.4 + 0.5 * sum(len(c["results"]) for c in cases)))
    for axis, case in zip(axes[: len(cases), 0], cases, strict=True):
        bars = chart_bars(case)
        values = [bar["value"] for bar in bars]
        errors = [[bar["value"] - bar["spread"][0] if bar["spread"] else 0 for bar in bars],
                  [bar["spread"][1] - bar["value"] if bar["spread"] else 0 for bar in bars]]
        drawn = axis.barh([bar["label"] for bar in bars], values,
                          color=[bar["colour"] for bar in bars], xerr=errors,
                          error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "black"})
        for patch, bar in zip(drawn, bars, strict=True):
            patch.set_hatch(bar["hatch"])
        axis.bar_label(drawn, labels=[f"{v:.3g}x" if v else "no figure" for v in values],
                       fontsize=7, padding=4)
        reference = reference_name(case)
        axis.axvline(1.0, color="black", linestyle="--", linewidth=0.8)
        axis.set_xscale("log")
        axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        axis.xaxis.set_minor_formatter(ticker.NullFormatter())
        axis.margins(x=0.15)
        axis.invert_yaxis()
        axis.set_title(case["title"], fontsize=9)
        extrapolated = any(bar["hatch"] for bar in bars)
        axis.set_xlabel(f"speed-up over {reference} (wall time; dashed: 1x; bars: the runs' "
                        "spread" + ("; * hatched: extrapolated" if extrapolated else "") + ")",
                        fontsize=8)
        axis.tick_params(labelsize=8)
    quick = " (--quick: smaller problems)" if report["settings"]["quick"] else ""
    figure.suptitle(f"oclsci bench: {report['device']['name']}{quick}", fontsize=10)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=110)
    plt.close(figure)
