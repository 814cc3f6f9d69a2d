"""Registration of Intel's pip-installed OpenCL runtime (oclsci/runtime/icd.py).

The folder logic is tested everywhere; the registration itself where ``intel-opencl-rt`` is
installed (``pip install '.[intel]'``), and it must be there when OCLSCI_TEST_DEVICES names
an Intel device (CI's second pass), so that a broken install fails instead of skipping.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

from oclsci.runtime import icd

ROOT = str(REPO_ROOT)
INTEL_WANTED = "intel" in os.environ.get("OCLSCI_TEST_DEVICES", "").lower()


def _needs_intel():
    if icd.find_intel_runtime() is None:
        if INTEL_WANTED:
            pytest.fail("OCLSCI_TEST_DEVICES names Intel but intel-opencl-rt is not installed "
                        "(pip install '.[intel]')")
        pytest.skip("Intel's OpenCL runtime is not installed (pip install '.[intel]')")


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    env = dict(env, PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_loader_lines_keep_existing_icds_with_absolute_paths(tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    (vendors / "local.icd").write_text("liblocal.so\n")
    (vendors / "liblocal.so").write_text("")
    (vendors / "empty.icd").write_text("\n")
    lines = icd.loader_icd_lines({"OCL_ICD_VENDORS": str(vendors)})
    assert lines == [("local.icd", str(vendors / "liblocal.so")),
                     ("nvidia.icd", "libnvidia-opencl.so.1")]
    single = vendors / "nvidia.icd"
    assert icd.loader_icd_lines({"OCL_ICD_VENDORS": str(single)}) == [
        ("nvidia.icd", "libnvidia-opencl.so.1")]


def test_vendors_dir_is_written_once_and_named_by_content(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    lines = [("a.icd", "/x/liba.so"), ("intel-cpu.icd", "/y/libintelocl.so")]
    first = icd.write_vendors_dir(lines, env)
    assert first == icd.write_vendors_dir(lines, env)
    assert first.parent == tmp_path / "cache" / "oclsci" / "icd"
    assert sorted(p.name for p in first.iterdir()) == ["00-a.icd", "01-intel-cpu.icd",
                                                       icd.MARKER]
    assert (first / "01-intel-cpu.icd").read_text() == "/y/libintelocl.so\n"
    other = icd.write_vendors_dir(lines[:1], env)
    assert other != first and not list(other.parent.glob(".staging-*"))


def test_nvidia_library_added_only_when_no_icd_names_it(tmp_path, monkeypatch):
    driver = tmp_path / "opengl-driver" / "lib"
    driver.mkdir(parents=True)
    monkeypatch.setattr(icd, "NVIDIA_FOLDERS", (str(tmp_path / "absent"), str(driver)))
    assert icd.unlisted_nvidia_library([("pocl.icd", "/x/libpocl.so")]) is None
    (driver / icd.NVIDIA_LIBRARY).write_text("")
    assert icd.unlisted_nvidia_library([("pocl.icd", "/x/libpocl.so")]) == str(
        driver / icd.NVIDIA_LIBRARY)
    assert icd.unlisted_nvidia_library([("nvidia.icd", "libnvidia-opencl.so.1")]) is None


def test_disabled_by_environment(tmp_path):
    env = dict(os.environ, OCLSCI_REGISTER_ICDS="0", XDG_CACHE_HOME=str(tmp_path))
    env.pop("OCL_ICD_VENDORS", None)
    done = _python("import os; from oclsci.runtime import icd; print(icd.register_pip_runtimes(), "
                   "os.environ.get('OCL_ICD_VENDORS'))", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] None"


def test_intel_runtime_registered_beside_existing_icds(tmp_path):
    _needs_intel()
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "other.icd").write_text("/nonexistent/libother.so\n")
    env = dict(os.environ, OPENCL_VENDOR_PATH=str(vendors), XDG_CACHE_HOME=str(tmp_path / "c"))
    env.pop("OCLSCI_REGISTER_ICDS", None)
    env.pop("OCL_ICD_VENDORS", None)
    code = ("import json, os; from oclsci.runtime.selection import list_devices; "
            "d = list_devices(); print(json.dumps([os.environ['OCL_ICD_VENDORS'], d]))")
    done = _python(code, env)
    assert done.returncode == 0, done.stderr
    folder, devices = json.loads(done.stdout)
    folder = Path(folder)
    assert folder.parent == tmp_path / "c" / "oclsci" / "icd"
    listed = {p.read_text().strip() for p in folder.glob("*.icd")}
    assert listed == {"/nonexistent/libother.so", str(icd.find_intel_runtime())}
    platforms = {entry["platform"] for entry in devices}
    assert any(name.startswith("Intel(R) OpenCL") for name in platforms), platforms
    assert any("Portable Computing Language" in name for name in platforms), platforms
    # A child inherits the folder and keeps it (no new folder per generation).
    child = _python(code, dict(env, OCL_ICD_VENDORS=str(folder)))
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout)[0] == str(folder)


def test_devices_command_lists_intel(tmp_path):
    _needs_intel()
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=ROOT)
    env.pop("OCL_ICD_VENDORS", None)
    done = run_cli("devices", env=env)
    assert done.returncode == 0, done.stderr
    assert "Intel(R) OpenCL" in done.stdout and "Portable Computing Language" in done.stdout


def test_intel_extra_keeps_the_other_platforms_indices(tmp_path):
    """Installing the intel extra must not renumber platforms: Intel's is listed last."""
    _needs_intel()
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    env.pop("OCL_ICD_VENDORS", None)
    done = _python("from oclsci.runtime.selection import get_platforms; "
                   "print([p.name for p in get_platforms()])", env)
    assert done.returncode == 0, done.stderr
    names = ast.literal_eval(done.stdout.strip())
    assert names[-1].startswith(icd.INTEL_PLATFORM) and len(names) > 1, names


def test_a_users_icd_folder_is_respected(tmp_path):
    """OCL_ICD_VENDORS set by the user names the runtimes: Intel's is not added to it."""
    _needs_intel()
    empty = tmp_path / "vendors"
    empty.mkdir()
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty), XDG_CACHE_HOME=str(tmp_path / "c"))
    done = _python("import os; from oclsci.runtime.icd import register_pip_runtimes; "
                   "print(register_pip_runtimes(), os.environ['OCL_ICD_VENDORS'])", env)
    assert done.returncode == 0, done.stderr
    assert "libintelocl" not in done.stdout
    if icd.unlisted_nvidia_library([]) is None:  # else NVIDIA's driver is added (Guix's case)
        assert done.stdout.split()[-1] == str(empty)

