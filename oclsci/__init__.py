"""oclsci: a vendor-neutral OpenCL toolkit for scientists on clusters.

One Python code for NVIDIA, AMD and Intel GPUs and for CPUs through PoCL. The device comes from
``device=`` / ``--device``, then ``PYOPENCL_CTX``, then the first GPU (see
:mod:`oclsci.runtime.device`). docs/architecture.md draws how the packages depend on each other.

The workloads oclsci runs have one record each here (:data:`WORKLOADS`): the commands it adds,
its ``oclsci selftest`` checks, its ``oclsci bench`` cases, its runner over MPI ranks and its
corner cases (:mod:`oclsci.corners`: every launch it can make, small, checked against NumPy).
Records name modules as strings, so that reading them loads nothing; the command line,
``oclsci bench``, ``oclsci selftest`` and the Oclgrind suite iterate over them. Adding a
workload: its package (its NumPy reference, kernels, command, ``selftest.py``, ``corners.py``,
bench cases) and one record here (docs/architecture.md, "Adding a workload").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

__version__ = "0.1.0"

from oclsci.errors import (  # noqa: E402
    DeviceError,
    InputError,
    Interrupted,
    KernelBuildError,
    NoPlatformError,
    OclsciError,
)


@dataclass(frozen=True)
class Workload:
    """What one workload brings, by module name."""

    name: str
    # command name -> the module defining ``<name>_command`` (a click command)
    commands: dict[str, str] = field(default_factory=dict)
    # the module defining ``selftest_checks(compute, size)``
    selftest: str | None = None
    # the module defining its bench cases (see oclsci.bench.runner)
    bench: str | None = None
    # whether ``oclsci bench all`` runs it (some references take minutes on a CPU)
    bench_in_all: bool = True
    # command name -> the module of its runner over MPI ranks (the commands that run as
    # ranks agree on their command line at start)
    distributed: dict[str, str] = field(default_factory=dict)
    # the module defining ``corner_cases()`` and ``run_corner_case(compute, case)``: every
    # launch the workload can make, on tiny problems, checked against NumPy (oclsci.corners)
    corner_cases: str | None = None

    def selftest_checks(self, compute: Any, size: dict) -> list:
        """Its selftest's ``(name, check)`` pairs for ``compute`` (none without checks)."""
        if self.selftest is None:
            return []
        return list(importlib.import_module(self.selftest).selftest_checks(compute, size))


WORKLOADS = (
    Workload("jacobi", {"jacobi": "oclsci.cli.jacobi", "laplacian": "oclsci.cli.jacobi"},
             selftest="oclsci.jacobi.selftest", bench="oclsci.bench.jacobi",
             distributed={"jacobi": "oclsci.jacobi.distributed"},
             corner_cases="oclsci.jacobi.corners"),
    Workload("mandelbrot", {"mandelbrot": "oclsci.cli.mandelbrot"},
             selftest="oclsci.mandelbrot.selftest", bench="oclsci.bench.mandelbrot",
             distributed={"mandelbrot": "oclsci.mandelbrot.distributed"},
             corner_cases="oclsci.mandelbrot.corners"),
    Workload("elementwise", {"elementwise": "oclsci.cli.elementwise"},
             selftest="oclsci.elementwise.selftest", bench="oclsci.bench.elementwise",
             corner_cases="oclsci.elementwise.corners"),
    # Named only in bench: Jacobi to the Poisson case's tolerance, and SciPy's Lomb-Scargle
    # at the seed's size, take minutes on a CPU core.
    Workload("poisson", {"poisson": "oclsci.cli.poisson"}, selftest="oclsci.poisson.selftest",
             bench="oclsci.bench.poisson", bench_in_all=False,
             distributed={"poisson": "oclsci.poisson.distributed"},
             corner_cases="oclsci.poisson.corners"),
    Workload("lombscargle", {"lombscargle": "oclsci.cli.lombscargle"},
             selftest="oclsci.lombscargle.selftest", bench="oclsci.bench.lombscargle",
             bench_in_all=False, distributed={"lombscargle": "oclsci.lombscargle.distributed"},
             corner_cases="oclsci.lombscargle.corners"),
    # Named only in bench: NumPy's 256^3 heat steps take seconds each, and PoCL builds
    # every stencil kernel, with and without --quick.
    Workload("stencil", {"stencil": "oclsci.cli.stencil"}, selftest="oclsci.stencil.selftest",
             bench="oclsci.bench.stencil", bench_in_all=False,
             distributed={"stencil": "oclsci.stencil.distributed"},
             corner_cases="oclsci.stencil.corners"),
)


def workload_commands() -> dict[str, str]:
    """Every workload's commands: name -> module."""
    return {name: module for workload in WORKLOADS for name, module in workload.commands.items()}


def distributed_commands() -> frozenset[str]:
    """The commands that run as MPI ranks when a launcher starts several."""
    return frozenset(name for workload in WORKLOADS for name in workload.distributed)


# Loaded on first use (PEP 562), so that the command line starts NumPy's and the drivers'
# threads itself, with the stop signals blocked in them (see oclsci.runtime.signals).
_LAZY = {
    "ComputeContext": "runtime.device", "create_context": "runtime.device",
    "list_devices": "runtime.selection",
    "ElementwiseKernel": "elementwise.kernels",
    # Not re-exported: the function oclsci.mandelbrot.mandelbrot, whose name would hide the
    # package.
    "MandelbrotRenderer": "mandelbrot.renderer", "MandelbrotResult": "mandelbrot.renderer",
    "mandelbrot_numpy": "mandelbrot.reference",
    "Stencil": "stencil.api",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oclsci' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "__version__",
    "ComputeContext",
    "create_context",
    "list_devices",
    "DeviceError",
    "InputError",
    "Interrupted",
    "KernelBuildError",
    "NoPlatformError",
    "OclsciError",
    "ElementwiseKernel",
    "MandelbrotRenderer",
    "MandelbrotResult",
    "mandelbrot_numpy",
    "Stencil",
]
