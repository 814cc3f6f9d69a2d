"""Running cases in the runner: each workload's corner cases through its corner-case module
(:func:`oclsci.corners.run_corner_case`); the generic reduction, the copies between MPI
sub-slabs and the canaries here (:data:`RUNNERS`, by the case's ``kind``)."""

from __future__ import annotations

import contextlib
from typing import Any

from oclsci.corners import case_rng, run_corner_case


def _run_canary(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    program = cl.Program(compute.context, case["source"]).build()
    data = np.arange(1, 17, dtype=np.float32)
    flags = cl.mem_flags
    source = cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=data)
    out = cl.Buffer(compute.context, flags.WRITE_ONLY, data.nbytes)
    program.canary(compute.queue, (16,), (16,), out, source)
    result = np.empty_like(data)
    cl.enqueue_copy(compute.queue, result, out)



def _run_reduce(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.runtime.reduction import map_reduction

    dtype = np.dtype(case["dtype"])
    values = case_rng(case["id"]).standard_normal(int(case["size"])).astype(dtype)
    what = case["what"]
    settings = {"sum": dict(map_expr="a[k]", result_dtype=dtype),
                "min": dict(map_expr="a[k]", result_dtype=dtype, combine="fmin",
                            neutral="INFINITY", finish="min"),
                "count": dict(map_expr="(result_t)(a[k] > 0)", result_dtype=np.uint32)}[what]
    reduction = map_reduction(compute, params=[("a", dtype, True)], dtype=dtype,
                              group_size=int(case["group_size"]), chunked=case["chunked"],
                              **settings)
    flags = cl.mem_flags
    buffer = cl.Buffer(compute.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=values)
    got = reduction(buffer, values.size)
    want = {"sum": np.sum(values, dtype=np.float64), "min": values.min(),
            "count": np.count_nonzero(values > 0)}[what]
    if not np.isclose(float(got), float(want), rtol=1e-5, atol=1e-5):
        raise AssertionError(f"{what} {got} != NumPy {want}")


def _run_copy_rows(compute: Any, case: dict) -> None:
    import numpy as np
    import pyopencl as cl

    from oclsci.mpi.rowcopy import RowCopier

    dtype = np.dtype(case["dtype"])
    hosts = [case_rng(case["id"]).standard_normal(40).astype(dtype) for _ in range(2)]
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buffers = [cl.Buffer(compute.context, flags, hostbuf=host) for host in hosts]
    want = [host.copy() for host in hosts]
    for source, first, dest, to, count in case["copies"]:
        want[dest][to:to + count] = hosts[source][first:first + count]
    RowCopier(compute, dtype).enqueue(compute.queue, [
        (buffers[source], first, buffers[dest], to, count)
        for source, first, dest, to, count in case["copies"]])
    for host, buffer, expected in zip(hosts, buffers, want, strict=True):
        cl.enqueue_copy(compute.queue, host, buffer)
        if host.tobytes() != expected.tobytes():
            raise AssertionError(f"copied {host} != NumPy {expected}")


@contextlib.contextmanager
def _broken_template(compute: Any, template: str, anchor: str, insert: str):
    """Render ``template`` with ``insert`` put before ``anchor`` (for canaries), in a program
    cache of its own, so that the real kernel is untouched for the other cases."""
    from oclsci.runtime import programs

    original_render, original_cache = programs.render, compute.program_cache

    def render(name: str, **params: Any) -> str:
        source = original_render(name, **params)
        if name == template:
            if anchor not in source:
                raise AssertionError(f"canary: {anchor!r} not found in {template}: update it")
            source = source.replace(anchor, insert + anchor, 1)
        return source

    programs.render, compute.program_cache = render, {}
    try:
        yield
    finally:
        programs.render, compute.program_cache = original_render, original_cache


def _run_canary_jacobi(compute: Any, case: dict) -> None:
    """A seed kernel that never writes cell (2, 2), run like a Jacobi corner case: Oclgrind
    must see the solver read that cell uninitialised."""
    with _broken_template(compute, "jacobi/seed", "if ((i >= 1)",
                          "if (i == 2 && j == 2) return;\n    "):
        run_corner_case(compute, dict(case, kind="jacobi"))


RUNNERS = {
    "canary": _run_canary,
    "canary_jacobi": _run_canary_jacobi,
    "reduce": _run_reduce,
    "copy_rows": _run_copy_rows,
}


def run_case(compute: Any, case: dict) -> None:
    """Run one case: by its kind here, else through its workload's corner-case module."""
    runner = RUNNERS.get(case["kind"])
    if runner is not None:
        runner(compute, case)
    else:
        run_corner_case(compute, case)
