"""``oclsci elementwise OP``'s work: run one ready-made operation on random data, check it
against NumPy exactly, and time it (OpenCL events) next to a device-to-device copy.

:func:`run_operation` opens the device, checks the result and returns an
:class:`OperationResult`; it prints nothing (the device line goes to ``notify``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from oclsci.elementwise.ops import OPS
from oclsci.errors import InputError, OclsciError, UnknownNameError
from oclsci.runtime.device import create_context
from oclsci.runtime.launch import event_seconds


class CheckFailed(OclsciError):
    """The device's result differs from NumPy's."""


@dataclass(frozen=True)
class OperationResult:
    """One checked and timed operation: what ran where, the median kernel and copy times
    (seconds, OpenCL events) and the bandwidths (bytes read + written per second / 1e9)."""

    op: str
    size: int
    dtype: str
    device: str       # the device's name
    spec: str         # the SPEC that selects it
    repeat: int
    per_item: int
    kernel_seconds: float
    bytes: int        # bytes read + written by one launch
    gb_per_s: float
    copy_seconds: float
    copy_gb_per_s: float

    @property
    def percent_of_copy(self) -> float:
        """The kernel's bandwidth as a percentage of the device copy's."""
        return 100 * self.gb_per_s / self.copy_gb_per_s


def random_array(rng: np.random.Generator, size: int, dtype: np.dtype) -> np.ndarray:
    """Random values over the whole range of an integer type, or normal floats."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    return rng.standard_normal(size, dtype=np.float64).astype(dtype)


def operation_call(queue: cl.CommandQueue, op: Any, host: dict, scalar: Any
                   ) -> tuple[list, dict, np.ndarray]:
    """Operation ``op`` set up on ``host`` arrays (name -> array, all of one size and dtype)
    and ``scalar``: its kernel's arguments (the arrays on the device, the scalar in its place,
    an output array where the written one is not an input), the device arrays by name, and
    NumPy's result (the reference)."""
    device_arrays = {k: cla.to_device(queue, v) for k, v in host.items()}
    args: list = [device_arrays[k] for k in op.arrays]
    if op.scalar_position is not None:
        args.insert(op.scalar_position, scalar)
    if op.written not in device_arrays:  # an output that is not an input: pass it
        first = host[op.arrays[0]]
        device_arrays[op.written] = cla.empty(queue, first.size, first.dtype)
        args.append(device_arrays[op.written])
    reference_args = [host[k] for k in op.arrays]
    if op.scalar_position is not None:
        reference_args.insert(op.scalar_position, scalar)
    with np.errstate(over="ignore"):
        expected = op.reference(*reference_args)
    return args, device_arrays, expected


def _check_request(name: str, size: int, repeat: int) -> None:
    if name not in OPS:
        raise UnknownNameError(f"unknown operation {name!r}; choose one of {', '.join(OPS)}")
    if size < 1:
        raise InputError(f"--size must be >= 1, got {size}")
    if repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {repeat}")


def run_operation(name: str, size: int = 2**24, dtype: str = "float32", *,
                  device: str | None = None, repeat: int = 10, per_item: int = 1,
                  seed: int = 0,
                  notify: Callable[[str], None] | None = None) -> OperationResult:
    """Run operation ``name`` of :data:`~oclsci.elementwise.ops.OPS` on ``size`` random
    elements of ``dtype`` on ``device`` (a SPEC; None: the default choice), check it against
    NumPy (:class:`CheckFailed` unless equal bit for bit), then time ``repeat`` launches and
    as many device copies of one array. ``per_item``: elements per work-item;
    ``notify(line)`` gets the device line."""
    _check_request(name, size, repeat)
    op = OPS[name]
    compute = create_context(device)
    if notify is not None:
        notify(compute.banner())
    dtype_ = compute.check_dtype(dtype)
    if not compute.profiling:
        raise OclsciError(f"device {compute.spec} gives no profiling events; cannot time")
    nbytes = size * dtype_.itemsize
    compute.check_allocation((len(op.arrays) + 2) * nbytes, f"{name} on {size} {dtype_}")
    kernel = op.kernel if per_item == 1 else op.kernel.variant(per_item=per_item)

    rng = np.random.default_rng(seed)
    host = {array_name: random_array(rng, size, dtype_) for array_name in op.arrays}
    scalar = dtype_.type(3 if dtype_.kind in "iu" else 2.5)
    queue = compute.queue
    args, device_arrays, expected = operation_call(queue, op, host, scalar)

    # Warm-up (builds the program), then check.
    kernel(*args, device=compute)
    got = device_arrays[op.written].get()
    if not np.array_equal(got, expected):
        bad = np.flatnonzero(got != expected)
        first = int(bad[0])
        raise CheckFailed(f"elementwise {name} ({dtype_}) differs from NumPy at {bad.size} of "
                          f"{size} elements (first at index {first}: got {got[first].item()!r}, "
                          f"expected {expected[first].item()!r})")

    kernel_seconds = []
    for _ in range(repeat):
        kernel(*args, device=compute)
        kernel_seconds.append(event_seconds(kernel.last_events[0], kernel.last_events[-1]))
    # Device-to-device copy of one array, for comparison.
    source = device_arrays[op.arrays[0]]
    target = cla.empty(queue, size, dtype_)
    cl.enqueue_copy(queue, target.data, source.data, byte_count=nbytes).wait()
    copy_seconds = [event_seconds(cl.enqueue_copy(queue, target.data, source.data,
                                                   byte_count=nbytes))
                    for _ in range(repeat)]
    seconds = statistics.median(kernel_seconds)
    copy = statistics.median(copy_seconds)
    moved = op.bytes_per_element * nbytes
    return OperationResult(
        op=name, size=size, dtype=dtype_.name, device=compute.name, spec=compute.spec,
        repeat=repeat, per_item=per_item, kernel_seconds=seconds, bytes=moved,
        gb_per_s=moved / seconds / 1e9, copy_seconds=copy, copy_gb_per_s=2 * nbytes / copy / 1e9)
