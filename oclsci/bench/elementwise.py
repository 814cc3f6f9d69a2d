"""Elementwise benchmark case: axpy (``y = a*x + y``) on a large float32 vector.

Placeholder until :mod:`oclsci.elementwise` lands: the workload is reported as skipped.
"""

from __future__ import annotations

from .core import Case


def cases(compute, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The axpy case, or a note when :mod:`oclsci.elementwise` is not available."""
    try:
        from .. import elementwise  # noqa: F401
    except ImportError as error:
        return [], [f"oclsci.elementwise is not available ({error})"]
    return [], ["oclsci.elementwise found, but its benchmark is not written yet"]
