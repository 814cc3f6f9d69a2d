"""Jacobi's corner cases (see :mod:`oclsci.corners`): every kernel of the registry over the
corner configurations of its spec and its defaults, the residual reduction (directly and
through the solver) and the tuner's comparison, on tiny grids.

Kernel cases (kind ``jacobi``) run the solver and must equal
:func:`oclsci.jacobi.reference.jacobi_numpy` bit for bit; the solver's second ping-pong buffer
(and the bands kernel's scratch) starts uninitialised (:mod:`oclsci.jacobi.corner_checks`), so
a cell a kernel never writes is caught: the Oclgrind simulator reports the read, a real device
gives a value that differs from NumPy's.
"""

from __future__ import annotations

import math
from typing import Any

from oclsci.corners import Unsupported, case_id
from oclsci.jacobi.kernels import KERNELS, KernelConfig, default_config

# Grids: one cell, smaller than any tile, odd sizes that divide nothing.
GRIDS = ((1, 1), (5, 3), (17, 40))
# The device limits under which the defaults are gathered (their fallbacks included).
LOCAL_MEMORIES = (48 * 1024, 32 * 1024, 8 * 1024)
MAX_WORK_GROUPS = (1024, 128)

_SHORT_NAMES = {"rows_per_item": "r", "vector": "v", "tile_w": "tw", "tile_h": "th",
                "halo_width": "h", "local_w": "lw", "local_h": "lh", "rhs_in_local": "rl",
                "rows": "R", "cols": "C", "max_steps": "k", "buffers": "b", "band_h": "bh",
                "band_w": "bw", "workers": "w"}


def config_label(params: dict, local_size: Any) -> str:
    """A short label of a configuration for case ids (``r2,v4,L8x2``; ``default``)."""
    label = ",".join(f"{_SHORT_NAMES.get(k, k)}{int(v) if isinstance(v, bool) else v}"
                     for k, v in sorted(params.items()))
    if local_size:
        label += "," * bool(label) + "L" + "x".join(map(str, local_size))
    return label or "default"


def kernel_configs() -> dict[str, list[tuple[dict, Any]]]:
    """The configurations checked for each kernel: ``(params, local_size)`` pairs.

    The corner cases of its spec (every parameter takes several values; work-groups larger
    than, equal to and smaller than tiles; more workers than tiles), then every configuration
    ``default_config`` gives without tuning: CPUs and GPUs, both precisions, small and large
    grids, devices with less local memory or smaller work-groups (its fallbacks).
    """
    configs = {}
    for name, spec in KERNELS.items():
        found = [(dict(params), local) for params, local in spec.corner_cases]
        for is_cpu in (False, True):
            for dtype in ("float32", "float64"):
                for shape in (None, (17, 40), (2048, 1024)):
                    for local_mem in LOCAL_MEMORIES:
                        for max_group in MAX_WORK_GROUPS:
                            default = default_config(name, is_cpu=is_cpu, dtype=dtype,
                                                     local_mem_bytes=local_mem, shape=shape,
                                                     max_work_group_size=max_group)
                            entry = (dict(default.params), default.local_size)
                            if entry not in found:
                                found.append(entry)
        configs[name] = found
    return configs


def case_work(name: str, params: dict, local_size: Any, shape: tuple[int, int],
              steps: int) -> int:
    """The cell updates of every work-item (idle ones included) over ``steps``, plus one per
    work-item: a kernel case's cost."""
    config = KernelConfig(name, dict(params), tuple(local_size) if local_size else None)
    global_size, _ = config.launch_shape(*shape)
    items = math.prod(global_size)
    per_item = config.spec.work_per_item(config.values(), shape, items)
    return items * per_item * max(1, steps) + items


def kernel_cases() -> list[dict]:
    """Each configuration of :func:`kernel_configs` over several launches, in order of
    priority: the odd-sized grid over a full launch and a remainder launch (k + 1 steps, k
    the steps per launch); one cell, one step; a grid smaller than most tiles over k + 1
    steps; the odd-sized grid over two full launches and a remainder (k > 1); one tile plus
    one cell (16-wide tiles); double precision."""
    cases = []
    for name, configs in kernel_configs().items():
        for params, local_size in configs:
            k = int(KernelConfig(name, dict(params)).steps_per_launch)
            plan = [((17, 40), k + 1, "float32"), ((1, 1), 1, "float32"),
                    ((5, 3), k + 1, "float32")]
            if k > 1:
                plan.append(((17, 40), 2 * k + 1, "float32"))
            if 16 in (params.get("tile_w"), params.get("local_w")):
                plan.append(((17, 17), k + 1, "float32"))
            plan.append(((5, 3), k + 1, "float64"))
            label = config_label(params, local_size)
            cases += [{"id": case_id("jacobi", name, label, f"{shape[0]}x{shape[1]}",
                                     f"s{steps}", dtype),
                       "kind": "jacobi", "kernel": name, "params": params,
                       "local_size": local_size, "shape": shape, "steps": steps,
                       "dtype": dtype, "priority": priority,
                       "cost": case_work(name, params, local_size, shape, steps)}
                      for priority, (shape, steps, dtype) in enumerate(plan)]
    return cases


def residual_cases() -> list[dict]:
    """The residual reduction: group sizes, accumulator types, row ranges, idle work-items,
    both walks over the cells (strided for GPUs, by rows for CPUs); and through the solver,
    over the owned rows of MPI ranks."""
    cases = []
    for dtype, acc_dtype in (("float32", "float32"), ("float32", "float64"),
                             ("float64", "float64")):
        for group_size in (1, 8, 64):
            for shape, first_row, rows, groups in (((1, 1), 1, 1, 1), ((5, 3), 1, 5, 3),
                                                   ((17, 40), 3, 7, 2), ((17, 40), 1, 17, 5)):
                for by_rows in (False, True):
                    cases.append({
                        "id": case_id("residual", dtype, f"acc{acc_dtype}", f"g{group_size}",
                                      f"{shape[0]}x{shape[1]}", f"rows{first_row}+{rows}",
                                      f"groups{groups}", "by_rows" if by_rows else "strided"),
                        "kind": "residual", "dtype": dtype, "acc_dtype": acc_dtype,
                        "group_size": group_size, "shape": shape, "first_row": first_row,
                        "rows": rows, "groups": groups, "by_rows": by_rows,
                        "cost": shape[0] * shape[1],
                    })
    for shape in GRIDS:
        cases.append({"id": case_id("residual", "solver", f"{shape[0]}x{shape[1]}"),
                      "kind": "residual_solver", "shape": shape, "dtype": "float32",
                      "cost": shape[0] * shape[1]})
    return cases


def compare_cases() -> list[dict]:
    """The tuner's exactness check (``jacobi/compare``): counts of differing cells per group."""
    return [{"id": case_id("compare", dtype, f"{m}x{n}", f"g{group_size}", f"groups{groups}"),
             "kind": "compare", "dtype": dtype, "shape": (m, n), "group_size": group_size,
             "groups": groups, "cost": m * n}
            for dtype in ("float32", "float64")
            for (m, n), group_size, groups in (((1, 1), 1, 1), ((5, 3), 8, 1), ((17, 40), 64, 1),
                                               ((17, 40), 8, 16))]


# ``temporal`` built to write some rows only (an MPI strip's launches, JacobiSolver's
# ``rows_read``): its parameters, over one launch on 40 x 23 writing rows 17..25.
WINDOWED = ({"rows": 2, "cols": 2, "local_w": 8, "local_h": 4, "max_steps": 3, "buffers": 2},
            {"rows": 1, "cols": 1, "local_w": 8, "local_h": 8, "max_steps": 2, "buffers": 1})
WINDOW_GRID, WINDOW_ROWS = (40, 23), (17, 26)


def window_cases() -> list[dict]:
    """One launch of each :data:`WINDOWED` configuration, float32 and float64."""
    cases = []
    for params in WINDOWED:
        for dtype in ("float32", "float64"):
            steps = int(KernelConfig("temporal", dict(params)).steps_per_launch)
            cases.append({"id": case_id("jacobi", "temporal", config_label(params, None),
                                        "window", dtype),
                          "kind": "jacobi_window", "params": params, "shape": WINDOW_GRID,
                          "rows": WINDOW_ROWS, "steps": steps, "dtype": dtype,
                          "cost": case_work("temporal", params, None, WINDOW_GRID, steps)})
    return cases


def corner_cases() -> list[dict]:
    """Every Jacobi corner case: the kernels, the residual, the comparison, the windowed
    launches."""
    return kernel_cases() + residual_cases() + compare_cases() + window_cases()


def prepare_corner_cases(compute: Any, cases: list[dict]) -> None:
    """Make the uninitialised buffers of the kernel cases before any case runs (see
    :func:`oclsci.jacobi.corner_checks.prepare_fresh_buffers`)."""
    from oclsci.jacobi.corner_checks import prepare_fresh_buffers

    prepare_fresh_buffers(compute, [case for case in cases if "kernel" in case])


def run_corner_case(compute: Any, case: dict) -> None:
    """Run ``case`` on ``compute`` and compare with NumPy (``Unsupported`` when the kernel's
    configuration does not fit the device)."""
    from oclsci.jacobi import corner_checks

    if case["kind"] == "jacobi":
        config = KernelConfig(case["kernel"], dict(case["params"]),
                              tuple(case["local_size"]) if case["local_size"] else None)
        if not config.fits(compute, case["dtype"]):
            raise Unsupported(f"{config.describe()} does not fit device {compute.name}")
        corner_checks.solve_and_compare(compute, case, config)
    elif case["kind"] == "jacobi_window":
        corner_checks.run_window(compute, case)
    elif case["kind"] in ("residual", "residual_solver"):
        corner_checks.run_residual(compute, case)
    else:
        corner_checks.run_compare(compute, case)
