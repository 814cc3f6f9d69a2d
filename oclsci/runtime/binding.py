"""Which GPU of its node a rank uses: Slurm's GRES variables, the node-local rank, sharing.

Slurm (``--gpus-per-node``, ``--gpus-per-task``, ``--gres=gpu:N``) tells each task the GPUs it
was given in ``ROCR_VISIBLE_DEVICES`` (AMD), ``CUDA_VISIBLE_DEVICES`` (NVIDIA) and
``GPU_DEVICE_ORDINAL``; the vendors' OpenCL drivers honour the first two, so a task's OpenCL GPU
list is what Slurm gave it. Ranks of one node that see the same list share it out: the k-th of
them (in node-local rank order) takes the k-th GPU of the list. With ``--gpus-per-task`` each
rank sees its own list and takes its first GPU. More ranks than GPUs in one list is an error
(:class:`GpuBindingError`, exit 1) unless ``OCLSCI_SHARE_GPUS=1`` asks for sharing, in which
case the ranks wrap round the GPUs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from oclsci.errors import DeviceError

#: Variables naming the GPUs a task may use, in the order they are trusted.
VISIBLE_DEVICE_VARIABLES = ("ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                            "HIP_VISIBLE_DEVICES")
#: Set to 1 (yes, true) to let several ranks of a node use one GPU.
SHARE_VARIABLE = "OCLSCI_SHARE_GPUS"


class GpuBindingError(DeviceError):
    """More ranks on a node than GPUs for them, and sharing was not asked for."""


@dataclass(frozen=True)
class GpuBinding:
    """The GPU one rank takes: index ``slot`` among ``count`` GPUs it may use."""

    slot: int
    count: int
    variable: str | None = None
    visible: tuple[str, ...] = ()
    shared: bool = False

    def describe(self) -> str:
        """E.g. ``GPU 1 of 2 (CUDA_VISIBLE_DEVICES=4,5: GPU 5)``."""
        text = f"GPU {self.slot} of {self.count}"
        if self.variable:
            text += f" ({self.variable}={','.join(self.visible)}: GPU {self.visible[self.slot]})"
        return text + (", shared" if self.shared else "")


def visible_gpus(environ: dict[str, str] | None = None) -> tuple[str | None, tuple[str, ...]]:
    """``(variable, ids)`` of the first visible-devices variable set, or ``(None, ())``."""
    environ = os.environ if environ is None else environ
    for name in VISIBLE_DEVICE_VARIABLES:
        value = environ.get(name)
        if value is not None and value.strip() not in ("", "NoDevFiles"):
            return name, tuple(v.strip() for v in value.split(",") if v.strip())
    return None, ()


def sharing_allowed(environ: dict[str, str] | None = None) -> bool:
    """True when ``OCLSCI_SHARE_GPUS`` asks for several ranks per GPU."""
    environ = os.environ if environ is None else environ
    return environ.get(SHARE_VARIABLE, "").strip().lower() in ("1", "yes", "true")


def bind_gpu(index: int, gpu_count: int | None = None, *, ranks: int | None = None,
             environ: dict[str, str] | None = None) -> GpuBinding | None:
    """The GPU of the ``index``-th rank (from 0) among the ``ranks`` ranks of a node that share
    one list of GPUs: Slurm's visible-devices list when set, else ``gpu_count`` GPUs.

    Returns None when there is no GPU to bind to. Raises :class:`GpuBindingError` when the
    ranks outnumber the GPUs, unless :func:`sharing_allowed`.
    """
    environ = os.environ if environ is None else environ
    variable, visible = visible_gpus(environ)
    count = len(visible) if variable else (gpu_count or 0)
    if count == 0:
        return None
    ranks = max(ranks or 0, index + 1)
    shared = ranks > count
    if shared and not sharing_allowed(environ):
        where = f"{variable}={','.join(visible)}" if variable else f"{count} OpenCL GPU(s)"
        raise GpuBindingError(
            f"{ranks} ranks on node {node_name(environ)} but {count} GPU(s) for them ({where}): "
            f"ask Slurm for one GPU per rank (--gpus-per-node={ranks} or --gpus-per-task=1), "
            f"or set {SHARE_VARIABLE}=1 to share GPUs")
    return GpuBinding(index % count, count, variable, visible, shared)


def node_name(environ: dict[str, str] | None = None) -> str:
    """This node's name: Slurm's (several slurmd may share a host), else the host name."""
    environ = os.environ if environ is None else environ
    return environ.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0]


def opencl_index(binding: GpuBinding, gpu_count: int) -> int:
    """Index into the OpenCL GPU list: ``slot`` when the driver shows only the visible GPUs;
    the GPU's own number when it shows them all (a driver ignoring the variable)."""
    if gpu_count > binding.count and binding.visible and binding.visible[binding.slot].isdigit():
        number = int(binding.visible[binding.slot])
        if number < gpu_count:
            return number
    return binding.slot % gpu_count
