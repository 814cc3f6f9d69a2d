"""Running Jacobi cases in the runner: the solver's kernels against NumPy, bit for bit.

An iterate buffer never written by the host gives Oclgrind a chance to see a kernel read a
cell it did not write (:func:`leave_output_uninitialised`).
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any


def case_rng(case_id: str):
    """A random generator seeded by the case's id (the same data at every run)."""
    import numpy as np

    seed = int.from_bytes(hashlib.sha1(case_id.encode()).digest()[:8], "little")
    return np.random.default_rng(seed)


RING_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void ring(__global REAL *x, int m, int n, int stride)
{
    const int k = get_global_id(0), row = k / stride, col = k % stride;
    if (row == 0 || row == m + 1 || col == 0 || col > n)
        x[k] = 0;
}
"""

# Buffers never written by the host, made before any buffer is released (see
# preallocate): case id -> {"x": buffer, "scratch": buffer or None}.
FRESH: dict[str, dict] = {}
RING_PROGRAMS: dict[str, Any] = {}


def preallocate(compute: Any, cases: list[dict]) -> None:
    """Make the fresh buffers of every Jacobi case up front.

    Oclgrind 21.10 loses track of what kernels write into memory that the host wrote, even
    memory of a released buffer that a new buffer reuses: a fresh buffer made mid-run may
    then read as uninitialised although a kernel wrote it. Made before anything is released,
    and kept alive, these are clean.
    """
    import numpy as np
    import pyopencl as cl

    from oclsci.jacobi.kernels import KernelConfig
    from oclsci.runtime.programs import cl_type

    for case in cases:
        if case["kind"] != "jacobi":
            continue
        dtype = np.dtype(case["dtype"])
        m, n = case["shape"]
        stride = -(-(n + 2) // 16) * 16
        buffers = {"x": cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                  (m + 2) * stride * dtype.itemsize), "scratch": None}
        layout = KernelConfig(case["kernel"], dict(case["params"])).scratch_layout(m, n)
        if layout is not None:
            elements = layout["scratch_elements"]
            buffers["scratch"] = cl.Buffer(compute.context, cl.mem_flags.READ_WRITE,
                                           max(1, elements) * dtype.itemsize)
        FRESH[case["id"]] = buffers
        if dtype.name not in RING_PROGRAMS:
            RING_PROGRAMS[dtype.name] = cl.Program(
                compute.context, RING_SOURCE.replace("REAL", cl_type(dtype))).build()


KEEP_ALIVE: list = []


def leave_output_uninitialised(compute: Any, solver: Any, case: dict) -> None:
    """Give the solver a second iterate buffer whose interior was never written.

    JacobiSolver starts both ping-pong buffers as copies of x0, so a kernel that forgets to
    write a cell, or reads its output buffer, would go unnoticed; with an uninitialised
    interior Oclgrind reports it (the padding ring and the row padding are zeroed by a
    kernel, as the kernels rely on them). The bands kernel's scratch buffer (zeros from the
    host) is also replaced by an uninitialised one: the kernel must write each scratch cell
    before reading it. Needs ``JacobiSolver.reconfigure``; older solvers are left as they are.
    """
    import numpy as np

    buffers = FRESH.get(case["id"])
    if not hasattr(solver, "reconfigure") or buffers is None:
        return
    m, n, stride = solver.m, solver.n, solver.row_stride
    fresh = buffers["x"]
    if fresh.size != (m + 2) * stride * solver.dtype.itemsize:
        raise AssertionError("the solver's padded layout changed: update preallocate")
    RING_PROGRAMS[solver.dtype.name].ring(compute.queue, ((m + 2) * stride,), None, fresh,
                                          np.int32(m), np.int32(n), np.int32(stride))
    compute.queue.finish()
    KEEP_ALIVE.append((solver, solver.x_buffers[1], getattr(solver, "_scratch", None)))
    solver.x_buffers[1] = fresh
    solver.reconfigure(solver.config)
    scratch = getattr(solver, "_scratch", None)
    launches = getattr(solver, "_launches", []) + getattr(solver, "_remainder_launches", [])
    if scratch is not None and launches and buffers["scratch"] is not None:
        if buffers["scratch"].size < scratch.size:
            raise AssertionError("the bands scratch grew: update preallocate")
        position = solver.config.spec.argument_index("scratch")
        for launch in launches:
            launch.kernel.set_arg(position, buffers["scratch"])
        KEEP_ALIVE.append(scratch)
        solver._scratch = buffers["scratch"]


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


def run_jacobi(compute: Any, case: dict) -> None:
    """Run a Jacobi case (or the canary that skips a cell) and compare with NumPy."""
    if case.get("break_cell"):
        # A seed kernel that never writes cell (2, 2): Oclgrind must see it read uninitialised.
        with _broken_template(compute, "jacobi/seed", "if ((i >= 1)",
                              "if (i == 2 && j == 2) return;\n    "):
            _solve_and_compare(compute, case)
        return
    _solve_and_compare(compute, case)


def _solve_and_compare(compute: Any, case: dict) -> None:
    import numpy as np

    from oclsci.jacobi.kernels import KernelConfig
    from oclsci.jacobi.reference import jacobi_numpy
    from oclsci.jacobi.runner import run
    from oclsci.jacobi.solver import JacobiSolver

    dtype = np.dtype(case["dtype"])
    rhs = case_rng(case["id"]).standard_normal(tuple(case["shape"])).astype(dtype)
    local_size = tuple(case["local_size"]) if case["local_size"] else None
    config = KernelConfig(case["kernel"], dict(case["params"]), local_size)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
    leave_output_uninitialised(compute, solver, case)
    run(solver, int(case["steps"]))
    got = solver.read()
    want = jacobi_numpy(rhs, int(case["steps"]), dtype=dtype)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        raise AssertionError(f"{len(bad)} cell(s) differ from NumPy, first at {bad[0].tolist()}: "
                             f"{got[tuple(bad[0])]!r} != {want[tuple(bad[0])]!r}")
