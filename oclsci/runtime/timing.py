"""Timing: device seconds from OpenCL profiling events, host seconds from the monotonic clock.

- :func:`event_seconds`: from the start of one event to the end of another (or the same);
- :class:`Stopwatch`: a run of launches, from events where the queue profiles, else the host
  clock (``ComputeContext.stopwatch()`` starts one);
- :func:`timed`: a host call and its host-clock seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl


def event_seconds(first: Any, last: Any = None) -> float:
    """Device seconds from the start of ``first`` to the end of ``last`` (default: ``first``).

    Waits for ``last``; raises ``pyopencl.Error`` where the queue gives no profiling events.
    """
    last = first if last is None else last
    last.wait()
    return (last.profile.end - first.profile.start) * 1e-9


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    """Call ``function()``; return the host-clock seconds it took and its result."""
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


@dataclass
class Stopwatch:
    """Times queued work from OpenCL profiling events, with a host-clock fallback.

    Record the events of the launches to time; ``stop()`` waits for the queue and returns the
    device seconds between the start of the first and the end of the last recorded event.
    """

    queue: Any
    profiling: bool
    wall_start: float = field(default_factory=time.perf_counter)
    first_event: Any = None
    last_event: Any = None
    device_seconds: float = 0.0
    wall_seconds: float = 0.0
    source: str = "host clock"

    def record(self, event: Any) -> None:
        """Note an event of the timed work (only the first and the last are kept)."""
        if self.first_event is None:
            self.first_event = event
        self.last_event = event

    def stop(self) -> float:
        """Wait for the queue; set and return ``device_seconds`` (and ``wall_seconds``)."""
        self.queue.finish()
        self.wall_seconds = time.perf_counter() - self.wall_start
        self.device_seconds = self.wall_seconds
        if self.profiling and self.first_event is not None:
            try:
                start = self.first_event.profile.start
                end = self.last_event.profile.end
            except cl.Error:
                return self.device_seconds
            if end >= start > 0:
                self.device_seconds = (end - start) * 1e-9
                self.source = "OpenCL events"
        return self.device_seconds
