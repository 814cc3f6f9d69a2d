"""The one driver of every workload's command (oclsci.driver), with a fake runner: the order of
its steps, the outputs written on the root only, the stop flag it holds, the placement it
picks."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

import pytest

from oclsci import driver
from oclsci.runtime.signals import SignalExit


@dataclass(frozen=True)
class FakeJob:
    device: str | None = "fake:0"


@dataclass
class FakeOutcome:
    value: int
    written: list = field(default_factory=list)


class FakePlacement(driver.OneDevicePlacement):
    """One device without OpenCL; ``is_root`` False plays a rank other than 0."""

    def __init__(self, is_root: bool = True):
        self.is_root = is_root
        self.steps: list = []

    def agree(self, function):
        self.steps.append("agree")
        return function()

    def open_device(self, device, notify):
        self.steps.append(("open", device))
        if notify is not None:
            notify(f"device {device}")
        return "compute"


class FakeRun:
    raising = True

    def __init__(self, job, placement):
        self.placement, self.steps = placement, placement.steps
        self.flag = None

    def prepare(self):
        self.steps.append("prepare")

    def solve(self, compute, stop_flag, progress, notify):
        self.flag = stop_flag
        self.steps.append(("solve", compute, progress is not None, notify is not None))
        with driver.shown(progress, 3) as update:
            if update is not None:
                update(3, 3)
        return FakeOutcome(7) if self.placement.is_root else None

    def outputs(self, outcome):
        return [(None, lambda: self.steps.append("skipped")),
                ("a", lambda: self.steps.append("write a")),
                ("b", lambda: self.steps.append("write b"))]


def progress_maker(seen):
    import contextlib

    @contextlib.contextmanager
    def progress(total, start):
        seen.append((total, start))
        yield lambda done, total_: seen.append(done)

    return progress


def test_the_root_prepares_opens_solves_writes_in_order_and_gets_the_outcome():
    placement, seen, lines = FakePlacement(), [], []
    outcome = driver.drive(FakeJob(), FakeRun, placement=placement,
                           progress=progress_maker(seen), notify=lines.append)
    assert placement.steps == ["prepare", ("open", "fake:0"), ("solve", "compute", True, True),
                               "agree", "write a", "write b"]
    assert outcome.value == 7 and outcome.written == ["a", "b"]
    assert seen == [(3, 0), 3] and lines == ["device fake:0"]


def test_another_rank_writes_nothing_shows_nothing_and_gets_none():
    placement, seen, lines = FakePlacement(is_root=False), [], []
    assert driver.drive(FakeJob(), FakeRun, placement=placement, progress=progress_maker(seen),
                        notify=lines.append) is None
    assert ("solve", "compute", False, False) in placement.steps
    assert not [step for step in placement.steps if str(step).startswith("write")]
    assert seen == [] and lines == []


def test_a_stop_signal_during_the_solve_ends_the_run_before_any_output():
    class Stopped(FakeRun):
        def solve(self, compute, stop_flag, progress, notify):
            signal.raise_signal(signal.SIGUSR1)  # blocked: held for the flag's poll
            stop_flag()  # a raising flag raises at its poll
            return FakeOutcome(0)

    placement = FakePlacement()
    with pytest.raises(SignalExit) as stop:
        driver.drive(FakeJob(), Stopped, placement=placement)
    assert stop.value.signum == signal.SIGUSR1
    assert placement.steps == ["prepare", ("open", "fake:0")]


def test_without_a_launcher_the_placement_is_this_device(monkeypatch):
    monkeypatch.setattr(driver, "wants_mpi", lambda: False)
    placement = driver.launched_placement()
    assert isinstance(placement, driver.OneDevicePlacement)
    assert placement.is_root and placement.world is None


def test_on_root_runs_on_the_root_only():
    assert driver.on_root(FakePlacement(), lambda: 5) == 5
    assert driver.on_root(FakePlacement(is_root=False), lambda: 5) is None
