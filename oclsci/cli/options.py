"""Options shared by several commands, defined once."""

from __future__ import annotations

from typing import Any

import click

from oclsci.runtime.launcher import wants_mpi

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


def launched_world() -> Any:
    """The MPI world when a launcher started this command as several ranks, else None.

    Imports :mod:`oclsci.mpi` (and mpi4py) only then: a one-device run loads none of it.
    """
    if not wants_mpi():
        return None
    from oclsci.mpi.world import mpi_world

    return mpi_world()
