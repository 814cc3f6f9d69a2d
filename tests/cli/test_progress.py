"""Progress in a batch job's log (``oclsci.cli.progress``): a line at a steady interval of a
clock the test drives, one at the end; through the command, lines in a redirected run."""

from __future__ import annotations

import io
import re

import numpy as np
from conftest import run_cli

from oclsci.cli.progress import format_duration, progress_log


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
