"""Device selection: the platforms, SPECs and the rules that pick a device.

With :mod:`oclsci.runtime.device` (the context and queues built on the chosen device), the only
place that knows about OpenCL platforms. The device comes from, in order:
an explicit SPEC (``--device`` / ``device=``), ``PYOPENCL_TEST``, ``PYOPENCL_CTX``, a node-local
MPI rank spread over the GPUs of the node, the first GPU, then the first device of any kind.

A SPEC means what it means to PyOpenCL's ``create_some_context``: ``PLATFORM[:DEVICE]``, each
part an index when it is an integer in range, otherwise a case-insensitive substring of the
name (an empty part is 0). ``PYOPENCL_TEST`` uses PyOpenCL's test syntax
(``PLATFORM:DEV[,DEV][;PLATFORM...]``, names matched against name and vendor) and, as in
PyOpenCL, wins over ``PYOPENCL_CTX``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyopencl as cl

from oclsci.errors import (
    DeviceError,
    NoPlatformError,
    pip_extra,
)
from oclsci.runtime.facts import claims_every_type, device_type_name, is_real_gpu, supports_fp64
from oclsci.runtime.health import (
    empty_platform_reason,
)
from oclsci.runtime.icd import INTEL_LIBRARY, INTEL_PLATFORM, register_pip_runtimes

NO_PLATFORM_HELP = (
    "no OpenCL platform found: install one for the CPU with " + pip_extra("pocl") + ", or your "
    "GPU vendor's OpenCL driver (ICD); an ICD file in a folder named by OCL_ICD_VENDORS also works"
)


def get_platforms() -> list[Any]:
    """Return the OpenCL platforms, or raise :class:`NoPlatformError` with set-up advice.

    Runtimes that pip installs unregistered (Intel's, see :mod:`oclsci.runtime.icd`) are registered
    before the ICD loader first reads its folder, and Intel's is listed last, so that the
    other platforms keep their indices whether or not it is installed.
    """
    registered = register_pip_runtimes()
    try:
        platforms = cl.get_platforms()
    except cl.Error as error:
        raise NoPlatformError(NO_PLATFORM_HELP) from error
    if not platforms:
        raise NoPlatformError(NO_PLATFORM_HELP)
    if any(Path(library).name == INTEL_LIBRARY for library in registered):
        # Installing the intel extra must not renumber the platforms the user had: last.
        platforms.sort(key=lambda platform: platform.name.strip() == INTEL_PLATFORM)
    return platforms


def available_specs(platforms: list[Any]) -> list[str]:
    """Every ``p:d`` SPEC with its device name, for error messages."""
    return [
        f"{p}:{d} ({device.name.strip()})"
        for p, platform in enumerate(platforms)
        for d, device in enumerate(platform.get_devices())
    ]


def _no_match(what: str, spec: str, platforms: list[Any],
              source: str = "device SPEC") -> DeviceError:
    # ``source`` names where the SPEC came from: --device, PYOPENCL_CTX or PYOPENCL_TEST.
    return DeviceError(
        f"{source} {spec!r}: {what}; available: " + ", ".join(available_specs(platforms))
    )


def _pick(objects: list[Any], answer: str, *, last_match: bool, with_vendor: bool) -> int | None:
    """Index of the object chosen by ``answer``: an index in range, else a name substring."""
    try:
        index = int(answer)
    except ValueError:
        pass
    else:
        if 0 <= index < len(objects):
            return index
    needle = answer.strip().lower()
    found = None
    for i, obj in enumerate(objects):
        haystack = obj.name + (" " + obj.vendor if with_vendor else "")
        if needle in haystack.lower():
            found = i
            # PyOpenCL's PYOPENCL_CTX keeps the last matching platform, the first device.
            if not last_match:
                break
    return found


def parse_ctx_spec(spec: str, platforms: list[Any],
                   source: str = "device SPEC") -> tuple[int, int]:
    """Resolve a ``PYOPENCL_CTX``-style SPEC to ``(platform_index, device_index)``.

    ``source`` names where SPEC came from in error messages (e.g. ``PYOPENCL_CTX``).
    """
    answers = spec.split(":")
    if len(answers) > 2:
        raise _no_match("too many ':'-separated parts (expected PLATFORM[:DEVICE])", spec,
                        platforms, source)
    platform_answer = answers[0]
    platform_index = (
        0
        if not platform_answer
        else _pick(platforms, platform_answer, last_match=True, with_vendor=False)
    )
    if platform_index is None:
        raise _no_match(f"no platform matches {platform_answer!r}", spec, platforms, source)
    devices = platforms[platform_index].get_devices()
    if not devices:
        reason = empty_platform_reason(platforms[platform_index])
        raise _no_match(f"platform {platform_index} has no usable device ({reason})", spec,
                        platforms, source)
    device_answer = answers[1] if len(answers) > 1 else ""
    if "," in device_answer:
        raise _no_match(
            "names several devices; oclsci uses one device per process "
            "(run one MPI rank per device instead)",
            spec,
            platforms,
            source,
        )
    device_index = (
        0 if not device_answer
        else _pick(devices, device_answer, last_match=False, with_vendor=False)
    )
    if device_index is None:
        raise _no_match(f"no device of platform {platform_index} matches {device_answer!r}", spec,
                        platforms, source)
    return platform_index, device_index


def parse_test_spec(spec: str, platforms: list[Any],
                    source: str = "PYOPENCL_TEST") -> tuple[int, int]:
    """Resolve a ``PYOPENCL_TEST``-style SPEC to its first ``(platform_index, device_index)``."""
    entry = spec.split(";")[0]
    parts = entry.split(":")
    if len(parts) > 2:
        raise _no_match("invalid PYOPENCL_TEST syntax", spec, platforms, source)

    def find(objects: list[Any], identifier: str) -> int | None:
        try:
            index = int(identifier)
        except ValueError:
            return _pick(objects, identifier, last_match=False, with_vendor=True)
        return index if -len(objects) <= index < len(objects) else None

    platform_index = find(platforms, parts[0])
    if platform_index is None:
        raise _no_match(f"no platform matches {parts[0]!r}", spec, platforms, source)
    platform_index %= len(platforms)
    devices = platforms[platform_index].get_devices()
    device_index = find(devices, parts[1].split(",")[0]) if len(parts) == 2 else 0
    if device_index is None or not devices:
        raise _no_match(f"no device of platform {platform_index} matches", spec, platforms, source)
    return platform_index, device_index % len(devices)


def select_device(
    spec: str | None = None,
    *,
    local_rank: int | None = None,
    local_ranks: int | None = None,
    platforms: list[Any] | None = None,
    environ: dict[str, str] | None = None,
) -> tuple[int, int, str]:
    """Choose a device; return ``(platform_index, device_index, how_it_was_chosen)``.

    ``local_rank`` is this rank's index among the ``local_ranks`` ranks of its node that share
    one list of GPUs (see :mod:`oclsci.runtime.binding`); it raises
    :class:`~oclsci.runtime.binding.GpuBindingError` when they outnumber the GPUs.
    """
    environ = os.environ if environ is None else environ
    platforms = get_platforms() if platforms is None else platforms
    if spec is not None and spec.strip() != "":
        return (*parse_ctx_spec(spec.strip(), platforms), f"--device {spec}")
    if environ.get("PYOPENCL_TEST"):
        return (*parse_test_spec(environ["PYOPENCL_TEST"], platforms, "PYOPENCL_TEST"),
                "PYOPENCL_TEST")
    if "PYOPENCL_CTX" in environ:
        return (*parse_ctx_spec(environ["PYOPENCL_CTX"], platforms, "PYOPENCL_CTX"),
                "PYOPENCL_CTX")
    # Simulators such as Oclgrind claim every device type: real GPUs first, simulators last.
    devices = [(p, d, device) for p, platform in enumerate(platforms)
               for d, device in enumerate(platform.get_devices())]
    gpus = [(p, d) for p, d, device in devices if is_real_gpu(device)]
    binding = None
    if local_rank is not None:
        # One rank per GPU of the node (Slurm's GRES variables say which GPUs are ours).
        from oclsci.runtime.binding import bind_gpu, node_name, opencl_index  # ranks only

        binding = bind_gpu(local_rank, len(gpus), ranks=local_ranks, environ=environ)
    if gpus:
        if binding is not None:
            return (*gpus[opencl_index(binding, len(gpus))],
                    f"node-local rank {local_rank} on {node_name(environ)}: {binding.describe()}")
        return (*gpus[0], "first GPU")
    if not devices:
        raise NoPlatformError(no_device_message(platforms))
    p, d, _ = min(devices, key=lambda entry: claims_every_type(entry[2]))
    if binding is not None:
        return p, d, (f"first device; no OpenCL GPU for node-local rank {local_rank} on "
                      f"{node_name(environ)}: {binding.describe()}")
    return p, d, "first device"


def describe_device(platform_index: int, device_index: int, platform: Any, device: Any) -> dict:
    """The facts that ``oclsci devices`` prints for one device."""
    return {
        "spec": f"{platform_index}:{device_index}",
        "platform": platform.name.strip(),
        "name": device.name.strip(),
        "type": device_type_name(device),
        "vendor": device.vendor.strip(),
        "driver_version": device.driver_version.strip(),
        "opencl_version": device.version.strip(),
        "compute_units": int(device.max_compute_units),
        "global_mem_bytes": int(device.global_mem_size),
        "local_mem_bytes": int(device.local_mem_size),
        "max_work_group_size": int(device.max_work_group_size),
        "fp64": supports_fp64(device),
    }


def no_device_message(platforms: list[Any]) -> str:
    """One line saying that the platforms offer no usable device, and why."""
    reasons = "; ".join(f"platform {p} ({platform.name.strip()}): "
                        f"{empty_platform_reason(platform)}"
                        for p, platform in enumerate(platforms))
    if "POCL_CACHE_DIR" not in reasons:  # nothing to repair: say how to get a platform
        reasons += "; " + NO_PLATFORM_HELP.split(": ", 1)[1]
    return f"no usable OpenCL device: {reasons}"


def empty_platforms() -> list[dict]:
    """The platforms that list no device, each with its SPEC index, name and the reason."""
    return [{"platform_index": p, "platform": platform.name.strip(),
             "reason": empty_platform_reason(platform)}
            for p, platform in enumerate(get_platforms()) if not platform.get_devices()]


def list_devices() -> list[dict]:
    """Describe every device of every platform."""
    return [
        describe_device(p, d, platform, device)
        for p, platform in enumerate(get_platforms())
        for d, device in enumerate(platform.get_devices())
    ]


def device_listing() -> tuple[list[dict], list[dict]]:
    """What ``oclsci devices`` shows: every device described (:func:`list_devices`) and the
    platforms that list none (:func:`empty_platforms`); :class:`NoPlatformError` saying why
    when no platform has a usable device."""
    devices = list_devices()
    empty = empty_platforms()
    if not devices:
        raise NoPlatformError(no_device_message(get_platforms()))
    return devices, empty
