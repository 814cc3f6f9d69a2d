"""``oclsci elementwise OP``: run a ready-made elementwise operation on random data, check it
against NumPy and print its device time and bandwidth."""

from __future__ import annotations

import statistics

import click
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from oclsci.cli import device_option, quiet_option
from oclsci.elementwise.kernels import TYPE_NAMES
from oclsci.elementwise.ops import OPS
from oclsci.errors import InputError, OclsciError, UnknownNameError
from oclsci.runtime.device import create_context
from oclsci.runtime.launch import event_seconds


class CheckFailed(OclsciError):
    """The device's result differs from NumPy's."""


def random_array(rng: np.random.Generator, size: int, dtype: np.dtype) -> np.ndarray:
    """Random values over the whole range of an integer type, or normal floats."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    return rng.standard_normal(size, dtype=np.float64).astype(dtype)


def run_op(name: str, size: int, dtype: str, device: str | None, repeat: int,
           per_item: int = 1, quiet: bool = True, seed: int = 0) -> dict:
    """Run, check and time operation ``name``; return the measurements."""
    if name not in OPS:
        raise UnknownNameError(f"unknown operation {name!r}; choose one of {', '.join(OPS)}")
    if size < 1:
        raise InputError(f"--size must be >= 1, got {size}")
    if repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {repeat}")
    op = OPS[name]
    compute = create_context(device, quiet=quiet)
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
    device_arrays = {k: cla.to_device(queue, v) for k, v in host.items()}
    args: list = [device_arrays[k] for k in op.arrays]
    if op.scalar_position is not None:
        args.insert(op.scalar_position, scalar)
    if op.written not in device_arrays:  # an output that is not an input: pass it
        device_arrays[op.written] = cla.empty(queue, size, dtype_)
        args.append(device_arrays[op.written])
    reference_args = [host[k] for k in op.arrays]
    if op.scalar_position is not None:
        reference_args.insert(op.scalar_position, scalar)
    with np.errstate(over="ignore"):
        expected = op.reference(*reference_args)

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
    return {
        "op": name, "size": size, "dtype": dtype_.name, "device": compute.name,
        "spec": compute.spec, "repeat": repeat, "per_item": per_item,
        "kernel_seconds": seconds, "bytes": moved, "gb_per_s": moved / seconds / 1e9,
        "copy_seconds": copy, "copy_gb_per_s": 2 * nbytes / copy / 1e9,
    }


@click.command("elementwise")
@click.argument("op", type=click.Choice(sorted(OPS)))
@click.option("--size", "-n", type=int, default=2**24, show_default=True,
              help="Number of elements.")
@click.option("--dtype", type=click.Choice(TYPE_NAMES), default="float32", show_default=True,
              help="Element type.")
@device_option
@click.option("--repeat", "-r", type=int, default=10, show_default=True,
              help="Timed launches after one warm-up; the median is printed.")
@click.option("--per-item", type=int, default=1, show_default=True,
              help="Elements per work-item (a tuning knob).")
@quiet_option
def elementwise_command(op: str, size: int, dtype: str, device: str | None, repeat: int,
                        per_item: int, quiet: bool) -> None:
    """Run OP (increment, multiply, add, axpy) on random data, check it against NumPy, and print
    the median device time (OpenCL events) and the bandwidth (bytes read + written / time),
    next to a device-to-device copy's."""
    result = run_op(op, size, dtype, device, repeat, per_item=per_item, quiet=quiet)
    if quiet:
        return
    click.echo(f"elementwise {op}: {size} x {result['dtype']} on {result['spec']} "
               f"({result['device']}): check against NumPy passed (exact)")
    click.echo(f"  kernel {result['kernel_seconds'] * 1e3:.4f} ms (median of {repeat}, OpenCL "
               f"events), {result['gb_per_s']:.1f} GB/s; device copy "
               f"{result['copy_gb_per_s']:.1f} GB/s; "
               f"{100 * result['gb_per_s'] / result['copy_gb_per_s']:.0f}% of copy")
