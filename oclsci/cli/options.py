"""Options shared by several commands, defined once."""

from __future__ import annotations

import click

device_option = click.option(
    "--device", "device", metavar="SPEC", default=None,
    help="OpenCL device, as PYOPENCL_CTX: 'P:D', 'nvidia', 'portable:0' (default: "
         "$PYOPENCL_CTX, then the first GPU, then the first device).")

quiet_option = click.option(
    "--quiet", "-q", is_flag=True, help="Print no device line, progress bar or summary.")

dtype_option = click.option(
    "--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
    help="Floating-point type of the computation.")


def positive_int(name: str):
    """A click callback refusing integers below 1 for option NAME."""
    def check(ctx: click.Context, param: click.Parameter, value):
        if value is not None and value < 1:
            raise click.BadParameter(f"{name} must be >= 1, got {value}")
        return value
    return check
