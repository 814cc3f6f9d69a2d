"""Keep the host a bounded amount of device work ahead of the device.

OpenCL enqueues return at once: a loop that enqueues a long run without waiting queues all of
it (PoCL and other drivers keep every command in host memory) and only looks at a stop signal
when the device has caught up, possibly hours later. :class:`Pacer` cuts a run into chunks of
launches, keeps at most ``in_flight`` chunks queued, and sizes the chunks from the measured
time per chunk so that each takes about ``chunk_seconds`` of device time (and of host
enqueueing time, when that is the larger): a stop request is then seen within about
``in_flight * chunk_seconds``, and host memory stays flat however long the run.

The measurement only sizes chunks; it never changes what is computed.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from oclsci.runtime import signals

CHUNK_SECONDS = 0.05  # device (or host) time per chunk
IN_FLIGHT = 2  # chunks queued ahead of the one the host waits for: the device never idles


class Pacer:
    """Sizes chunks of launches and waits so that at most ``in_flight`` chunks are queued.

    Call :meth:`launches` for the size of the next chunk, enqueue it, then :meth:`submitted`
    with the event of its last command.
    """

    def __init__(self, chunk_seconds: float = CHUNK_SECONDS, in_flight: int = IN_FLIGHT,
                 first_chunk: int = 1, max_chunk: int = 1 << 20):
        self.chunk_seconds = chunk_seconds
        self.in_flight = in_flight
        self.max_chunk = max_chunk
        self._chunk = max(1, first_chunk)
        self._queued: deque[tuple[Any, int]] = deque()  # (event, launches)
        self._last_wake: float | None = None
        self._last_end: int | None = None
        self._since_submit = 0

    def launches(self, limit: int | None = None) -> int:
        """Number of launches to enqueue next (at least 1, at most ``limit``)."""
        return max(1, self._chunk if limit is None else min(self._chunk, limit))

    def submitted(self, event: Any, launches: int) -> None:
        """Note a queued chunk; wait for older ones until at most ``in_flight`` are queued."""
        self._queued.append((event, launches))
        while len(self._queued) > self.in_flight:
            finished, size = self._queued.popleft()
            finished.wait()
            self._adapt(finished, size)
        signals.poll()

    def launched(self, event: Any) -> None:
        """Note one launch, for loops that enqueue one command at a time (event may be None)."""
        self._since_submit += 1
        if event is not None and self._since_submit >= self.launches():
            self.submitted(event, self._since_submit)
            self._since_submit = 0

    def drain(self) -> None:
        """Wait for every queued chunk (the queue is about to be synchronised anyway)."""
        while self._queued:
            self._queued.popleft()[0].wait()
        self._last_wake = self._last_end = None

    def _adapt(self, finished: Any, size: int) -> None:
        # The chunk's time is the larger of its device time (from the end of the chunk before
        # to its own end, by profiling events) and the host's time between two returns from
        # wait(): scale the next chunk towards chunk_seconds, at most 2x up or 4x down.
        now = time.perf_counter()
        previous_wake, self._last_wake = self._last_wake, now
        previous_end, self._last_end = self._last_end, _end_of(finished)
        if previous_wake is None:
            self._chunk = min(self.max_chunk, self._chunk * 2)
            return
        seconds = now - previous_wake
        if previous_end is not None and self._last_end is not None:
            seconds = max(seconds, (self._last_end - previous_end) * 1e-9)
        factor = min(2.0, max(0.25, self.chunk_seconds / max(seconds, 1e-6)))
        self._chunk = int(min(self.max_chunk, max(1, round(size * factor))))


def _end_of(event: Any) -> int | None:
    """The event's end on the device clock (ns), or None without profiling."""
    try:
        return int(event.profile.end)
    except Exception:  # noqa: BLE001 - no profiling queue, or a driver that will not say
        return None
