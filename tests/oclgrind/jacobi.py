"""What of Jacobi's corner cases (:mod:`oclsci.jacobi.corners`) Oclgrind runs: the
configurations that fit its device, and per configuration the cases its simulation budget
allows."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from oclsci.jacobi.corners import case_work, config_label, kernel_configs

# Oclgrind's device limits (21.10): the configurations run fit them.
OCLGRIND_LOCAL_MEM = 64 * 1024  # see CHECK_ENVIRONMENT
OCLGRIND_MAX_WORK_GROUP = 1024

# Simulated work allowed per configuration (see simulated_work): about 3 s of CPU.
WORK_PER_CONFIG = 150_000


def jacobi_corner_cases() -> dict[str, list[tuple[dict, Any]]]:
    """Each Jacobi kernel's corner configurations, from its spec (oclsci/jacobi/specs/):
    ``(params, local_size)`` pairs."""
    from oclsci.jacobi.kernels import KERNELS

    return {name: [(dict(params), local) for params, local in spec.corner_cases]
            for name, spec in KERNELS.items()}


def fits_oclgrind(name: str, params: dict, local_size: Any, dtype: str = "float32") -> bool:
    """Whether the configuration is valid within Oclgrind's device limits."""
    from oclsci.jacobi.kernels import KernelConfig

    config = KernelConfig(name, dict(params), tuple(local_size) if local_size else None)
    try:
        config.validate(max_work_group_size=OCLGRIND_MAX_WORK_GROUP,
                        local_mem_bytes=OCLGRIND_LOCAL_MEM, dtype=dtype)
    except Exception:  # noqa: BLE001 - InputError: does not fit
        return False
    return True


def jacobi_spaces() -> dict[str, list[tuple[dict, Any]]]:
    """The configurations Oclgrind runs for each kernel: the corner configurations and the
    defaults (:func:`oclsci.jacobi.corners.kernel_configs`) that fit it."""
    return {name: [entry for entry in configs if fits_oclgrind(name, *entry)]
            for name, configs in kernel_configs().items()}


def simulated_work(name: str, params: dict, local_size: Any, shape: tuple[int, int],
                   steps: int) -> int:
    """A rough measure of what Oclgrind must simulate: cell updates of every work-item
    (idle ones included) times steps; about 20 us of CPU each with all checks on."""
    return case_work(name, params, local_size, shape, steps)


def oclgrind_kernel_cases(cases: list[dict]) -> list[dict]:
    """Of Jacobi's kernel cases, those that fit Oclgrind; per configuration, in order of
    priority, the first two and then those that the budget (:data:`WORK_PER_CONFIG`) allows."""
    fitting = [case for case in cases
               if fits_oclgrind(case["kernel"], case["params"], case["local_size"],
                                case["dtype"])]
    fitting = _distinct(fitting)
    kept = []
    for _, group in groupby(fitting, key=lambda case: (
            case["kernel"], config_label(case["params"], case["local_size"]))):
        spent = 0
        for case in group:
            if case["priority"] >= 2 and spent + case["cost"] > WORK_PER_CONFIG:
                continue
            spent += case["cost"]
            kept.append(case)
    return kept


def _distinct(cases: list[dict]) -> list[dict]:
    """The cases less those that run as an earlier one does: a segment height of at least
    the grid's rows is one segment of the whole grid, whatever the height (``streaming``'s
    defaults differ by it alone, 171 or 256 rows, on grids of 17 rows at most)."""
    tallest = max((case["shape"][0] for case in cases), default=0)
    seen, kept = set(), []
    for case in cases:
        params = dict(case["params"])
        if "seg_h" in params:
            params["seg_h"] = min(params["seg_h"], tallest)
        key = (case["kernel"], config_label(params, case["local_size"]), tuple(case["shape"]),
               case["steps"], case["dtype"])
        if key not in seen:
            seen.add(key)
            kept.append(case)
    return kept
