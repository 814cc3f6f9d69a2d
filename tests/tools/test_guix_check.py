"""guix/check.sh, the real-Guix check of guix/*.scm, fails on planted defects.

Each test copies the checkout, plants one defect and runs ``guix/check.sh --fail-fast``
on the copy: it must exit 1, name the failing check, and show Guix's own message. The
checks before the defect must pass (so the failure is the defect's, not the machine's).
CI runs ``guix/check.sh`` on the checkout itself (.ci/run).

The check needs root (a chroot holding Debian's Guix, built by ``guix/check.sh --setup``
into /var/cache/oclsci-ci/guix when missing). Where it cannot get a Guix, these tests
skip, except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT, tool_missing

ROOT = REPO_ROOT
CHECK = ROOT / "guix" / "check.sh"
NO_GUIX = 3  # guix/check.sh's exit code when it cannot get a Guix

pytestmark = pytest.mark.slow


def _unavailable(reason: str) -> None:
    tool_missing(f"the real-Guix check: {reason}")


@pytest.fixture(scope="module")
def guix_ready() -> None:
    """Builds the chroot when missing (minutes, once per machine); fails or skips without."""
    if shutil.which("bash") is None:
        _unavailable("bash is missing")
    if os.geteuid() != 0:
        _unavailable("guix/check.sh runs Guix's daemon in a chroot: it needs root")
    proc = subprocess.run(["bash", str(CHECK), "--setup"], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode == NO_GUIX:
        _unavailable(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr


def _copy_checkout(dest: Path) -> Path:
    """The files Git tracks (those the package is built from), or the whole tree."""
    try:
        names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                               check=True, timeout=60).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        return dest
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _plant(tmp_path: Path, file: str, old: str, new: str) -> Path:
    src = _copy_checkout(tmp_path / "src")
    path = src / "guix" / file
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"guix/{file} no longer has {old!r}: update this test"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return src


def _check(src: Path) -> tuple[int, str]:
    proc = subprocess.run(["bash", str(CHECK), "--fail-fast", str(src)], capture_output=True,
                          text=True, timeout=1800)
    if proc.returncode == NO_GUIX:
        _unavailable(proc.stderr.strip())
    return proc.returncode, proc.stdout + proc.stderr


def _assert_failed_at(out: str, check: str, message: str, passed: list[str]) -> None:
    lines = out.splitlines()
    failures = [line for line in lines if line.startswith("FAIL")]
    assert len(failures) == 1 and failures[0].startswith(f"FAIL  {check}: guix "), out
    assert message in out, out
    assert [line[6:] for line in lines if line.startswith("ok    ")] == passed, out


def test_collision_fails(guix_ready, tmp_path):
    """"python-numpy" by name next to oclsci: two NumPys in one profile."""
    src = _plant(tmp_path, "manifest.scm", '"pocl"', '"pocl" "python-numpy"')
    rc, out = _check(src)
    assert rc == 1, out
    _assert_failed_at(out, "profile guix/manifest.scm",
                      "profile contains conflicting entries for python-numpy",
                      ["package evaluates"])


def test_unknown_package_fails(guix_ready, tmp_path):
    src = _plant(tmp_path, "manifest-mpi.scm", '"python-mpi4py")', '"python-mpi4pyy")')
    rc, out = _check(src)
    assert rc == 1, out
    _assert_failed_at(out, "profile guix/manifest.scm + guix/manifest-mpi.scm",
                      "python-mpi4pyy: unknown package",
                      ["package evaluates", "profile guix/manifest.scm"])


def test_unbound_variable_fails(guix_ready, tmp_path):
    src = _plant(tmp_path, "oclsci.scm", "#:tests? #f", "#:tests? no-such-variable")
    rc, out = _check(src)
    assert rc == 1, out
    _assert_failed_at(out, "package evaluates", "no-such-variable", [])
    assert "unbound variable" in out.lower(), out


def test_usage_errors():
    """Bad arguments: exit 2 and a one-line message, before any Guix is needed."""
    for args in (["--bogus"], ["/nonexistent/oclsci"], ["a", "b"]):
        proc = subprocess.run(["bash", str(CHECK), *args], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
