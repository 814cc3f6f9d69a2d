"""``oclsci devices``: list every OpenCL platform and device with its SPEC (the listing:
:func:`oclsci.runtime.selection.device_listing`)."""

from __future__ import annotations

import json
import warnings

import click

from oclsci.errors import OclsciWarning
from oclsci.runtime.selection import device_listing


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**10:.0f} KiB"


@click.command("devices")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def devices_command(as_json: bool) -> None:
    """List OpenCL platforms and devices with the SPEC that selects each."""
    devices, empty = device_listing()
    if as_json:
        click.echo(json.dumps(devices, indent=2))
        for entry in empty:  # on stderr, as every warning: stdout stays JSON
            warnings.warn(f"platform {entry['platform_index']} ({entry['platform']}) has no "
                          f"usable device: {entry['reason']}", OclsciWarning, stacklevel=1)
        return
    for entry in empty:
        click.echo(f"platform {entry['platform_index']}: {entry['platform']}: no usable device "
                   f"({entry['reason']})")
    platform = None
    for info in devices:
        if info["platform"] != platform:
            platform = info["platform"]
            click.echo(f"platform {info['spec'].split(':')[0]}: {platform}")
        click.echo(
            f"  {info['spec']:<5} {info['name']}  [{info['type']}, {info['vendor']}]\n"
            f"        OpenCL {info['opencl_version']}, driver {info['driver_version']}; "
            f"{info['compute_units']} CUs, global {_gib(info['global_mem_bytes'])}, "
            f"local {_gib(info['local_mem_bytes'])}, max work-group {info['max_work_group_size']}, "
            f"fp64 {'yes' if info['fp64'] else 'no'}"
        )
