"""The per-user cache folder (oclsci.runtime.cachedir): XDG first, never a relative path."""

from __future__ import annotations

import tempfile
from pathlib import Path

from oclsci.runtime.cachedir import cache_home


def test_xdg_cache_home_first(tmp_path):
    assert cache_home({"XDG_CACHE_HOME": str(tmp_path), "HOME": "/home/x"}) == tmp_path


def test_home_cache_without_xdg():
    assert cache_home({"HOME": "/home/x"}) == Path("/home/x/.cache")


def test_a_relative_xdg_cache_home_is_ignored():
    assert cache_home({"XDG_CACHE_HOME": "cache", "HOME": "/home/x"}) == Path("/home/x/.cache")


def test_no_home_gives_a_private_folder_under_the_temporary_folder(monkeypatch):
    monkeypatch.setattr("os.path.expanduser", lambda path: path)  # no HOME, no password entry
    folder = cache_home({"HOME": ""})
    assert folder.is_absolute() and folder.parent == Path(tempfile.gettempdir())
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    assert cache_home({"HOME": ""}) == folder  # one per process
