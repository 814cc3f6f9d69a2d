"""``oclsci tune``'s search, for the CLI and Python callers: the device opened and the search
run inside a raising :class:`~oclsci.runtime.signals.StopFlag`, as ``oclsci bench`` does. A
stop signal ends the search at its next timing with
:class:`~oclsci.runtime.signals.SignalExit`, before anything is saved; a SIGINT or SIGHUP
inherited as ignored stays blocked while kernels build (a compiler's own handler would
otherwise delete its temporary files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from oclsci.jacobi import tuner as jacobi_tuner
from oclsci.runtime.device import create_context
from oclsci.runtime.signals import StopFlag
from oclsci.stencil import tuner as stencil_tuner


def tune_kernels(device: Any, shape: tuple[int, ...], dtype: Any, *, budget: float,
                 stencil: Any = None, kernels: tuple[str, ...] | None = None,
                 log: Callable[[str], None] | None = None, quiet: bool = False) -> tuple:
    """Search Jacobi's kernels (or, given a :class:`~oclsci.stencil.Stencil`, ``stencil``'s)
    for a grid of ``shape`` in ``dtype`` for about ``budget`` seconds on ``device`` (a SPEC,
    None: the default choice); ``kernels`` limits the search to those named; ``log`` gets
    progress lines. Returns (the search's report, the device's name, the dtype it ran)."""
    with StopFlag(raising=True):
        compute = create_context(device, quiet=quiet)
        dtype = compute.check_dtype(np.dtype(dtype))
        if log:
            what = f"stencil ({stencil.expression.describe()})" if stencil else "Jacobi"
            log(f"tuning {what} {'x'.join(map(str, shape))} {dtype.name} for about "
                f"{budget:g} s")
        if stencil is not None:
            report = stencil_tuner.tune(compute, stencil, shape, dtype, budget=budget,
                                        kernels=kernels, log=log)
        else:
            report = jacobi_tuner.tune(compute, shape, dtype, budget=budget, kernels=kernels,
                                       log=log)
        return report, compute.name, dtype
