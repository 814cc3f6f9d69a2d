"""Every shell and Python block of README.md and docs/*.md runs as written on this machine's
CPU, unless the line just before it says why it cannot here:

    <!-- docs-test: skip REASON -->      REASON one of SKIP_REASONS (what runs it instead)
    <!-- docs-test: mpiexec N -->        a Python block, run as N MPI ranks

A document's blocks run in order in one folder of their own (so that a block may use the
files an earlier one made), beside links to the repository's folders that the docs name
(``benchmarks/``, ``slurm/``, ...), with a tuning cache and caches of their own. Each must exit 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, tool_missing
from mpi_launch import launch_env, mpi_missing, mpiexec_command

pytestmark = pytest.mark.slow

#: Why a block may not run here, and what runs it instead.
SKIP_REASONS = {
    "gpu": "needs a GPU (benchmarks/gpu_verify.sh on a GPU node)",
    "slurm": "needs a Slurm cluster (tests/tools/test_slurm.py runs the scripts on a test one)",
    "guix": "needs Guix (tests/tools/test_guix*.py, guix/check.sh in CI)",
    "install": "installs or sets up a machine (CI's set-up does it as README says)",
    "intel": "needs Intel's runtime (CI's second pass installs it)",
    "other-machine": "a command from another machine or the talk, shown for comparison",
    "nested": "runs this test suite itself",
    "records": "rewrites the measurement files under docs/bench/ that the doc quotes",
    "long": "a measurement of minutes; the doc gives its quick form too, which runs here",
}
DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(sh|bash|python)\n(.*?)^```", re.M | re.S)
MARK = re.compile(r"<!-- docs-test: (skip|mpiexec) (\S+) -->\s*$")
LINKED = ("benchmarks", "docs", "guix", "kernels", "slurm", "tests", "oclsci", "pyproject.toml")
BLOCK_TIMEOUT = 1800


def blocks(path: Path) -> list[tuple[int, str, str, tuple[str, str] | None]]:
    """(line, language, text, mark) of every fenced shell or Python block of ``path``."""
    text = path.read_text()
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        found.append((line, match[1], match[2], (mark[1], mark[2]) if mark else None))
    return found


def test_every_mark_is_known():
    for path in DOCS:
        for line, language, _, mark in blocks(path):
            if mark is None:
                continue
            kind, value = mark
            where = f"{path.name}:{line}"
            if kind == "skip":
                assert value in SKIP_REASONS, f"{where}: unknown reason {value!r}"
            else:
                assert language == "python" and value.isdigit(), where


def _runnable(path: Path) -> list[tuple[int, str, str, tuple[str, str] | None]]:
    return [block for block in blocks(path) if not block[3] or block[3][0] != "skip"]


@pytest.mark.parametrize("path", [p for p in DOCS if _runnable(p)], ids=lambda p: p.name)
def test_the_blocks_of_a_document_run_as_written(path, tmp_path):
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    env = launch_env({
        "OCLSCI_TUNE_CACHE": str(tmp_path / "tuning.json"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "MPLBACKEND": "Agg"})
    for line, language, text, mark in _runnable(path):
        where = f"{path.name}:{line}"
        if language == "python":
            script = tmp_path / f"block{line}.py"
            script.write_text(text)
            argv = [sys.executable, str(script)]
            if mark is not None:  # mpiexec N
                if mpi_missing():
                    tool_missing(mpi_missing())
                argv = [*mpiexec_command(), "-n", mark[1], *argv]
        else:
            argv = ["bash", "-e", "-o", "pipefail", "-c", text]
        result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, (f"{where} exited {result.returncode}\n{text}\n"
                                        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


NOTEBOOK_WORDS = [
    (re.compile(r"\bissues? ?#?\d+\b", re.I), "an issue number"),
    (re.compile(r"\blent\b", re.I), "how a machine was obtained"),
    (re.compile(r"\brun \d+\b"), "a run's number"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b"), "a commit hash"),
]


def test_docs_speak_to_users():
    """README.md and docs/ (not docs/bench/, the measurement history) name no issue numbers,
    no run numbers, no machines 'lent' and no commit hashes in their prose; code, commands
    and link targets are left alone (the Guix pin's commit is in code)."""
    for path in DOCS:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # blocks
        text = re.sub(r"`[^`\n]*`", "", text)                           # code spans
        text = re.sub(r"\]\([^)]*\)", "]", text)                         # link targets
        for line in text.splitlines():
            for pattern, what in NOTEBOOK_WORDS:
                found = pattern.search(line)
                assert not found, f"{path.name}: {what} ({found[0]!r}) in: {line.strip()}"
