"""What limits the ``streaming`` kernel: one configuration timed as built, then with one of
its parts taken out at a time (a diagnosis: those variants compute wrong numbers).

Run with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout), the GPU first
in PYOPENCL_CTX:

    python3 benchmarks/gpu_streaming_limits.py                      # auto's float32 default
    python3 benchmarks/gpu_streaming_limits.py --dtype float64 --config max_steps=10

The variants edit the rendered source of the kernel (kernels/jacobi/streaming.cl.mako):

- ``no barrier``: the one barrier per advance removed (the edges race);
- ``no row loads``: the loads of the next rows of X and B skipped (``steps < 0``: never);
- ``no row stores``: the stores of the top level's rows skipped the same way;
- ``no local memory``: the neighbours' edges read from the work-item's own registers, so the
  local stores, loads and the barrier go;
- ``arithmetic only``: all of the above at once.

Each is timed with OpenCL events over whole launches after a warm-up, best of three; the
real kernel's result after the timing is checked against the solver's plain reference
kernel (bit for bit), so that the first line is the kernel oclsci runs.
"""

from __future__ import annotations

import argparse
import re

import numpy as np
import pyopencl as cl

from oclsci.jacobi.kernels import KernelConfig, device_default
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.specs.streaming import STREAMING
from oclsci.runtime import programs
from oclsci.runtime.device import create_context


def never(pattern: str) -> tuple[str, str]:
    """A substitution that guards each statement matching ``pattern`` with ``steps < 0``."""
    return pattern, r"if (steps < 0) { \g<0> }"


ROW_LOADS = never(r"next_[xb]_\d+_\d+ = [^;?]*(vload\d|\)\[0\])[^;]*;")
ROW_STORES = never(r"(vstore\d\(top_\d+, 0, out\)|out\[\d+\] = [^;]*);")
BARRIER = (r"barrier\(CLK_LOCAL_MEM_FENCE\);", "")
OWN_EDGES = (r"(const \S+ from_(west|east)_\d+_\d+ = )(east|west)\[EDGE\(buf, (\d+), (\d+), "
             r"lx[we]\)\];", r"\g<1>\g<3>[EDGE(buf, \g<4>, \g<5>, lx)];")
# Edges from the item's own publication, without the barrier: the compiler then forwards
# the stored values and drops the local memory.
NO_LOCAL = [OWN_EDGES, BARRIER]

VARIANTS = {
    "as built": [],
    "no barrier": [BARRIER],
    "no row loads": [ROW_LOADS],
    "no row stores": [ROW_STORES],
    "no local memory": NO_LOCAL,
    "arithmetic only": [ROW_LOADS, ROW_STORES] + NO_LOCAL,
}


def edited(source: str, edits: list[tuple[str, str]]) -> str:
    """``source`` with each (pattern, replacement) applied; a pattern that matches nothing is
    an error (the template changed)."""
    for pattern, replacement in edits:
        source, count = re.subn(pattern, replacement, source)
        if not count:
            raise SystemExit(f"no match for {pattern!r}: the template changed")
    return source


def seconds_per_step(compute, kernel, solver: JacobiSolver, launches: int) -> float:
    """Best of three runs of ``launches`` launches (buffers swapped), from events, after one
    run as a warm-up."""
    queue = compute.queue
    global_size, local_size = solver.config.launch_shape(solver.m, solver.n)
    args = [solver.rhs_buffer, np.int32(solver.m), np.int32(solver.n),
            np.int32(solver.row_stride), np.int32(solver.steps_per_launch)]
    times = []
    for _ in range(4):
        events = []
        for k in range(launches):
            source = solver.x_buffers[k & 1]
            kernel.set_args(solver.x_buffers[1 - (k & 1)], source, *args)
            events.append(cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size))
        events[-1].wait()
        times.append((events[-1].profile.end - events[0].profile.start) * 1e-9)
    return min(times[1:]) / (launches * solver.steps_per_launch)


def parse_setting(text: str) -> tuple[str, object]:
    """``KEY=VALUE``: one of the streaming kernel's parameters and its value."""
    key, _, value = text.partition("=")
    params = {p.name: p for p in STREAMING.params}
    if key not in params:
        raise argparse.ArgumentTypeError(f"unknown parameter {key!r}: one of "
                                         f"{', '.join(params)}")
    try:
        return key, params[key].parse(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=16384, help="N for an N x N grid")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--config", nargs="*", type=parse_setting, default=[],
                        metavar="KEY=VALUE", help="changes to auto's streaming default")
    parser.add_argument("--launches", type=int, default=40, help="per timing (even)")
    parser.add_argument("--binary", metavar="FILE",
                        help="save the built kernel's program binary (PTX on NVIDIA) here")
    args = parser.parse_args()
    if args.launches < 2 or args.launches % 2:
        parser.error("--launches must be even and at least 2")
    compute = create_context()
    dtype = np.dtype(args.dtype)
    shape = (args.size, args.size)
    base = device_default(compute, "streaming", dtype, shape)
    config = KernelConfig("streaming", dict(base.params, **dict(args.config)))
    rhs = np.random.default_rng(5).integers(-255, 256, size=shape).astype(dtype)
    solver = JacobiSolver(compute, rhs, dtype=dtype, config=config)
    reference = JacobiSolver(compute, rhs, dtype=dtype,
                             config=KernelConfig("coalesced", {"rows_per_item": 1,
                                                               "vector": 1}))
    source = programs.render(config.spec.template,
                             **dict(config.template_params(), dtype=dtype))
    print(f"device: {compute.device.name}; {shape[0]}^2 {dtype.name}; {config.describe()}")
    rows = []
    for name, edits in VARIANTS.items():
        program = cl.Program(compute.context, edited(source, edits)).build()
        kernel = program.jacobi_streaming
        per_step = seconds_per_step(compute, kernel, solver, args.launches)
        rows.append((name, per_step))
        if name == "as built":
            if args.binary:
                with open(args.binary, "wb") as out:
                    out.write(program.binaries[0])
            steps = 4 * args.launches * solver.steps_per_launch
            reference.advance(steps)
            same = np.array_equal(reference.read(), solver.read())
            print(f"as built: after {steps} steps equal to the coalesced kernel: {same}")
    first = rows[0][1]
    for name, per_step in rows:
        rate = shape[0] * shape[1] / per_step / 1e9
        print(f"{name:16s} {1e6 * per_step:9.2f} us per step {rate:8.1f} G cells/s "
              f"{first / per_step:5.2f}x")


if __name__ == "__main__":
    main()
