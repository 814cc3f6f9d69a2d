"""``oclsci selftest``'s elementwise checks: every ready-made operation in signed, unsigned
and floating types, exactly as NumPy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oclsci.elementwise.measure import random_array
from oclsci.elementwise.ops import OPS

ELEMENTWISE_TYPES = ("int8", "uint16", "int32", "int64", "float32", "float64")


def selftest_checks(compute: Any, size: dict) -> Iterator[tuple[str, Callable]]:
    """``(name, check)`` pairs for ``compute`` at ``size`` (oclsci.selftest.SIZES); each check
    returns (passed, largest difference, detail)."""
    rng = np.random.default_rng(16)
    count = size["elementwise"]
    for type_name in ELEMENTWISE_TYPES:
        dtype = np.dtype(type_name)
        if dtype == np.float64 and not compute.supports_fp64:
            continue
        for op in OPS.values():
            def check(op=op, dtype=dtype):
                arrays = [random_array(rng, count, dtype) for _ in op.arrays]
                scalar = dtype.type(3)
                with np.errstate(over="ignore"):
                    expected = op.reference(*([scalar] if op.scalar_position == 0 else []),
                                            *arrays, *([scalar] if op.scalar_position else []))
                args = list(arrays)
                if op.scalar_position is not None:
                    args.insert(op.scalar_position, scalar)
                written = {name: array for name, array in zip(op.arrays, arrays, strict=True)}
                out = op.kernel(*args, device=compute)
                got = written.get(op.written, out)
                diff = float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64))))
                return bool(np.array_equal(got, expected)), diff, ""
            yield f"elementwise {op.name} {type_name} n={count}", check
