"""Running kernels: cheap launches, the host kept a bounded amount of work ahead of the device,
and timing.

**Launches.** PyOpenCL's ``enqueue_nd_range_kernel`` converts its size tuples and creates an
event (a Python object, and on some drivers a device event) for every launch. A solver that
enqueues thousands of launches of kernels whose arguments are already set needs neither:
:class:`Launch` calls ``clEnqueueNDRangeKernel`` in the OpenCL library that PyOpenCL itself
loaded, through ctypes, with preset size arrays and no event. Set ``OCLSCI_RAW_ENQUEUE=0`` to
go through PyOpenCL instead (it is also the fallback when the library cannot be found).

**Pacing.** OpenCL enqueues return at once: a loop that enqueues a long run without waiting
queues all of it (PoCL and other drivers keep every command in host memory) and only looks at a
stop signal when the device has caught up, possibly hours later. :class:`Pacer` cuts a run
into chunks of launches, keeps at most ``in_flight`` chunks queued, and sizes the chunks from
the measured time per chunk so that each takes about ``chunk_seconds`` of device time (and of
host enqueueing time, when that is the larger): a stop request is then seen within about
``in_flight * chunk_seconds``, and host memory stays flat however long the run. The
measurement only sizes chunks; it never changes what is computed.

**Timing.** Device seconds from OpenCL profiling events, host seconds from the monotonic
clock: :func:`event_seconds` (from the start of one event to the end of another),
:class:`Stopwatch` (a run of launches, from events where the queue profiles, else the host
clock; ``ComputeContext.stopwatch()`` starts one), :func:`timed` (a host call).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from oclsci.runtime import signals

_LIBRARY: Any = None
_TRIED = False
CHUNK_SECONDS = 0.05  # device (or host) time per chunk
IN_FLIGHT = 2  # chunks queued ahead of the one the host waits for: the device never idles


def _find_library() -> str | None:
    """Path of the OpenCL ICD loader that PyOpenCL's extension loaded."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(" ")[-1]
                if "libOpenCL" in os.path.basename(path):
                    return path
    except OSError:
        pass
    here = os.path.dirname(cl.__file__)
    for pattern in (os.path.join(here, ".libs", "libOpenCL*"),
                    os.path.join(os.path.dirname(here), "pyopencl.libs", "libOpenCL*")):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return ctypes.util.find_library("OpenCL")


def _enqueue_function() -> Any:
    global _LIBRARY, _TRIED
    if not _TRIED:
        _TRIED = True
        path = _find_library()
        if path:
            try:
                library = ctypes.CDLL(path)
                function = library.clEnqueueNDRangeKernel
            except (OSError, AttributeError):
                function = None
            else:
                function.restype = ctypes.c_int32
                function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                     ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
            _LIBRARY = function
    return _LIBRARY


def raw_enqueue_enabled() -> bool:
    """True when launches go through ctypes (``OCLSCI_RAW_ENQUEUE`` not 0 and library found)."""
    if os.environ.get("OCLSCI_RAW_ENQUEUE", "1").strip() in ("0", "no", "off", "false"):
        return False
    return _enqueue_function() is not None


class Launch:
    """One kernel with its global and local sizes, enqueued again and again.

    :meth:`fast` enqueues without an event (ctypes, or PyOpenCL when disabled);
    :meth:`with_event` goes through PyOpenCL and returns the event.
    """

    def __init__(self, queue: Any, kernel: Any, global_size: tuple[int, ...],
                 local_size: tuple[int, ...] | None):
        self.queue, self.kernel = queue, kernel
        self.global_size, self.local_size = tuple(global_size), local_size
        self._function = _enqueue_function() if raw_enqueue_enabled() else None
        if self._function is not None:
            dims = len(self.global_size)
            self._dims = dims
            self._global = (ctypes.c_size_t * dims)(*self.global_size)
            self._local = (None if local_size is None
                           else (ctypes.c_size_t * dims)(*tuple(local_size)))
            self._queue_ptr = queue.int_ptr
            self._kernel_ptr = kernel.int_ptr

    def with_event(self) -> Any:
        """Enqueue through PyOpenCL; return the event."""
        return cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size,
                                          self.local_size)

    def fast(self) -> None:
        """Enqueue with no event."""
        if self._function is None:
            cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size,
                                       self.local_size)
            return
        status = self._function(self._queue_ptr, self._kernel_ptr, self._dims, None,
                                self._global, self._local, 0, None, None)
        if status != 0:
            # Let PyOpenCL raise its own, named error for the same launch.
            self.with_event()
            raise cl.Error(f"clEnqueueNDRangeKernel failed with status {status}")


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
    Work on other queues of the device beside ``queue`` (one grid's bands on queues of their
    own) adds the last event of each through :meth:`record_ends`.
    """

    queue: Any
    profiling: bool
    wall_start: float = field(default_factory=time.perf_counter)
    first_event: Any = None
    last_event: Any = None
    other_ends: list = field(default_factory=list)
    device_seconds: float = 0.0
    wall_seconds: float = 0.0
    source: str = "host clock"

    def record(self, event: Any) -> None:
        """Note an event of the timed work (only the first and the last are kept)."""
        if self.first_event is None:
            self.first_event = event
        self.last_event = event

    def record_ends(self, events: list) -> None:
        """Note the last events so far of the other queues whose work is timed too (None
        where a queue has none): the timed work ends with the last of them to end."""
        self.other_ends = [event for event in events if event is not None]

    def stop(self) -> float:
        """Wait for the queue (and the other queues' last events); set and return
        ``device_seconds`` (and ``wall_seconds``)."""
        self.queue.finish()
        if self.other_ends:
            cl.wait_for_events(self.other_ends)
        self.wall_seconds = time.perf_counter() - self.wall_start
        self.device_seconds = self.wall_seconds
        if self.profiling and self.first_event is not None:
            try:
                start = self.first_event.profile.start
                end = max(event.profile.end for event in [self.last_event, *self.other_ends])
            except cl.Error:
                return self.device_seconds
            if end >= start > 0:
                self.device_seconds = (end - start) * 1e-9
                self.source = "OpenCL events"
        return self.device_seconds
