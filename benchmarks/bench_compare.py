"""Put several `oclsci bench --json` reports side by side, one column per device.

    python benchmarks/bench_compare.py cpu.json h100.json [--figure wall_seconds] [-o table.md]

For every case id found in any report, one Markdown table: a row per variant, a column per
report (its device name), holding the chosen figure (default: wall seconds, with the speed-up
over that run's NumPy). Figures come only from the reports; a case or variant a report lacks is
shown as "—", a variant that failed its check as "FAILED". Timings from different machines
compare only as far as each run's own NumPy line does (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FIGURES = ("wall_seconds", "device_seconds", "speedup_vs_numpy", "us_per_iteration",
           "throughput", "gb_per_s", "percent_of_copy_bandwidth")


def load(path: str) -> dict:
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    if not str(report.get("schema", "")).startswith("oclsci-bench/"):
        raise SystemExit(f"{path}: not an oclsci bench report (no 'schema': 'oclsci-bench/N')")
    return report


def cell(result: dict | None, figure: str) -> str:
    if result is None:
        return "—"
    if result["status"] != "ok":
        return result["status"].upper()
    value = result.get(figure)
    if value is None:
        return "—"
    text = f"{value:.3g}" + ("*" if result.get("extrapolated") and figure.endswith("seconds")
                             else "")
    if figure == "wall_seconds" and result.get("speedup_vs_numpy"):
        text += f" ({result['speedup_vs_numpy']:.3g}x)"
    return text


def compare(reports: list[dict], figure: str) -> str:
    names = [f"{r['device']['name']} ({r['created'][:10]})" for r in reports]
    case_ids: list[str] = []
    for report in reports:
        case_ids += [c["id"] for c in report["cases"] if c["id"] not in case_ids]
    lines = [f"Figure: `{figure}`" + (" (speed-up over that run's NumPy in brackets; "
                                      "* extrapolated)" if figure == "wall_seconds" else ""), ""]
    for case_id in case_ids:
        cases = [next((c for c in r["cases"] if c["id"] == case_id), None) for r in reports]
        title = next(c["title"] for c in cases if c is not None)
        variants: list[str] = []
        for case in cases:
            variants += [res["variant"] for res in (case or {}).get("results", [])
                         if res["variant"] not in variants]
        lines += [f"### {title}", "", "| variant | " + " | ".join(names) + " |",
                  "|---|" + "---|" * len(names)]
        for variant in variants:
            row = []
            for case in cases:
                result = None if case is None else next(
                    (r for r in case["results"] if r["variant"] == variant), None)
                row.append(cell(result, figure))
            lines.append(f"| `{variant}` | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="oclsci bench --json files")
    parser.add_argument("--figure", choices=FIGURES, default="wall_seconds")
    parser.add_argument("-o", "--output", help="write the Markdown here instead of stdout")
    args = parser.parse_args(argv)
    text = compare([load(path) for path in args.reports], args.figure)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
