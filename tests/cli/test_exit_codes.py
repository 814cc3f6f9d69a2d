"""README's exit-code rule, over every command (README.md, "Exit codes"): 0 done (help
included); 1 a bad value, a missing file, an unknown device; 2 a usage error: an unknown
command, option or name from a fixed list (kernel, workload, operation, method), a value of
the wrong kind, a folder where a file is expected. Signals (75, 128+N) and 69 (no platform)
have suites of their own (tests/runtime/test_stop_matrix.py, test_device_selection.py)."""

from __future__ import annotations

import numpy as np
import pytest

from oclsci.cli import COMMANDS

# Every command: cases of each code, run in this process (one line on stderr each).
CASES = {
    "bench": [(["nbody"], 2), (["jacobi", "--repeat", "0"], 1), (["--repeat", "x"], 2)],
    "devices": [([], 0), (["--nope"], 2)],
    "elementwise": [(["nosuchop"], 2), (["add", "--size", "0"], 1)],
    "jacobi": [(["{b}", "--kernel", "nope"], 2), (["{b}", "-n", "-3"], 1),
               (["{dir}"], 2), (["{b}", "-n", "1.5"], 2), (["{missing}"], 1),
               (["{b}", "--device", "no-such-device"], 1), (["{b}", "--progress-every", "nan"], 2)],
    "laplacian": [(["{missing}"], 1), (["{dir}"], 2)],
    "lombscargle": [(["{b}", "--freqs", "0.1:1:10"], 1), (["{dir}", "--freqs", "0.1:1:10"], 2)],
    "mandelbrot": [(["--width", "0", "--no-image"], 1), (["--kernel", "x"], 2)],
    "poisson": [(["{b}", "--method", "nosuch"], 2), (["{b}", "--tol", "-1"], 1)],
    "selftest": [(["--device", "no-such-device"], 1), (["--nope"], 2)],
    "stencil": [(["u ** 2", "{b}", "-n", "1"], 1), (["u", "{missing}", "-n", "1"], 1),
                (["u", "{b}", "-n", "-1"], 2), (["u", "{dir}", "-n", "1"], 2)],
    "tune": [(["--kernel", "seed"], 2), (["--budget", "-1"], 1), (["--size", "0x5"], 1)],
}


def test_every_command_has_cases():
    assert set(CASES) == set(COMMANDS)


@pytest.mark.parametrize("command, args, code", [
    (command, args, code) for command, cases in CASES.items() for args, code in cases])
def test_exit_code_rule(invoke_cli, tmp_path, command, args, code):
    np.save(tmp_path / "b.npy", np.ones((8, 8), np.float32))
    names = {"b": tmp_path / "b.npy", "dir": tmp_path, "missing": tmp_path / "missing.npy"}
    args = [arg.format(**names) for arg in args]
    out = ["-o", str(tmp_path / "out.npy")] if command in ("jacobi", "laplacian", "lombscargle",
                                                          "poisson", "stencil") else []
    exit_code, _, err = invoke_cli(command, *args, *out)
    assert exit_code == code, err
    if code:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("oclsci: error:"), err
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize("command", sorted(CASES))
def test_help_is_exit_0(invoke_cli, command):
    exit_code, out, _ = invoke_cli(command, "--help")
    assert exit_code == 0 and "Usage:" in out


@pytest.mark.parametrize("stderr", ["full", "closed"])
def test_a_run_whose_messages_cannot_be_written_still_ends_as_done(tmp_path, stderr):
    """Standard error on a full disk (a batch job's log) or closed: the device line and the
    summary's warnings are dropped, the run and its output are not."""
    import os
    import subprocess

    from conftest import DEVICE_SPECS, cli_command

    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device")
    np.save(tmp_path / "b.npy", np.ones((6, 7), np.float32))
    command = cli_command("jacobi", tmp_path / "b.npy", "-n", 3, "-o", tmp_path / "x.npy",
                          "--device", DEVICE_SPECS[0])
    with open(os.devnull if stderr == "closed" else "/dev/full", "w") as sink:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=sink, timeout=120, close_fds=True,
                                preexec_fn=(lambda: os.close(2)) if stderr == "closed" else None)
    assert result.returncode == 0
    assert np.load(tmp_path / "x.npy").shape == (6, 7)
