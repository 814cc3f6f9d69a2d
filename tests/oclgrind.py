"""Oclgrind as a second OpenCL platform for the tests, and a runner of kernels under it.

Oclgrind (https://github.com/jrprice/Oclgrind) simulates an OpenCL device and reports what real
devices do silently: out-of-bounds reads and writes, data races between work-items, reads of
uninitialised memory, barrier divergence and OpenCL API misuse. This module

* registers Oclgrind's ICD beside the platforms already installed, in a folder named by
  ``OCL_ICD_VENDORS`` (:func:`make_vendors_dir`, :func:`oclgrind_environ`);
* describes every kernel launch that oclsci can make as small JSON *cases*
  (:func:`all_cases`): each Jacobi kernel over its parameter space, the residual reduction,
  Mandelbrot, every elementwise operation, halo packing;
* runs cases in a subprocess (the ICD loader reads the environment once, when pyopencl first
  loads) and splits Oclgrind's stderr into per-case reports (:func:`run_cases`).

Run as a script it is that subprocess: ``python tests/oclgrind.py JOB.json`` runs the cases of
JOB.json on the Oclgrind device, prints one JSON line per case on stdout, brackets each case's
stderr between marker lines, and exits non-zero when any case failed or Oclgrind printed any
report. See docs/testing.md.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()

# Where distributions install Oclgrind's ICD library (Debian/Ubuntu first).
OCLGRIND_ICD_CANDIDATES = (
    "/usr/lib/oclgrind/liboclgrind-rt-icd.so",
    "/usr/lib/x86_64-linux-gnu/oclgrind/liboclgrind-rt-icd.so",
    "/usr/lib64/oclgrind/liboclgrind-rt-icd.so",
    "/usr/local/lib/liboclgrind-rt-icd.so",
    "/usr/lib/liboclgrind-rt-icd.so",
)

# Oclgrind's checks, all on. Kernels are built without optimisation: Oclgrind 21.10's
# uninitialised-value plugin stops with "Unsupported instruction: freeze" on the LLVM 14 code
# that clang's optimiser emits for `k / n` and `k % n`, and unoptimised code keeps every memory
# access of the source, so it is also the stricter check. PyOpenCL's binary cache is off so
# that no binary built without these options (or for another Oclgrind) is reused.
CHECK_ENVIRONMENT = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_BUILD_OPTIONS": "-cl-opt-disable",
    "OCLGRIND_MAX_ERRORS": "1000",
    # 64 KiB of local memory (Oclgrind's default is 32 KiB), as on the GPUs oclsci tunes for,
    # so that their default configurations run here too.
    "OCLGRIND_LOCAL_MEM_SIZE": "65536",
    "PYOPENCL_NO_CACHE": "1",
}

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


# ------------------------------------------------------------------------------------------
# Finding Oclgrind and registering it
# ------------------------------------------------------------------------------------------

def find_oclgrind_icd() -> Path | None:
    """Oclgrind's ICD library (``$OCLSCI_OCLGRIND_ICD`` first), or None when not installed."""
    override = os.environ.get("OCLSCI_OCLGRIND_ICD")
    candidates = [override] if override else list(OCLGRIND_ICD_CANDIDATES)
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def missing_reason() -> str | None:
    """Why Oclgrind tests cannot run here, or None when they can."""
    if find_oclgrind_icd() is None:
        return ("Oclgrind is not installed (no liboclgrind-rt-icd.so in "
                f"{', '.join(OCLGRIND_ICD_CANDIDATES[:1])}...): `apt-get install -y oclgrind`, "
                "or set OCLSCI_OCLGRIND_ICD to the library")
    return None


def _pyopencl_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def wheel_loader_reads_its_own_icds() -> bool:
    """True for the pyopencl wheel's ICD loader, which always reads ``pyopencl/.libs/*.icd``.

    The wheel bundles a patched ocl-icd that reads the folder named by ``OCL_ICD_VENDORS`` (or
    /etc/OpenCL/vendors when unset) *and then* ``$PYOPENCL_HOME/.libs``, where the
    pocl-binary-distribution wheel puts ``pocl.icd`` and its ``libpocl``. Listing that ICD in
    our folder too would make PoCL appear twice.
    """
    folder = _pyopencl_dir()
    return bool(folder and glob.glob(str(folder / ".libs" / "libOpenCL*")))


def existing_icd_files() -> list[Path]:
    """The ICD files that the loader would read without ``OCL_ICD_VENDORS``.

    ``OCL_ICD_VENDORS`` naming a folder replaces the default /etc/OpenCL/vendors (and a conda
    environment's ``etc/OpenCL/vendors``), so those are listed again in our folder. The pyopencl
    wheel's own ``.libs/*.icd`` (PoCL from ``pip install pocl-binary-distribution``) are read by
    the wheel's loader whatever ``OCL_ICD_VENDORS`` says, so they are listed only for another
    loader (a distribution's or conda's pyopencl).
    """
    folders = []
    current = os.environ.get("OCL_ICD_VENDORS")
    if current and Path(current).is_dir():
        folders.append(Path(current))
    else:
        folders.append(Path("/etc/OpenCL/vendors"))
    for prefix in (os.environ.get("CONDA_PREFIX"), sys.prefix):
        if prefix:
            folders.append(Path(prefix) / "etc" / "OpenCL" / "vendors")
    pyopencl_dir = _pyopencl_dir()
    if pyopencl_dir and not wheel_loader_reads_its_own_icds():
        folders.append(pyopencl_dir / ".libs")
    files: list[Path] = []
    for folder in folders:
        files.extend(sorted(folder.glob("*.icd")) if folder.is_dir() else [])
    return [f for f in files if "oclgrind" not in f.read_text(errors="replace").lower()]


def make_vendors_dir(folder: str | os.PathLike, *, with_oclgrind: bool = True,
                     with_others: bool = True) -> Path:
    """Fill ``folder`` with ICD files: Oclgrind's, and those of the platforms already there.

    Relative library names in copied ICD files (``libpocl-....so``) are made absolute, so the
    loader finds them from the new folder.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if with_oclgrind:
        icd = find_oclgrind_icd()
        if icd is None:
            raise RuntimeError(missing_reason())
        (folder / "oclgrind.icd").write_text(f"{icd}\n")
    if with_others:
        for index, source in enumerate(existing_icd_files()):
            library = source.read_text().strip()
            if library and not os.path.isabs(library) and (source.parent / library).exists():
                library = str(source.parent / library)
            (folder / f"{index:02d}-{source.name}").write_text(f"{library}\n")
    return folder


def oclgrind_environ(vendors_dir: str | os.PathLike, base: dict | None = None, *,
                     checks: bool = True) -> dict[str, str]:
    """The environment of a subprocess that sees Oclgrind (and the other platforms)."""
    env = dict(os.environ if base is None else base)
    env["OCL_ICD_VENDORS"] = str(vendors_dir)
    for name in ("PYOPENCL_CTX", "PYOPENCL_TEST", "OCLSCI_TEST_DEVICES"):
        env.pop(name, None)
    if checks:
        env.update(CHECK_ENVIRONMENT)
    return env


# ------------------------------------------------------------------------------------------
# Parsing Oclgrind's stderr
# ------------------------------------------------------------------------------------------

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


def run_cases(cases: list[dict], *, workers: int | None = None, timeout: float = 600,
              extra_env: dict | None = None) -> RunResult:
    """Run ``cases`` under Oclgrind in ``workers`` parallel subprocesses; collect outcomes.

    ``workers`` defaults to ``$OCLSCI_OCLGRIND_WORKERS``, else 2 (or 1 on one core). A runner
    that dies (crash, timeout) leaves its remaining cases with ``ran=False``.
    """
    reason = missing_reason()
    if reason:
        raise RuntimeError(reason)
    workers = workers or int(os.environ.get("OCLSCI_OCLGRIND_WORKERS", "0")) or min(
        2, os.cpu_count() or 1)
    start = time.perf_counter()
    outputs = []
    with tempfile.TemporaryDirectory(prefix="oclsci-oclgrind-") as tmp:
        vendors = make_vendors_dir(Path(tmp) / "vendors")
        env = oclgrind_environ(vendors)
        # Each process simulates its work-groups on one thread: the processes share the cores.
        if workers > 1:
            env.setdefault("OCLGRIND_NUM_THREADS", "1")
        env.update(extra_env or {})
        processes = []
        for index, chunk in enumerate(_chunks(cases, workers)):
            job, log = Path(tmp) / f"job{index}.json", Path(tmp) / f"stderr{index}.log"
            job.write_text(json.dumps(chunk))
            processes.append((log, subprocess.Popen(
                [sys.executable, str(HERE), str(job), str(log)], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)))
        for log, process in processes:
            try:
                out, err = process.communicate(
                    timeout=max(1.0, timeout - (time.perf_counter() - start)))
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = process.communicate()
                err += f"\nrunner timed out after {timeout:.0f} s"
            logged = log.read_text(errors="replace") if log.exists() else ""
            outputs.append((process.returncode, out, (logged + err)[-4000:]))
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


# ------------------------------------------------------------------------------------------
# The cases: every kernel oclsci ships, on tiny grids
# ------------------------------------------------------------------------------------------

# Grids: one cell, smaller than any tile, odd sizes that divide nothing.
SHAPES = ((1, 1), (5, 3), (17, 40))
# Extra grids for tiled kernels with 16-wide tiles: exactly one tile, one tile plus one.
TILE_SHAPES = ((16, 16), (17, 17))

# Oclgrind's device limits (21.10): the configurations below fit them.
OCLGRIND_LOCAL_MEM = 64 * 1024  # see CHECK_ENVIRONMENT
OCLGRIND_MAX_WORK_GROUP = 1024


def jacobi_corner_cases() -> dict[str, list[tuple[dict, Any]]]:
    """The parameter space of each Jacobi kernel explored under Oclgrind: (params, local_size).

    Each spec's ``corner_cases`` (oclsci/jacobi/specs/): every parameter takes several values
    (test_every_jacobi_parameter_is_varied); work-groups larger than, equal to and smaller
    than tiles; tiles that are not powers of two; one step per launch up to 8; vectors wider
    than the grid; more workers than tiles. :func:`jacobi_spaces` adds each kernel's defaults.
    """
    from oclsci.jacobi.kernels import KERNELS

    return {name: [(dict(params), local) for params, local in spec.corner_cases]
            for name, spec in KERNELS.items()}


def _case_id(*parts: Any) -> str:
    return "-".join(str(p) for p in parts if p != "")


def _config_label(params: dict, local_size: Any) -> str:
    short = {"rows_per_item": "r", "vector": "v", "tile_w": "tw", "tile_h": "th",
             "halo_width": "h", "local_w": "lw", "local_h": "lh", "rhs_in_local": "rl",
             "rows": "R", "cols": "C", "max_steps": "k", "buffers": "b", "band_h": "bh",
             "band_w": "bw", "workers": "w"}
    label = ",".join(f"{short.get(k, k)}{int(v) if isinstance(v, bool) else v}"
                     for k, v in sorted(params.items()))
    if local_size:
        label += "," * bool(label) + "L" + "x".join(map(str, local_size))
    return label or "default"


def _steps_per_launch(name: str, params: dict) -> int:
    from oclsci.jacobi.tuning import KernelConfig

    return int(KernelConfig(name, dict(params)).steps_per_launch)


def _fits_oclgrind(name: str, params: dict, local_size: Any, dtype: str = "float32") -> bool:
    from oclsci.jacobi.tuning import KernelConfig

    config = KernelConfig(name, dict(params), local_size)
    try:
        config.validate(max_work_group_size=OCLGRIND_MAX_WORK_GROUP,
                        local_mem_bytes=OCLGRIND_LOCAL_MEM, dtype=dtype)
    except Exception:  # noqa: BLE001 - InputError: does not fit
        return False
    return True


def jacobi_spaces() -> dict[str, list[tuple[dict, Any]]]:
    """The configurations to check for every kernel of ``oclsci.jacobi.kernels.KERNELS``.

    The corner cases of :func:`jacobi_corner_cases`, then the kernel's default configurations
    for a GPU and for a CPU with Oclgrind's limits (what ``--kernel NAME`` runs without
    tuning).
    """
    spaces: dict[str, list[tuple[dict, Any]]] = {}
    for name, corner_cases in jacobi_corner_cases().items():
        configs = [entry for entry in corner_cases if _fits_oclgrind(name, *entry)]
        for entry in _default_configs(name):
            if entry not in configs and _fits_oclgrind(name, *entry):
                configs.append(entry)
        spaces[name] = configs
    return spaces


def _default_configs(name: str) -> list[tuple[dict, Any]]:
    """Every configuration ``default_config`` gives for ``name`` on CPUs and GPUs, in both
    precisions, for small and large grids and devices with less local memory or smaller
    work-groups (its fallbacks), as far as Oclgrind can run them."""
    from oclsci.jacobi.tuning import default_config

    found: list[tuple[dict, Any]] = []
    for is_cpu in (False, True):
        for dtype in ("float32", "float64"):
            for shape in (None, (17, 40), (2048, 1024)):
                for local_mem in (48 * 1024, 32 * 1024, 8 * 1024):
                    for max_group in (OCLGRIND_MAX_WORK_GROUP, 128):
                        default = default_config(name, is_cpu=is_cpu, dtype=dtype,
                                                 local_mem_bytes=local_mem, shape=shape,
                                                 max_work_group_size=max_group)
                        entry = (dict(default.params), default.local_size)
                        if entry not in found:
                            found.append(entry)
    return found


def simulated_work(name: str, params: dict, local_size: Any, shape: tuple[int, int],
                   steps: int) -> int:
    """A rough measure of what Oclgrind must simulate: cell updates of every work-item
    (idle ones included) times steps; about 20 us of CPU each with all checks on."""
    from oclsci.jacobi.tuning import KernelConfig

    config = KernelConfig(name, dict(params), tuple(local_size) if local_size else None)
    global_size, _ = config.launch_shape(*shape)
    items = math.prod(global_size)
    per_item = config.spec.work_per_item(config.values(), shape, items)
    return items * per_item * max(1, steps) + items


# Simulated work allowed per configuration (see simulated_work): about 5 s of CPU.
WORK_PER_CONFIG = 250_000


def jacobi_cases() -> list[dict]:
    """Each Jacobi kernel and configuration on small grids, over several launches.

    Per configuration, in order of priority while the simulated work allows (the first two
    always): the odd-sized grid over a full launch and a remainder launch (k + 1 steps, k the
    steps per launch); one cell, one step; a grid smaller than most tiles over k + 1 steps;
    the odd-sized grid over two full launches and a remainder; one tile plus one cell (for
    16-wide tiles); double precision.
    """
    cases = []
    for name, configs in jacobi_spaces().items():
        for params, local_size in configs:
            k = _steps_per_launch(name, params)
            label = _config_label(params, local_size)
            plan = [((17, 40), k + 1, "float32"), ((1, 1), 1, "float32"),
                    ((5, 3), k + 1, "float32")]
            if k > 1:
                plan.append(((17, 40), 2 * k + 1, "float32"))
            if 16 in (params.get("tile_w"), params.get("local_w")):
                plan.append(((17, 17), k + 1, "float32"))
            if _fits_oclgrind(name, params, local_size, "float64"):
                plan.append(((5, 3), k + 1, "float64"))
            spent = 0
            for index, (shape, steps, dtype) in enumerate(plan):
                work = simulated_work(name, params, local_size, shape, steps)
                if index >= 2 and spent + work > WORK_PER_CONFIG:
                    continue
                spent += work
                cases.append({
                    "id": _case_id("jacobi", name, label, f"{shape[0]}x{shape[1]}",
                                   f"s{steps}", dtype),
                    "kind": "jacobi", "kernel": name, "params": params,
                    "local_size": local_size, "shape": shape, "steps": steps, "dtype": dtype,
                    "cost": work,
                })
    return cases


def compare_cases() -> list[dict]:
    """The tuner's exactness check (``jacobi/compare``): counts differing cells atomically."""
    from oclsci.runtime import programs

    if "jacobi/compare" not in programs.template_names():
        return []
    return [{"id": _case_id("compare", dtype, f"{m}x{n}", f"items{items}"), "kind": "compare",
             "dtype": dtype, "shape": (m, n), "items": items, "cost": m * n}
            for dtype in ("float32", "float64")
            for (m, n), items in (((1, 1), 1), ((5, 3), 7), ((17, 40), 64), ((17, 40), 1000))]


def residual_cases() -> list[dict]:
    """The residual reduction: group sizes, accumulator types, row ranges, idle work-items."""
    cases = []
    for dtype, acc_dtype in (("float32", "float32"), ("float32", "float64"),
                             ("float64", "float64")):
        for group_size in (1, 8, 64):
            for shape, first_row, rows, groups in (((1, 1), 1, 1, 1), ((5, 3), 1, 5, 3),
                                                   ((17, 40), 3, 7, 2), ((17, 40), 1, 17, 5)):
                cases.append({
                    "id": _case_id("residual", dtype, f"acc{acc_dtype}", f"g{group_size}",
                                   f"{shape[0]}x{shape[1]}", f"rows{first_row}+{rows}",
                                   f"groups{groups}"),
                    "kind": "residual", "dtype": dtype, "acc_dtype": acc_dtype,
                    "group_size": group_size, "shape": shape, "first_row": first_row,
                    "rows": rows, "groups": groups, "cost": shape[0] * shape[1],
                })
    # And through the solver, as `run` uses it (owned-row ranges of an MPI rank included).
    for shape in SHAPES:
        cases.append({"id": _case_id("residual", "solver", f"{shape[0]}x{shape[1]}"),
                      "kind": "residual_solver", "shape": shape, "dtype": "float32",
                      "cost": shape[0] * shape[1]})
    return cases


def _importable(module: str, attribute: str) -> bool:
    import importlib

    try:
        return hasattr(importlib.import_module(module), attribute)
    except ImportError:
        return False


def mandelbrot_cases() -> list[dict]:
    """The Mandelbrot kernel: vector widths and unrolling, precisions, outputs, bands, tiny
    windows (one pixel; widths that are not multiples of the pixels per work-item)."""
    if not _importable("oclsci.mandelbrot", "MandelbrotRenderer"):
        return []
    cases = []
    windows = [  # width, height, maxiter, (xmin, xmax, ymin, ymax), rows
        (1, 1, 3, (-2.25, 0.75, -1.25, 1.25), None),
        (7, 3, 20, (-2.25, 0.75, -1.25, 1.25), None),
        (37, 5, 12, (-0.75, -0.74, 0.1, 0.11), (1, 3)),
        (17, 4, 1, (-2.0, 2.0, -2.0, 2.0), None),
    ]
    # (vector_width, unroll): one pixel per work-item (GPUs), then CPU vectors.
    shapes = [(1, None), (2, 1), (4, None), (4, 3), (8, 8), (16, 2)]
    for vector_width, unroll in shapes:
        for dtype in ("float32", "float64"):
            for index, (width, height, maxiter, bounds, rows) in enumerate(windows):
                if dtype == "float64" and index % 2:
                    continue
                want_z, want_smooth = index % 2 == 0, index != 3
                cases.append({
                    "id": _case_id("mandelbrot", f"vw{vector_width}",
                                   f"u{unroll}" if unroll else "", dtype, f"{width}x{height}",
                                   f"it{maxiter}", "rows" if rows else "",
                                   "z" if want_z else "", "smooth" if want_smooth else ""),
                    "kind": "mandelbrot", "vector_width": vector_width, "unroll": unroll,
                    "dtype": dtype, "width": width, "height": height, "maxiter": maxiter,
                    "bounds": bounds, "rows": rows, "want_z": want_z,
                    "want_smooth": want_smooth, "cost": width * height * maxiter // 4 + 1,
                })
    return cases


def lombscargle_cases() -> list[dict]:
    """The Lomb-Scargle kernel: every variant (oclsci.signal.VARIANTS) in both precisions,
    fast math in float32, one sample at one frequency and frequency counts that are not
    multiples of the vector width. sin() and cos() in place of sincos(), whose private pointer
    Oclgrind's uninitialised-value checker cannot follow (a fatal error in Oclgrind)."""
    if not _importable("oclsci.signal", "Periodogram"):
        return []
    from oclsci.signal import VARIANTS

    cases = []
    for variant in VARIANTS:
        for dtype in ("float32", "float64"):
            for fast_math in (False, True):
                if fast_math and (dtype == "float64" or variant not in ("stride", "vector")):
                    continue
                for n, f in ((1, 1), (6, 13)):
                    cases.append({"id": _case_id("lombscargle", variant, dtype,
                                                 "fast" if fast_math else "", f"n{n}", f"f{f}"),
                                  "kind": "lombscargle", "variant": variant, "dtype": dtype,
                                  "fast_math": fast_math, "n": n, "f": f, "cost": n * f + 1})
    return cases


# Sizes of elementwise arrays: one element, less than a work-group, full groups and a tail.
ELEMENTWISE_SIZES = (1, 300)


def elementwise_cases() -> list[dict]:
    """Every ready-made elementwise operation (``oclsci.elementwise.ops.OPS``) in every dtype,
    with one and several elements per work-item, and a user kernel with scalars, several
    outputs, in-place and pyopencl arrays."""
    if not _importable("oclsci.elementwise.ops", "OPS"):
        return []
    from oclsci.elementwise.kernels import TYPE_NAMES
    from oclsci.elementwise.ops import OPS

    cases = []
    for name in OPS:
        for dtype in TYPE_NAMES:
            for per_item in (1, 3):
                if per_item > 1 and dtype not in ("int8", "float32", "float64"):
                    continue
                sizes = ELEMENTWISE_SIZES if per_item == 1 else (5, 1000)
                for size in sizes:
                    cases.append({"id": _case_id("elementwise", name, dtype, f"p{per_item}",
                                                 f"n{size}"),
                                  "kind": "elementwise", "op": name, "dtype": dtype,
                                  "per_item": per_item, "size": size, "cost": 1})
    for dtype in ("float32", "int16"):
        cases.append({"id": _case_id("elementwise", "user-kernel", dtype), "kind":
                      "elementwise_user", "dtype": dtype, "cost": 1})
    return cases


# Deliberately broken kernels: each must make Oclgrind report (what the report says), which
# proves that the checks are on and that reports reach the tests.
CANARIES = {
    "out-of-bounds-read": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ size_t i = get_global_id(0); out[i] = in[i + 1]; }",
        "Invalid read"),
    "local-race-missing-barrier": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ __local float t[16]; size_t l = get_local_id(0); t[l] = in[get_global_id(0)];"
        "  out[get_global_id(0)] = t[(l + 1) % 16]; }",
        "data race"),
    "uninitialised-local-read": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ __local float t[16]; size_t l = get_local_id(0); if (l < 8) t[l] = in[l];"
        "  barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = t[l]; }",
        "Uninitialized value"),
}


def canary_cases() -> list[dict]:
    """Broken kernels that Oclgrind must report (see :data:`CANARIES`), and a Jacobi seed
    kernel that skips a cell, run by the solver like the real cases."""
    cases = [{"id": f"canary-{name}", "kind": "canary", "source": source, "expect": expect,
              "cost": 16} for name, (source, expect) in CANARIES.items()]
    cases.append({"id": "canary-jacobi-unwritten-cell", "kind": "jacobi", "kernel": "seed",
                  "params": {}, "local_size": None, "shape": (5, 3), "steps": 2,
                  "dtype": "float32", "break_cell": True, "expect": "Uninitialized value",
                  "cost": 16})
    return cases


def all_cases() -> list[dict]:
    """Every case: each kernel oclsci ships (see the generators above)."""
    return (jacobi_cases() + residual_cases() + compare_cases() + mandelbrot_cases()
            + elementwise_cases() + lombscargle_cases())


# ------------------------------------------------------------------------------------------
# The runner (this file run as a script, in the Oclgrind environment)
# ------------------------------------------------------------------------------------------

def _rng(case_id: str):
    import numpy as np

    seed = int.from_bytes(hashlib.sha1(case_id.encode()).digest()[:8], "little")
    return np.random.default_rng(seed)


RING_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void ring(__global REAL *x, int m, int n, int stride)
{
    const int k = get_global_id(0), row = k / stride, col = k % stride;
    if (row == 0 || row == m + 1 || col == 0 || col > n)
        x[k] = 0;
}
"""

# Buffers never written by the host, made before any buffer is released (see
# _preallocate): case id -> {"x": buffer, "scratch": buffer or None}.
FRESH: dict[str, dict] = {}
RING_PROGRAMS: dict[str, Any] = {}


def _preallocate(compute: Any, cases: list[dict]) -> None:
    """Make the fresh buffers of every Jacobi case up front.

    Oclgrind 21.10 loses track of what kernels write into memory that the host wrote, even
    memory of a released buffer that a new buffer reuses: a fresh buffer made mid-run may
    then read as uninitialised although a kernel wrote it. Made before anything is released,
    and kept alive, these are clean.
    """
    import numpy as np
    import pyopencl as cl

    from oclsci.jacobi.tuning import KernelConfig
    from oclsci.runtime.programs import cl_type

    for case in cases:
        if case["kind"] != "jacobi":
            continue
        dtype = np.dtype(case["dtype"])
        m, n = case["shape"]
        stride = -(-(n + 2) // 16) * 16
        buffers = {"x": cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                  (m + 2) * stride * dtype.itemsize), "scratch": None}
        layout = KernelConfig(case["kernel"], dict(case["params"])).scratch_layout(m, n)
        if layout is not None:
            elements = layout["scratch_elements"]
            buffers["scratch"] = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                           max(1, elements) * dtype.itemsize)
        FRESH[case["id"]] = buffers
        if dtype.name not in RING_PROGRAMS:
            RING_PROGRAMS[dtype.name] = cl.Program(
                compute.context, RING_SOURCE.replace("REAL", cl_type(dtype))).build()


KEEP_ALIVE: list = []


def _leave_output_uninitialised(compute: Any, solver: Any, case: dict) -> None:
    """Give the solver a second iterate buffer whose interior was never written.

    JacobiSolver starts both ping-pong buffers as copies of x0, so a kernel that forgets to
    write a cell, or reads its output buffer, would go unnoticed; with an uninitialised
    interior Oclgrind reports it (the padding ring and the row padding are zeroed by a
    kernel, as the kernels rely on them). The bands kernel's scratch buffer (zeros from the
    host) is also replaced by an uninitialised one: the kernel must write each scratch cell
    before reading it. Needs ``JacobiSolver.reconfigure``; older solvers are left as they are.
    """
    import numpy as np

    buffers = FRESH.get(case["id"])
    if not hasattr(solver, "reconfigure") or buffers is None:
        return
    m, n, stride = solver.m, solver.n, solver.row_stride
    fresh = buffers["x"]
    if fresh.size != (m + 2) * stride * solver.dtype.itemsize:
        raise AssertionError("the solver's padded layout changed: update _preallocate")
    RING_PROGRAMS[solver.dtype.name].ring(compute.queue, ((m + 2) * stride,), None, fresh,
                                          np.int32(m), np.int32(n), np.int32(stride))
    compute.queue.finish()
    KEEP_ALIVE.append((solver, solver.x_buffers[1], getattr(solver, "_scratch", None)))
    solver.x_buffers[1] = fresh
    solver.reconfigure(solver.config)
    scratch = getattr(solver, "_scratch", None)
    launches = getattr(solver, "_launches", []) + getattr(solver, "_remainder_launches", [])
    if scratch is not None and launches and buffers["scratch"] is not None:
        if buffers["scratch"].size < scratch.size:
            raise AssertionError("the bands scratch grew: update _preallocate")
        position = solver.config.spec.argument_index("scratch")
        for launch in launches:
            launch.kernel.set_arg(position, buffers["scratch"])
        KEEP_ALIVE.append(scratch)
        solver._scratch = buffers["scratch"]


@contextlib.contextmanager
def _broken_template(compute: Any, template: str, anchor: str, insert: str):
    """Render ``template`` with ``insert`` put before ``anchor`` (for canaries), in a program
    cache of its own, so that the real kernel is untouched for the other cases."""
    from oclsci.runtime import programs

    original_render, original_cache = programs.render, compute.program_cache

    def render(name: str, **params: Any) -> str:
        source = original_render(name, **params)
        if name == template:
            if anchor not in source:
                raise AssertionError(f"canary: {anchor!r} not found in {template}: update it")
            source = source.replace(anchor, insert + anchor, 1)
        return source

    programs.render, compute.program_cache = render, {}
    try:
        yield
    finally:
        programs.render, compute.program_cache = original_render, original_cache


def _run_jacobi(compute: Any, case: dict) -> None:
    if case.get("break_cell"):
        # A seed kernel that never writes cell (2, 2): Oclgrind must see it read uninitialised.
        with _broken_template(compute, "jacobi/seed", "if ((i >= 1)",
                              "if (i == 2 && j == 2) return;\n    "):
            _solve_and_compare(compute, case)
        return
    _solve_and_compare(compute, case)


def _solve_and_compare(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.jacobi.reference import jacobi_numpy
    from oclsci.jacobi.solver import JacobiSolver, run
    from oclsci.jacobi.tuning import KernelConfig

    dtype = np.dtype(case["dtype"])
    rhs = _rng(case["id"]).standard_normal(tuple(case["shape"])).astype(dtype)
    local_size = tuple(case["local_size"]) if case["local_size"] else None
    config = KernelConfig(case["kernel"], dict(case["params"]), local_size)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
    _leave_output_uninitialised(compute, solver, case)
    run(solver, int(case["steps"]))
    got = solver.read()
    want = jacobi_numpy(rhs, int(case["steps"]), dtype=dtype)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise AssertionError(f"{len(bad)} cell(s) differ from NumPy, first at {bad[0].tolist()}: "
                             f"{got[tuple(bad[0])]!r} != {want[tuple(bad[0])]!r}")


def _numpy_residual_rows(x, rhs, first_row: int, rows: int) -> float:
    import numpy as np

    from oclsci.jacobi.reference import laplacian

    r = laplacian(x) - np.asarray(rhs, dtype=np.float64)
    part = r[first_row - 1:first_row - 1 + rows]
    return float(np.sum(part * part))


def _run_residual(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.jacobi.solver import JacobiSolver, run
    from oclsci.jacobi.tuning import KernelConfig
    from oclsci.runtime import programs

    dtype = np.dtype(case["dtype"])
    rng = _rng(case["id"])
    rhs = rng.standard_normal(tuple(case["shape"])).astype(dtype)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=KernelConfig("seed"))
    if case["kind"] == "residual_solver":
        run(solver, 2)
        x = solver.read()
        m = solver.m
        for first, last in ((1, m), (1, (m + 1) // 2), ((m + 1) // 2 + 1, m), (m, m), (2, 1)):
            got = solver.residual_sum_of_squares(first, last)
            want = _numpy_residual_rows(x, rhs, first, max(0, last - first + 1))
            if not np.isclose(got, want, rtol=1e-5, atol=1e-6):
                raise AssertionError(f"residual rows {first}..{last}: {got} != NumPy {want}")
        return
    acc_dtype = np.dtype(case["acc_dtype"])
    kernel = programs.get_kernel(compute, "jacobi/residual", dtype=dtype, acc_dtype=acc_dtype,
                                 group_size=int(case["group_size"]))
    groups, group_size = int(case["groups"]), int(case["group_size"])
    partial = np.zeros(groups, dtype=acc_dtype)
    partial_buffer = cl.Buffer(compute.context, cl.mem_flags.WRITE_ONLY, partial.nbytes)
    kernel.set_args(solver.x_buffer, solver.rhs_buffer, np.int32(case["first_row"]),
                    np.int32(case["rows"]), np.int32(solver.n), np.int32(solver.row_stride),
                    partial_buffer)
    cl.enqueue_nd_range_kernel(compute.queue, kernel, (groups * group_size,), (group_size,))
    cl.enqueue_copy(compute.queue, partial, partial_buffer)
    got = float(np.sum(partial, dtype=np.float64))
    want = _numpy_residual_rows(rhs, rhs, int(case["first_row"]), int(case["rows"]))
    if not np.isclose(got, want, rtol=1e-4 if acc_dtype == np.float32 else 1e-10, atol=1e-6):
        raise AssertionError(f"residual {got} != NumPy {want}")


def _run_canary(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    program = cl.Program(compute.context, case["source"]).build()
    data = np.arange(1, 17, dtype=np.float32)
    flags = cl.mem_flags
    source = cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=data)
    out = cl.Buffer(compute.context, flags.WRITE_ONLY, data.nbytes)
    program.canary(compute.queue, (16,), (16,), out, source)
    result = np.empty_like(data)
    cl.enqueue_copy(compute.queue, result, out)


def _run_compare(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.runtime import programs

    dtype = np.dtype(case["dtype"])
    m, n = case["shape"]
    row_stride = -(-(n + 2) // 16) * 16
    rng = _rng(case["id"])
    a = np.zeros((m + 2, row_stride), dtype)
    a[1:-1, 1:n + 1] = rng.standard_normal((m, n))
    b = a.copy()
    flip = rng.random((m, n)) < 0.3
    b[1:-1, 1:n + 1][flip] += 1
    flags = cl.mem_flags
    buffers = [cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=h)
               for h in (a, b)]
    count = np.zeros(1, np.uint32)
    count_buffer = cl.Buffer(compute.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                             hostbuf=count)
    kernel = programs.get_kernel(compute, "jacobi/compare", dtype=dtype)
    kernel.set_args(*buffers, np.int32(m), np.int32(n), np.int32(row_stride), count_buffer)
    cl.enqueue_nd_range_kernel(compute.queue, kernel, (int(case["items"]),), None)
    cl.enqueue_copy(compute.queue, count, count_buffer)
    if int(count[0]) != int(flip.sum()):
        raise AssertionError(f"{int(count[0])} differing cells counted, {int(flip.sum())} differ")


class Unsupported(Exception):
    """oclsci refuses this configuration (the test is skipped with the reason)."""


def _run_elementwise(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl.array as cla

    from oclsci.elementwise.ops import OPS

    op = OPS[case["op"]]
    dtype = np.dtype(case["dtype"])
    rng = _rng(case["id"])
    size = int(case["size"])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        host = {a: rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
                for a in op.arrays}
    else:
        host = {a: rng.standard_normal(size).astype(dtype) for a in op.arrays}
    scalar = dtype.type(3 if dtype.kind in "iu" else 2.5)
    kernel = op.kernel if case["per_item"] == 1 else op.kernel.variant(
        per_item=int(case["per_item"]))
    arrays = {k: cla.to_device(compute.queue, v) for k, v in host.items()}
    args: list = [arrays[k] for k in op.arrays]
    if op.scalar_position is not None:
        args.insert(op.scalar_position, scalar)
    if op.written not in arrays:
        arrays[op.written] = cla.empty(compute.queue, size, dtype)
        args.append(arrays[op.written])
    reference_args = [host[k] for k in op.arrays]
    if op.scalar_position is not None:
        reference_args.insert(op.scalar_position, scalar)
    with np.errstate(over="ignore"):
        expected = op.reference(*reference_args)
    kernel(*args, device=compute)
    got = arrays[op.written].get()
    if not np.array_equal(got, expected):
        raise AssertionError(f"{np.count_nonzero(got != expected)} of {size} elements differ")


def _run_elementwise_user(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.elementwise.kernels import ElementwiseKernel

    dtype = np.dtype(case["dtype"])
    kernel = ElementwiseKernel(
        "T x, T y, int32 k", "T x, T s, T d",
        "s = twice(x) + y; d = x - y * k; x = x + 1;", "user_kernel",
        preamble="#define twice(v) ((v) + (v))\n")
    rng = _rng(case["id"])
    x = (rng.standard_normal(700) * 10).astype(dtype)
    y = (rng.standard_normal(700) * 10).astype(dtype)
    x_before = x.copy()
    x_out, s, d = kernel(x, y, np.int32(3), device=compute)  # outputs in declaration order
    if x_out is not x:
        raise AssertionError("the in-place output is not the input array")
    with np.errstate(over="ignore"):
        want_s = (x_before + x_before) + y
        want_d = x_before - y * dtype.type(3)
        want_x = x_before + dtype.type(1)
    for name, got, want in (("s", s, want_s), ("d", d, want_d), ("x", x, want_x)):
        if not np.array_equal(got, want):
            raise AssertionError(f"{name}: {np.count_nonzero(got != want)} elements differ")


def _run_mandelbrot(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.mandelbrot.reference import mandelbrot_numpy
    from oclsci.mandelbrot.renderer import MandelbrotRenderer

    xmin, xmax, ymin, ymax = case["bounds"]
    window = dict(width=case["width"], height=case["height"], maxiter=case["maxiter"],
                  xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax, dtype=case["dtype"],
                  rows=tuple(case["rows"]) if case["rows"] else None)
    from oclsci.errors import InputError

    extra = {"unroll": case["unroll"]} if case.get("unroll") else {}
    try:
        renderer = MandelbrotRenderer(compute, vector_width=case["vector_width"], **extra,
                                      **window)
    except (InputError, TypeError) as error:
        raise Unsupported(str(error)) from None
    result = renderer.run(want_z=case["want_z"], want_smooth=case["want_smooth"])
    counts, _ = mandelbrot_numpy(**window)
    wrong = int(np.count_nonzero(result.counts != counts))
    if wrong > max(1, 0.005 * counts.size):
        raise AssertionError(f"{wrong} of {counts.size} escape counts differ from NumPy")


def _run_lombscargle(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.signal import Periodogram, float32_bound, lombscargle_numpy

    rng = _rng(case["id"])
    x = rng.uniform(0, 10, case["n"])
    y = rng.normal(size=case["n"]) + 0.5
    freqs = np.linspace(0.1, 3.0, case["f"])
    plan = Periodogram(compute, x, y, freqs, dtype=case["dtype"], fast_math=case["fast_math"],
                       variant=case["variant"], paired_sincos=False)
    got = plan.run().get().astype(np.float64)
    want = lombscargle_numpy(x, y, freqs)
    bound = 1e-10 if case["dtype"] == "float64" else float32_bound(x, freqs, case["fast_math"])
    error = float(np.max(np.abs(got - want))) / max(float(np.max(want)), 1e-300)
    if not error <= bound:
        raise AssertionError(f"max error {error:.3g} of the peak (bound {bound:.3g})")


RUNNERS = {
    "lombscargle": _run_lombscargle,
    "canary": _run_canary,
    "compare": _run_compare,
    "elementwise": _run_elementwise,
    "elementwise_user": _run_elementwise_user,
    "mandelbrot": _run_mandelbrot,
    "jacobi": _run_jacobi,
    "residual": _run_residual,
    "residual_solver": _run_residual,
}


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
        _preallocate(compute, cases)
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
                RUNNERS[case["kind"]](compute, case)
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
    """``python tests/oclgrind.py JOB.json [STDERR.log]``: the runner (in the Oclgrind
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


if __name__ == "__main__":
    sys.exit(main(sys.argv))
