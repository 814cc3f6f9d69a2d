"""``oclsci elementwise OP``: run a ready-made elementwise operation on random data, check it
against NumPy and print its device time and bandwidth (the work:
:func:`oclsci.elementwise.measure.run_operation`)."""

from __future__ import annotations

import functools

import click

from oclsci.cli import device_option, quiet_option
from oclsci.elementwise.kernels import TYPE_NAMES
from oclsci.elementwise.measure import run_operation
from oclsci.elementwise.ops import OPS


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
    result = run_operation(op, size, dtype, device=device, repeat=repeat, per_item=per_item,
                           notify=None if quiet else functools.partial(click.echo, err=True))
    if quiet:
        return
    click.echo(f"elementwise {op}: {size} x {result.dtype} on {result.spec} "
               f"({result.device}): check against NumPy passed (exact)")
    click.echo(f"  kernel {result.kernel_seconds * 1e3:.4f} ms (median of {repeat}, OpenCL "
               f"events), {result.gb_per_s:.1f} GB/s; device copy "
               f"{result.copy_gb_per_s:.1f} GB/s; {result.percent_of_copy:.0f}% of copy")
