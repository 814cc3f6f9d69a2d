"""The per-user cache folder (oclsci.runtime.cache_home): XDG first, never a relative path;
PyOpenCL's caches under it turned off where they cannot be written."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import pyopencl
import pytest

from oclsci.errors import OclsciWarning
from oclsci.runtime import cache_home
from oclsci.runtime.health import disable_unusable_pyopencl_cache, pyopencl_cache_problem


def test_xdg_cache_home_first(tmp_path):
    assert cache_home({"XDG_CACHE_HOME": str(tmp_path), "HOME": "/home/x"}) == tmp_path


def test_home_cache_without_xdg(tmp_path):
    assert cache_home({"HOME": str(tmp_path)}) == tmp_path / ".cache"


def test_a_relative_xdg_cache_home_is_ignored(tmp_path):
    assert cache_home({"XDG_CACHE_HOME": "cache", "HOME": str(tmp_path)}) == tmp_path / ".cache"


def test_a_missing_home_is_not_made(tmp_path):
    """A job whose $HOME names no folder (a node without home mounts) gets a private
    temporary cache and one warning; the home folder is not created."""
    home = tmp_path / "gone"
    with pytest.warns(OclsciWarning, match="gone does not exist"):
        folder = cache_home({"HOME": str(home)})
    assert folder.parent == Path(tempfile.gettempdir()) and not home.exists()


def test_no_home_gives_a_private_folder_under_the_temporary_folder(monkeypatch):
    monkeypatch.setattr("os.path.expanduser", lambda path: path)  # no HOME, no password entry
    folder = cache_home({"HOME": ""})
    assert folder.is_absolute() and folder.parent == Path(tempfile.gettempdir())
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    assert cache_home({"HOME": ""}) == folder  # one per process


def test_unwritable_pyopencl_cache_is_turned_off_with_one_warning(tmp_path, monkeypatch):
    """Issue 33: XDG_CACHE_HOME naming a file, PyOpenCL runs without its caches."""
    monkeypatch.setattr(pyopencl, "_PYOPENCL_NO_CACHE", False)
    monkeypatch.setenv("PYOPENCL_NO_CACHE", "0")  # restored after the test, whatever is set
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert pyopencl_cache_problem() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not disable_unusable_pyopencl_cache()
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    with pytest.warns(OclsciWarning, match="a-file is a file, not a folder"):
        assert disable_unusable_pyopencl_cache()
    assert pyopencl._PYOPENCL_NO_CACHE and os.environ["PYOPENCL_NO_CACHE"] == "1"
    assert not disable_unusable_pyopencl_cache()  # once only
    assert list(tmp_path.iterdir()) == [tmp_path / "a-file"]  # nothing made to find out


def test_pyopencl_cache_on_a_full_or_pseudo_file_system_is_turned_off(tmp_path, monkeypatch):
    """/proc takes no folder, though root may write there; a full disk made PyOpenCL's SQLite
    cache fail ("database or disk is full", an internal error): both turn the caches off."""
    from oclsci.runtime import health

    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-such-cache")
    problem = pyopencl_cache_problem()  # root may write /proc, others may not
    assert "nothing can be made in /proc" in problem or "/proc is not writable" in problem
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(health, "PYOPENCL_MIN_FREE_BYTES", 2**62)
    assert "(a full file system: " in pyopencl_cache_problem()
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_the_private_folder_goes_when_the_process_ends(tmp_path):
    """A job without a home folder leaves no temporary cache behind (one per rank and run)."""
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('ignore'); "
            "from oclsci.runtime import cache_home; "
            f"print(cache_home({{'HOME': {str(tmp_path / 'gone')!r}}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    folder = Path(done.stdout.strip())
    assert folder.parent == Path(tempfile.gettempdir()) and not folder.exists()
