"""``oclsci selftest`` passes on every test device, and fails (exit 1) on a broken kernel."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import DEVICE_SPECS, REPO_ROOT, run_cli, tool_missing

from oclsci.cli import main
from oclsci.jacobi.kernels import KERNELS
from oclsci.runtime import device as device_module
from oclsci.runtime import programs, selection
from oclsci.runtime.device import ComputeContext
from oclsci.selftest import all_checks, run_check

pytestmark = pytest.mark.slow

ROOT = str(REPO_ROOT)


@pytest.mark.parametrize("spec", DEVICE_SPECS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no OpenCL device: pip install 'oclsci[pocl]'"))])
def test_selftest_command_passes(spec, tmp_path):
    report = tmp_path / "selftest.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = run_cli("selftest", "--quick", "--device", spec, "--json", report, env=env,
                   cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    checks = [line for line in lines if line.startswith(("PASS", "FAIL"))]
    assert checks and all(line.startswith("PASS  ") for line in checks)
    assert lines[-1].startswith(f"selftest PASS: {len(checks)} of {len(checks)} checks passed")
    data = json.loads(report.read_text())
    assert data["passed"] is True and data["failed"] == [] and data["checks"] == len(checks)
    names = [result["name"] for result in data["results"]]
    for kernel in KERNELS:
        assert any(name.startswith("jacobi") and kernel in name for name in names), kernel
    assert any(name.startswith("jacobi auto=") for name in names)
    assert sum(name.startswith("mandelbrot") for name in names) == (
        2 if data["device"]["fp64"] else 1)
    assert sum(name.startswith("elementwise") for name in names) == (
        24 if data["device"]["fp64"] else 20)
    dtypes = 2 if data["device"]["fp64"] else 1
    assert sum(name.startswith("poisson") for name in names) == 2 * dtypes  # multigrid, CG
    assert sum(name.startswith("lombscargle") for name in names) == 6 * dtypes  # 5 + auto
    assert all(result["max_difference"] == 0 for result in data["results"]  # exact ones
               if result["name"].startswith(("jacobi", "elementwise")))
    quiet = run_cli("selftest", "--quick", "--device", spec, "--quiet", env=env, cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    verdict = quiet.stdout.splitlines()  # the verdict alone
    assert len(verdict) == 1
    assert verdict[0].startswith(f"selftest PASS: {len(checks)} of {len(checks)} checks passed")
    if data["device"]["fp64"]:  # the count docs/vendors.md gives (a device with fp64)
        vendors = (REPO_ROOT / "docs" / "vendors.md").read_text()
        assert f"elementwise operations ({len(checks)} checks)" in vendors
        assert f"selftest PASS: {len(checks)} of {len(checks)} checks passed" in vendors


@pytest.fixture
def broken_seed_kernel(tmp_path, monkeypatch):
    """Kernel templates whose seed Jacobi kernel adds B instead of subtracting it."""
    kernels = tmp_path / "kernels"
    shutil.copytree(programs.template_dir(), kernels)
    seed = kernels / "jacobi" / "seed.cl.mako"
    text = seed.read_text()
    assert "- rhs[" in text
    seed.write_text(text.replace("- rhs[", "+ rhs["))
    monkeypatch.setattr(programs, "template_dir", lambda: kernels)
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "tuning.json"))  # auto: the default
    programs._lookup.cache_clear()
    # Fresh contexts, so that no kernel built from the good templates is reused.
    monkeypatch.setattr(device_module, "_CONTEXTS", {})
    yield kernels
    programs._lookup.cache_clear()


def test_broken_kernel_fails_and_exits_1(broken_seed_kernel, capsys):
    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device: pip install 'oclsci[pocl]'")
    with pytest.raises(SystemExit) as exit_info:
        main(["selftest", "--quick", "--device", DEVICE_SPECS[0]])
    assert exit_info.value.code == 1
    out, err = capsys.readouterr()
    failed = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert failed and all(line.split()[1:3] == ["jacobi", "seed"] for line in failed)
    assert "selftest FAIL:" in out
    assert err.count("\n") == 1 and "checks failed" in err and "jacobi seed" in err


def test_build_error_is_a_fail_line_not_a_crash(tmp_path, monkeypatch):
    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device: pip install 'oclsci[pocl]'")
    kernels = tmp_path / "kernels"
    shutil.copytree(programs.template_dir(), kernels)
    path = kernels / "jacobi" / "coalesced.cl.mako"
    path.write_text(path.read_text().replace("__kernel void", "__kernel void syntax error", 1))
    monkeypatch.setattr(programs, "template_dir", lambda: kernels)
    programs._lookup.cache_clear()
    try:
        p, d = selection.select_device(DEVICE_SPECS[0])[:2]
        compute = ComputeContext(p, d)
        results = [run_check(name, check) for name, check in all_checks(compute, quick=True)
                   if name.startswith("jacobi coalesced")]
    finally:
        programs._lookup.cache_clear()
    assert results and not any(r.passed for r in results)
    assert all(r.max_difference is None and "Error" in r.detail for r in results)


@pytest.mark.oclgrind
def test_selftest_passes_under_oclgrind(tmp_path):
    """The simulator as a third OpenCL implementation (its checks are the Oclgrind suite's)."""
    import oclgrind as og

    reason = og.missing_reason()
    if reason:
        tool_missing(reason)
    env = og.oclgrind_environ(og.make_vendors_dir(tmp_path / "vendors"), checks=False)
    env.update(OCLGRIND_LOCAL_MEM_SIZE="65536",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = run_cli("selftest", "--quick", "--device", "oclgrind", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Oclgrind" in done.stdout.splitlines()[0]
    assert done.stdout.splitlines()[-1].startswith("selftest PASS: ")


@pytest.mark.parametrize("where", ["under-a-file", "missing-folder"])
def test_unwritable_json_path_fails_before_the_checks(tmp_path, monkeypatch, invoke_cli, where):
    """`--json PATH` that cannot be written is a one-line error before any device work, not
    after the whole run (root writes anywhere: the path lies under a regular file)."""
    import oclsci.selftest

    monkeypatch.setattr(oclsci.selftest, "create_context", lambda *args: pytest.fail("device work"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = (blocker if where == "under-a-file" else tmp_path / "missing") / "report.json"
    code, out, err = invoke_cli("selftest", "--quick", "--json", path)
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: error:") and str(path) in lines[0]
