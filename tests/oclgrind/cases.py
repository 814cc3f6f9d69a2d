"""The case catalogue: every kernel launch that oclsci can make, on tiny grids.

:func:`all_cases`: each workload's corner cases (its record's ``corner_cases`` module in
:data:`oclsci.WORKLOADS`, see :mod:`oclsci.corners`), as far as Oclgrind runs them
(:data:`OCLGRIND_FILTERS`), the runtime's generic reduction (:func:`reduction_cases`) and the
MPI copies between sub-slabs (:func:`copy_rows_cases`);
:func:`canary_cases`: broken kernels that Oclgrind must report.
"""

from __future__ import annotations

from oclgrind.jacobi import oclgrind_kernel_cases
from oclsci import WORKLOADS
from oclsci.corners import case_id as make_id
from oclsci.corners import workload_corner_cases


def reduction_cases() -> list[dict]:
    """The generic reduction (``reduce``, oclsci.runtime.reduction.map_reduction): sums,
    minima and counts, one item, less than a group, a tail; group sizes; both walks."""
    cases = []
    for dtype in ("float32", "float64"):
        for what in ("sum", "min", "count"):
            for size, group_size in ((1, 1), (5, 8), (300, 64), (300, 1)):
                for chunked in (False, True):
                    cases.append({"id": make_id("reduce", what, dtype, f"n{size}",
                                                f"g{group_size}",
                                                "chunked" if chunked else "strided"),
                                  "kind": "reduce", "what": what, "dtype": dtype,
                                  "size": size, "group_size": group_size,
                                  "chunked": chunked, "cost": size + 1})
    return cases


# Copies (source buffer, first read, destination buffer, first written, elements) between
# buffers of 40 elements: one element; three ranges, one buffer read and written, a range
# longer than the others, an empty one.
COPY_TABLES = {"one": [(0, 3, 1, 39, 1)],
               "three": [(0, 0, 1, 10, 5), (1, 20, 0, 5, 17), (0, 30, 1, 0, 1), (1, 0, 0, 0, 0)]}


def copy_rows_cases() -> list[dict]:
    """The copies between an MPI rank's sub-slabs in one launch (``mpi/copy_rows``,
    oclsci.mpi.rowcopy): one range and several, both precisions."""
    return [{"id": make_id("copy_rows", name, dtype), "kind": "copy_rows", "dtype": dtype,
             "copies": table, "cost": 64}
            for name, table in COPY_TABLES.items() for dtype in ("float32", "float64")]


# Deliberately broken kernels: each must make Oclgrind report (what the report says), which
# proves that the checks are on and that reports reach the tests.
CANARIES = {
    "out-of-bounds-read": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ size_t i = get_global_id(0); out[i] = in[i + 1]; }",
        "Invalid read"),
    "local-race-missing-barrier": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ __local float t[16]; size_t l = get_local_id(0); t[l] = in[get_global_id(0)];"
        "  out[get_global_id(0)] = t[(l + 1) % 16]; }",
        "data race"),
    "uninitialised-local-read": (
        "__kernel void canary(__global float *out, __global const float *in)"
        "{ __local float t[16]; size_t l = get_local_id(0); if (l < 8) t[l] = in[l];"
        "  barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = t[l]; }",
        "Uninitialized value"),
}


def canary_cases() -> list[dict]:
    """Broken kernels that Oclgrind must report (see :data:`CANARIES`), and a Jacobi seed
    kernel that skips a cell, run by the solver like the real cases."""
    cases = [{"id": f"canary-{name}", "kind": "canary", "source": source, "expect": expect,
              "cost": 16} for name, (source, expect) in CANARIES.items()]
    cases.append({"id": "canary-jacobi-unwritten-cell", "kind": "canary_jacobi",
                  "workload": "jacobi", "kernel": "seed",
                  "params": {}, "local_size": None, "shape": (5, 3), "steps": 2,
                  "dtype": "float32", "expect": "Uninitialized value",
                  "cost": 16})
    return cases


def _oclgrind_jacobi_cases(cases: list[dict]) -> list[dict]:
    kernels = [case for case in cases if case["kind"] == "jacobi"]
    return oclgrind_kernel_cases(kernels) + [case for case in cases if case["kind"] != "jacobi"]


# What of a workload's corner cases Oclgrind runs (all, for workloads not named here).
OCLGRIND_FILTERS = {"jacobi": _oclgrind_jacobi_cases}


def all_cases() -> list[dict]:
    """Every case: each workload's corner cases, then the generic reduction and the copies
    between sub-slabs."""
    cases = []
    for workload in WORKLOADS:
        if workload.corner_cases:
            own = workload_corner_cases(workload.name)
            cases += OCLGRIND_FILTERS.get(workload.name, list)(own)
    return cases + reduction_cases() + copy_rows_cases()
