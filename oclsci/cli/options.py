"""Options shared by several commands, defined once."""

from __future__ import annotations

import click

device_option = click.option(
    "--device", "device", metavar="SPEC", default=None,
    help="OpenCL device, as PYOPENCL_CTX: 'P:D', 'nvidia', 'portable:0' (default: "
         "$PYOPENCL_TEST, then $PYOPENCL_CTX; under MPI the rank's GPU of its node; then the "
         "first GPU, then the first device).")

quiet_option = click.option(
    "--quiet", "-q", is_flag=True, help="Print no device line, progress bar or summary.")

dtype_option = click.option(
    "--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
    help="Floating-point type of the computation.")

