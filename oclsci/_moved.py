"""Old module names of oclsci 0.1 (before the domain packages), kept for one release.

``import oclsci.jacobi_reference`` still works and gives :mod:`oclsci.jacobi.reference` itself
(the same module object, so attributes set through either name are shared), with a
DeprecationWarning that names the new place. The aliases go in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "oclsci.binding": "oclsci.runtime.binding",
    "oclsci.checkpoint": "oclsci.jacobi.checkpoint",
    "oclsci.device": "oclsci.runtime.device",
    "oclsci.device_health": "oclsci.runtime.health",
    "oclsci.elementwise_ops": "oclsci.elementwise.ops",
    "oclsci.icd": "oclsci.runtime.icd",
    "oclsci.image_values": "oclsci.pnm",
    "oclsci.jacobi_autotune": "oclsci.jacobi.tuning.search",
    "oclsci.jacobi_checks": "oclsci.jacobi.checks",
    "oclsci.jacobi_reference": "oclsci.jacobi.reference",
    "oclsci.jacobi_tuning": "oclsci.jacobi.tuning",
    "oclsci.launcher": "oclsci.runtime.launch",
    "oclsci.mandelbrot_reference": "oclsci.mandelbrot.reference",
    "oclsci.pacing": "oclsci.runtime.pacing",
    "oclsci.picture": "oclsci.jacobi.picture",
    "oclsci.programs": "oclsci.runtime.programs",
    "oclsci.render": "oclsci.mandelbrot.shading",
    "oclsci.signals": "oclsci.runtime.signals",
}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each old name of :data:`MOVED` and loads the module at its new name."""

    def find_spec(self, fullname, path, target=None):
        """A spec for an old name, None for every other module."""
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        """The module at the new name, after a DeprecationWarning."""
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} is now {new}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module):
        """Nothing to run: the module was loaded under its new name."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
