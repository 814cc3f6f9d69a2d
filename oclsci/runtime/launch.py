"""Cheap kernel launches: ``clEnqueueNDRangeKernel`` without an event, through ctypes.

PyOpenCL's ``enqueue_nd_range_kernel`` converts its size tuples and creates an event (a
Python object, and on some drivers a device event) for every launch. A solver that enqueues
thousands of launches of kernels whose arguments are already set needs neither: this module
calls the OpenCL library that PyOpenCL itself loaded, with preset size arrays and no event.

Set ``OCLSCI_RAW_ENQUEUE=0`` to go through PyOpenCL instead (it is also the fallback when the
library cannot be found).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from typing import Any

import pyopencl as cl

_LIBRARY: Any = None
_TRIED = False


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
