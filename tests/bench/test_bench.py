"""`oclsci bench`: the quick run and its JSON schema, checks that catch wrong variants, the
time budget, the Markdown/PNG outputs, progress and bad input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DEVICE_SPECS, REPO_ROOT, assert_one_line_error, run_cli, start_cli

from oclsci.bench import Timing, run_bench, schema, to_markdown, validate
from oclsci.bench.core import Progress
from oclsci.bench.jacobi import SolverJacobi, grid_case, large_plan
from oclsci.bench.measure import QUICK, Budget, run_case
from oclsci.bench.report import chart_bars, reference_name, write_plot
from oclsci.cli import bench as cli_bench
from oclsci.cli import main
from oclsci.jacobi.solver import KERNEL_NAMES

pytestmark = pytest.mark.skipif(not DEVICE_SPECS, reason="no OpenCL device")
DEVICE = DEVICE_SPECS[0] if DEVICE_SPECS else None
# `oclsci bench --quick` must finish in under a minute on a 2-core PoCL CPU; allow for a
# loaded CI machine.
QUICK_LIMIT_S = 90


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One `oclsci bench --quick` run (all workloads), shared by the tests that read it."""
    folder = tmp_path_factory.mktemp("bench")
    start = time.perf_counter()
    result = run_cli("bench", "--quick", "--device", DEVICE, "--json", folder / "b.json",
                     "--markdown", folder / "b.md")
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    report = json.loads((folder / "b.json").read_text())
    return SimpleNamespace(folder=folder, result=result, report=report, elapsed=elapsed)


@pytest.mark.slow
def test_quick_run_is_quick_and_validates(quick_run):
    jsonschema = pytest.importorskip("jsonschema")
    assert quick_run.elapsed < QUICK_LIMIT_S
    validate(quick_run.report)
    jsonschema.Draft202012Validator.check_schema(schema())
    # Only the outputs asked for, no temporary files left behind.
    assert sorted(p.name for p in quick_run.folder.iterdir()) == ["b.json", "b.md"]


@pytest.mark.slow
def test_quick_report_contents(quick_run):
    report = quick_run.report
    assert report["settings"] == {"workloads": ["jacobi", "mandelbrot", "elementwise"],
                                  "quick": True, "repeat": 3}
    assert report["command_line"][:3] == ["oclsci", "bench", "all"]
    assert report["copy_bandwidth"]["gb_per_s"] > 0
    ids = [case["id"] for case in report["cases"]]
    assert ids[0] == "jacobi-400x266" and any(i.startswith("jacobi-1024") for i in ids)
    seed = report["cases"][0]
    names = [r["variant"] for r in seed["results"]]
    assert names[0] == "numpy" and "seed-loop" in names
    assert set(KERNEL_NAMES) <= set(names)  # every kernel, including new ones
    for case in report["cases"]:
        assert case["results"][0]["reference"] and case["results"][0]["speedup_vs_numpy"] == 1
        for result in case["results"]:
            assert result["status"] == "ok", result
            assert result["check"]["passed"] is True
            assert result["wall_seconds"] > 0 and result["speedup_vs_numpy"] > 0
            assert len(result["wall_seconds_samples"]) >= 1
            if result["kind"] == "opencl":
                assert result["device_seconds"] > 0
    # The tables on stdout are the Markdown file.
    markdown = (quick_run.folder / "b.md").read_text()
    assert quick_run.result.stdout.strip() == markdown.strip()
    assert "| `coalesced` | ok |" in markdown and "copy bandwidth" in markdown
    # No TTY: no progress line on stderr, only the device line.
    assert quick_run.result.stderr.strip().startswith("oclsci: device")
    assert "\r" not in quick_run.result.stderr


@pytest.mark.slow
def test_mandelbrot_case_present(quick_run):
    case = next(c for c in quick_run.report["cases"] if c["workload"] == "mandelbrot")
    assert [r["variant"] for r in case["results"]][:3] == ["numpy", "opencl", "opencl+copy"]
    assert not any(r["extrapolated"] for r in case["results"])


@pytest.mark.slow
def test_elementwise_case_has_oclsci_axpy(quick_run):
    case = next(c for c in quick_run.report["cases"] if c["workload"] == "elementwise")
    names = [r["variant"] for r in case["results"]]
    assert names[:2] == ["numpy", "oclsci-axpy"] and "pyopencl-elementwise" in names
    assert case["bytes_moved"] == 12 * case["problem"]["elements"] * case["iterations"]
    assert all(r["gb_per_s"] > 0 for r in case["results"])


class OffByOne:
    """A wrong variant: one step short, and claims to be ten times faster."""

    kind = "opencl"
    name = "off-by-one"
    description = "test: one Jacobi step short"

    def __init__(self, inner):
        self.inner = inner

    def run(self, iterations):
        timing = self.inner.run(iterations - 1)
        return Timing(timing.wall / 10, timing.device / 10, timing.output, timing.source)


@pytest.fixture
def tiny_case(any_compute):
    rhs = np.random.default_rng(5).standard_normal((37, 53)).astype(np.float32)
    return grid_case("jacobi-tiny", "tiny", rhs, 60, 60, any_compute)


def test_wrong_variant_fails_and_gets_no_speedup(tiny_case, any_compute):
    tiny_case.variants.append(OffByOne(SolverJacobi(any_compute, tiny_case.reference.rhs,
                                                    "coalesced")))
    record = run_case(tiny_case, repeat=2, copy_gbps=10.0, budget=QUICK)
    wrong = record["results"][-1]
    assert wrong["variant"] == "off-by-one"
    assert wrong["status"] == "failed" and wrong["check"]["passed"] is False
    assert "WRONG" in wrong["check"]["message"] and wrong["check"]["max_abs_error"] > 0
    for key in ("speedup_vs_numpy", "throughput", "gb_per_s", "percent_of_copy_bandwidth",
                "us_per_iteration"):
        assert wrong[key] is None
    assert wrong["wall_seconds"] > 0  # its time is kept, but it is no win
    assert all(r["status"] == "ok" for r in record["results"][:-1])
    markdown = to_markdown(_report_around(record))
    assert "| `off-by-one` | **FAILED**" in markdown


def test_check_after_fewer_numpy_steps(tiny_case):
    """NumPy runs fewer steps: variants are checked on a separate run of that many."""
    tiny_case.reference_iterations = 25
    record = run_case(tiny_case, repeat=1, budget=QUICK)
    numpy_result, *others = record["results"]
    assert numpy_result["extrapolated"] and numpy_result["iterations_timed"] == 25
    assert all(r["status"] == "ok" and r["check_iterations"] == 25 for r in others)


def test_slow_variant_is_extrapolated_within_budget(tiny_case):
    tiny_case.iterations = 400
    tiny_case.reference_iterations = 400
    record = run_case(tiny_case, repeat=2, budget=Budget(5.0, 1e-3))
    for result in record["results"][1:]:
        assert result["extrapolated"] and result["iterations_timed"] < 400
        assert result["check_iterations"] == result["iterations_timed"]
        assert result["status"] == "ok"
    assert "extrapolated linearly" in to_markdown(_report_around(record))


class FaultyVariant:
    """A real variant whose result is corrupted and whose time is divided by 100: it would be
    the fastest of all if the checks did not catch it."""

    kind = "opencl"

    def __init__(self, inner):
        self.inner = inner
        self.name = f"faulty-{inner.name}"
        self.description = "test: corrupted result, time divided by 100"

    def run(self, iterations):
        timing = self.inner.run(iterations)
        output = np.array(timing.output, copy=True)
        flat = output.reshape(-1)
        flat[: max(1, flat.size // 7)] += 1
        return Timing(timing.wall / 100, None if timing.device is None else timing.device / 100,
                      output, timing.source)


def test_faulty_variant_through_the_cli_marks_failure(tmp_path, monkeypatch, capsys):
    """A wrong variant added to the run of `oclsci bench`: exit 1 after writing, the variant
    marked failed."""
    def add_faulty(case):
        return [FaultyVariant(case.variants[-1])]

    def run_with_a_faulty_variant(*args, **kwargs):
        return run_bench(*args, extra_variants=add_faulty, **kwargs)

    monkeypatch.setattr(cli_bench, "run_bench", run_with_a_faulty_variant)
    out = tmp_path / "b.json"
    with pytest.raises(SystemExit) as stop:
        main(["bench", "mandelbrot", "--quick", "--repeat", "1", "--device", DEVICE,
              "--json", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert stop.value.code == 1
    result = SimpleNamespace(returncode=stop.value.code, stderr=captured.err)
    assert_one_line_error(result, "failed their check", "faulty-", "outputs written")
    report = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    validate(report)
    results = report["cases"][0]["results"]
    faulty = [r for r in results if r["variant"].startswith("faulty-")]
    assert len(faulty) == 1 and faulty[0]["status"] == "failed"
    assert faulty[0]["speedup_vs_numpy"] is None and faulty[0]["throughput"] is None
    assert all(r["status"] == "ok" for r in results if r not in faulty)


@pytest.mark.parametrize("args, fragments", [
    (["nbody"], ["unknown workload 'nbody'", "jacobi"]),
    (["jacobi", "--repeat", "0"], ["--repeat must be >= 1"]),
    (["--json", "/no/such/folder/b.json"], ["does not exist"]),
    (["--json", "out.txt"], ["unknown output type"]),
    (["--markdown", "/no/such/folder/b.md"], ["does not exist"]),
    (["--repeat", "abc"], ["--repeat"]),
    (["--device", "no-such-device"], ["device SPEC 'no-such-device'"]),
])
def test_bad_input_is_one_line(args, fragments, tmp_path):
    result = run_cli("bench", "--quick", "--device", DEVICE, *args, cwd=tmp_path)
    assert_one_line_error(result, *fragments)
    assert not list(tmp_path.iterdir())


def test_plot_without_matplotlib_is_one_line(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from oclsci.cli import main; "
            f"main(['bench', '--quick', '--plot', {str(tmp_path / 'b.png')!r}])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert_one_line_error(result, "needs matplotlib", "oclsci[plot]")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_plot(quick_run, tmp_path):
    pytest.importorskip("matplotlib")
    write_plot(quick_run.report, tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["b.png"]


def test_progress_only_on_a_terminal():
    class Stream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    quiet, shown = Stream(False), Stream(True)
    for stream in (quiet, shown):
        progress = Progress(stream=stream)
        progress("bench jacobi: seed run 1/3")
        progress.close()
    assert quiet.getvalue() == ""
    assert "seed run 1/3" in shown.getvalue() and shown.getvalue().startswith("\r")
    assert Progress(enabled=False, stream=shown).enabled is False


def _fake_compute(is_cpu, memory):
    device = SimpleNamespace(global_mem_size=memory, max_mem_alloc_size=memory // 4)
    facts = SimpleNamespace(global_mem_bytes=memory, max_alloc_bytes=memory // 4)
    return SimpleNamespace(is_cpu=is_cpu, device=device, facts=facts)


def test_large_grids_sized_to_the_device():
    sizes, iterations, notes = large_plan(_fake_compute(False, 80 * 2**30))
    assert sizes == [8192, 16384] and 100 <= iterations <= 1000 and not notes
    sizes, _, notes = large_plan(_fake_compute(False, 4 * 2**30))
    assert sizes == [8192] and "16384^2 skipped" in notes[0]
    sizes, _, notes = large_plan(_fake_compute(True, 4 * 2**30))
    assert sizes == [4096, 8192] and "CPU device" in notes[0]
    sizes, _, notes = large_plan(_fake_compute(True, 2**30))
    assert sizes == [4096] and "8192^2 skipped" in notes[-1]
    assert large_plan(_fake_compute(True, 4 * 2**30), quick=True)[0] == [1024]


def test_api_refuses_bad_repeat_and_workload():
    from oclsci.errors import InputError

    with pytest.raises(InputError, match="--repeat"):
        run_bench(["jacobi"], repeat=0)
    with pytest.raises(InputError, match="unknown workload"):
        run_bench(["fft"])


# -- the stencil cases (oclsci bench stencil) ------------------------------------------------

@pytest.fixture
def tiny_stencil_plans(monkeypatch):
    """The stencil cases on tiny grids (what --quick runs, smaller still)."""
    from oclsci.bench import stencil as stencil_bench

    for key, plan in {"heat2d": (24, 30, 12), "heat3d": (9, 12, 12),
                      "jacobi": (20, 25, 25)}.items():
        monkeypatch.setitem(stencil_bench.PLANS, (key, True), plan)
    return stencil_bench


@pytest.mark.parametrize("dims", [2, 3])
def test_stencil_numpy_slicing_equals_the_stencil_reference(dims):
    from oclsci.bench.stencil import HEAT_2D, HEAT_3D, K_2D, K_3D, NumpySlicing
    from oclsci.stencil import Stencil

    u0 = np.random.default_rng(dims).uniform(0, 1, (7, 11, 5)[:dims]).astype(np.float32)
    k = K_2D if dims == 2 else K_3D
    stencil = Stencil(HEAT_2D if dims == 2 else HEAT_3D, params={"k": k})
    got = NumpySlicing(u0, k).run(9).output
    assert got.dtype == np.float32 and np.array_equal(got, stencil.reference(u0, 9))


def test_stencil_cases_run_exact(tiny_stencil_plans, any_compute):
    from oclsci.stencil.kernels import KERNELS

    found, skipped = tiny_stencil_plans.cases(any_compute, quick=True)
    assert skipped == []
    assert [case.id for case in found] == ["stencil-heat2d-24x24", "stencil-heat3d-9x9x9",
                                           "stencil-jacobi-20x20"]
    for case in found:
        record = run_case(case, repeat=1, budget=QUICK)
        names = [r["variant"] for r in record["results"]]
        if "heat" in case.id:
            only = {"streaming": "heat2d", "column": "heat3d"}  # 2-D or 3-D only
            takes = [name for name in KERNELS if only.get(name, "heat") in case.id]
            assert names == ["numpy", *takes, "auto"]
            assert case.bytes_moved == 2 * 4 * case.work
        else:
            assert names == ["numpy", "stencil-auto", "jacobi-auto"]
            assert case.bytes_moved == 3 * 4 * case.work
        assert record["notes"] == (["NumPy ran 12 steps; its time for 30 is extrapolated "
                                    "linearly"] if "heat2d" in case.id else [])
        for result in record["results"][1:]:
            assert result["status"] == "ok", result
            assert result["check"]["message"].startswith("ok: equal to NumPy bit for bit")
            assert result["device_seconds"] > 0 and result["speedup_vs_numpy"] > 0
        assert "kernel auto: " in record["results"][-1 if "heat" in case.id else 1][
            "description"]


def test_stencil_exact_check_sees_one_bit(tiny_stencil_plans):
    exact = tiny_stencil_plans.exact
    a = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    b = a.copy()
    b.view(np.uint32)[1, 2] ^= 1
    assert exact(a, a.copy()).passed
    verdict = exact(b, a)
    assert not verdict.passed and verdict.figures["cells_differing"] == 1
    assert not exact(a.astype(np.float64), a).passed


def test_stencil_wrong_variant_fails(tiny_stencil_plans, any_compute):
    case = tiny_stencil_plans.cases(any_compute, quick=True)[0][0]
    case.variants = [OffByOne(case.variants[0])]
    record = run_case(case, repeat=1, budget=QUICK)
    wrong = record["results"][1]
    assert wrong["status"] == "failed" and wrong["speedup_vs_numpy"] is None
    assert "cells differ from NumPy's bits" in wrong["check"]["message"]


def test_stencil_jacobi_grid_on_gpus_fits_the_device():
    from oclsci.bench.stencil import jacobi_plan

    side, steps, numpy_steps, notes = jacobi_plan(_fake_compute(False, 80 * 2**30), False)
    assert (side, steps) == (16384, 200) and numpy_steps < steps and len(notes) == 1
    side, *_, notes = jacobi_plan(_fake_compute(False, 4 * 2**30), False)
    assert side == 8192 and "the device's memory" in notes[0]
    assert jacobi_plan(_fake_compute(True, 4 * 2**30), False)[:2] == (2048, 1000)
    assert jacobi_plan(_fake_compute(False, 80 * 2**30), True)[:2] == (256, 200)


def test_stencil_workload_is_benched_only_when_named():
    from oclsci.bench.runner import NOT_IN_ALL, WORKLOADS, parse_workloads

    assert WORKLOADS["stencil"] == "oclsci.bench.stencil" and "stencil" in NOT_IN_ALL
    assert "stencil" not in parse_workloads(["all"])
    assert parse_workloads(["stencil"]) == ["stencil"]


@pytest.mark.slow
def test_stencil_gpu_script_runs_quick_anywhere(tmp_path):
    """benchmarks/gpu_stencil.py (run on an H200 by hand) with tiny grids, tuning included;
    CuPy's rows left out with a note where CuPy is missing."""
    env = dict(os.environ, OCLSCI_TUNE_CACHE="off",  # the checkout first, then the rest
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "gpu_stencil.py"),
                             "--quick", "--tune", "0.5", "--device", DEVICE, "--json",
                             str(tmp_path / "g.json")], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "### The seed's Jacobi, 96x96 float32" in out and "### 3-D 7-point heat, 24^3" in out
    assert "| stencil (auto) |" in out and "| oclsci jacobi --kernel auto |" in out
    for kernel in ("step", "tiled", "stream", "auto"):
        assert f"| {kernel} | `{kernel if kernel != 'auto' else ''}" in out
    assert "**NO**" not in out and "`step` equals NumPy after 2 steps: yes" in out
    assert ("| cupy-raw |" in out) != ("CuPy is not installed" in out)
    record = json.loads((tmp_path / "g.json").read_text())
    assert len(record["rows"]) >= 6 and all(row["same_bits"] for row in record["rows"])


@pytest.mark.slow
def test_stencil_bench_command(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    result = run_cli("bench", "stencil", "--quick", "--repeat", "1", "--device", DEVICE,
                     "--json", tmp_path / "s.json", "--markdown", tmp_path / "s.md",
                     check_exit=0)
    report = json.loads((tmp_path / "s.json").read_text())
    validate(report)
    jsonschema.Draft202012Validator.check_schema(schema())
    assert [case["id"] for case in report["cases"]] == [
        "stencil-heat2d-256x256", "stencil-heat3d-48x48x48", "stencil-jacobi-256x256"]
    assert all(r["status"] == "ok" for case in report["cases"] for r in case["results"])
    assert "| `stencil-auto` | ok |" in result.stdout


def _report_around(record):
    """A minimal report holding one case record, for the Markdown writer."""
    return {"device": {"name": "dev", "platform": "plat", "spec": "0:0", "type": "CPU",
                       "compute_units": 2, "global_mem_bytes": 2**30, "driver_version": "1",
                       "opencl_version": "OpenCL 3.0"},
            "host": {"processor": "cpu", "cpu_count": 2, "os": "os"},
            "versions": {"oclsci": "0"}, "created": "now", "command_line": ["oclsci", "bench"],
            "copy_bandwidth": {"gb_per_s": 10.0, "buffer_bytes": 2**20,
                               "gb_per_s_samples": [10.0]},
            "settings": {"repeat": record["repeat"], "quick": True},
            "cases": [record], "skipped": []}


@pytest.mark.slow
def test_compare_script_puts_reports_side_by_side(quick_run, tmp_path):
    failed = json.loads(json.dumps(quick_run.report))
    failed["device"]["name"] = "other"
    failed["cases"][0]["results"][1].update(status="failed", speedup_vs_numpy=None)
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    paths[0].write_text(json.dumps(quick_run.report))
    paths[1].write_text(json.dumps(failed))
    script = REPO_ROOT / "benchmarks" / "bench_compare.py"
    result = subprocess.run([sys.executable, script, *map(str, paths)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "### Jacobi 400x266" in result.stdout and "| FAILED |" in result.stdout
    assert "other (" in result.stdout


@pytest.mark.slow
def test_sigterm_leaves_no_output(tmp_path):
    import signal

    process = start_cli("bench", "jacobi", "--device", DEVICE, "--json", tmp_path / "b.json",
                        "--markdown", tmp_path / "b.md")
    time.sleep(4)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr
    assert not list(tmp_path.iterdir())


def _result(variant, wall, samples, *, reference=False, status="ok", extrapolated=False,
            speedup=None):
    return {"variant": variant, "reference": reference, "status": status,
            "extrapolated": extrapolated, "wall_seconds": wall,
            "wall_seconds_samples": samples, "speedup_vs_numpy": speedup}


def test_chart_bars_carry_the_spread_the_reference_and_the_marks():
    """What the chart draws, without matplotlib: speed-ups over the case's reference (SciPy
    where it is the reference), error bars from the variant's runs, extrapolated bars hatched
    and starred, failed ones named."""
    case = {"results": [
        _result("scipy", 2.0, [2.0, 2.2, 1.9], reference=True, speedup=1.0),
        _result("fast", 0.5, [0.4, 0.5, 0.8], speedup=4.0),
        _result("guess", 1.0, [1.0], extrapolated=True, speedup=2.0),
        _result("wrong", 0.1, [0.1, 0.1], status="failed"),
    ]}
    assert reference_name(case) == "SciPy"
    assert reference_name({"results": [_result("numpy", 1, [1], reference=True)]}) == "NumPy"
    reference, fast, guess, wrong = chart_bars(case)
    assert reference["colour"] == "tab:grey" and reference["value"] == 1.0
    assert fast["spread"] == (2.0 / 0.8, 2.0 / 0.4) and fast["label"] == "fast"
    assert guess["spread"] is None and guess["hatch"] == "//" and guess["label"] == "guess *"
    assert wrong["value"] == 0.0 and wrong["colour"] == "tab:red"
    assert wrong["label"] == "wrong (FAILED)"
