"""Progress in a batch job's log (``oclsci.cli``): a line at a steady interval of a
clock the test drives, one at the end; through the command, lines in a redirected run."""

from __future__ import annotations

import io
import re

import numpy as np
from conftest import run_cli

from oclsci.cli import format_duration, progress_log


class FakeClock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_interval_with_rate_and_time_left():
    clock, stream = FakeClock(), io.StringIO()
    with progress_log(1000, 0, label="jacobi", every=60, clock=clock, stream=stream) as update:
        clock.now += 30
        update(100, 1000)  # before the interval: nothing
        clock.now += 30
        update(200, 1000)
        clock.now += 59
        update(300, 1000)  # 59 s after the last line: nothing
        clock.now += 1
        update(400, 1000)
        clock.now += 10
    lines = stream.getvalue().splitlines()
    assert lines == [
        "oclsci: jacobi: step 200 of 1000 (20.0%), 1m00s elapsed, 3.33 steps/s, about 4m00s left",
        "oclsci: jacobi: step 400 of 1000 (40.0%), 2m00s elapsed, 3.33 steps/s, about 3m00s left",
        "oclsci: jacobi: finished in 2m10s",
    ]


def test_a_resumed_run_counts_its_rate_from_where_it_resumed():
    clock, stream = FakeClock(), io.StringIO()
    with progress_log(2000, 1000, label="jacobi", every=1, clock=clock, stream=stream) as update:
        clock.now += 2
        update(1400, 2000)
    assert "step 1400 of 2000 (70.0%), 2.0s elapsed, 200 steps/s, about 3.0s left" \
        in stream.getvalue()


def test_nothing_at_the_end_of_a_short_run_or_after_an_error():
    clock, stream = FakeClock(), io.StringIO()
    with progress_log(10, 0, label="jacobi", every=60, clock=clock, stream=stream) as update:
        update(10, 10)
    try:
        with progress_log(10, 0, label="jacobi", every=0, clock=clock, stream=stream):
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert stream.getvalue() == ""


def test_durations():
    assert [format_duration(s) for s in (3.42, 123, 3723)] == ["3.4s", "2m03s", "1h02m03s"]


def test_a_redirected_run_logs_progress_and_quiet_silences_it(tmp_path):
    np.save(tmp_path / "b.npy", np.ones((32, 32), np.float32))
    args = ["jacobi", tmp_path / "b.npy", "-n", 2000, "-o", tmp_path / "x.npy",
            "--progress-every", 0]
    result = run_cli(*args, check_exit=0)
    lines = [line for line in result.stderr.splitlines() if line.startswith("oclsci: jacobi:")]
    assert lines[-1].startswith("oclsci: jacobi: finished in ")
    steps = [int(re.search(r"step (\d+) of 2000 ", line).group(1)) for line in lines[:-1]]
    assert steps == sorted(steps) and all(0 < step <= 2000 for step in steps)
    quiet = run_cli(*args, "--quiet", check_exit=0)
    assert quiet.stderr == ""


def test_poisson_logs_each_cycle_with_its_residual(tmp_path):
    """A redirected `oclsci poisson` prints, per cycle, the cycles done of those expected at
    the current rate and the residual, then one line at the end; the residuals are the
    summary's history."""
    np.save(tmp_path / "b.npy", np.random.default_rng(3).standard_normal((64, 64)))
    result = run_cli("poisson", tmp_path / "b.npy", "--tol", "1e-9", "--progress-every", 0,
                     "-o", tmp_path / "x.npy", check_exit=0)
    lines = [line for line in result.stderr.splitlines() if line.startswith("oclsci: poisson:")]
    assert lines[-1].startswith("oclsci: poisson: finished in ")
    found = [re.search(r"cycle (\d+) of (\d+) .*residual (\S+) \(--tol 1e-09\)$", line)
             for line in lines[:-1]]
    assert all(found), lines
    cycles = [int(match[1]) for match in found]
    assert cycles == list(range(len(cycles)))
    assert int(found[-1][2]) == cycles[-1]  # converged: as many as expected
    history = next(line for line in result.stdout.splitlines() if line.startswith("history"))
    assert [f"{float(match[3]):.2e}" for match in found] == history.split()[1:]


def test_lombscargle_logs_frequencies_done(tmp_path):
    times = np.sort(np.random.default_rng(4).uniform(0, 50, 300))
    np.save(tmp_path / "s.npy", np.stack([times, np.cos(times)]))
    result = run_cli("lombscargle", tmp_path / "s.npy", "--freqs", "0.1:5:20000",
                     "--progress-every", 0, "-o", tmp_path / "p.npy", check_exit=0)
    lines = [line for line in result.stderr.splitlines()
             if line.startswith("oclsci: lombscargle: ")]
    assert lines[-1].startswith("oclsci: lombscargle: finished in ")
    done = [int(re.search(r"frequency (\d+) of 20000 ", line).group(1)) for line in lines[:-1]]
    assert done == sorted(done) and done[-1] == 20000


def test_expected_cycles_follow_the_rate_of_convergence():
    from oclsci.poisson.solve import _Progress

    progress = _Progress(1e-6, 50, None)
    progress.record(1.0)
    assert progress.expected_cycles() == 50  # no rate yet
    progress.record(1e-2)  # a hundredfold per cycle: 2 more cycles to 1e-6
    assert progress.expected_cycles() == 3
    progress.record(2e-2)  # rising: no estimate
    assert progress.expected_cycles() == 50
