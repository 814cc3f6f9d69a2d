"""Issue 19, item 3: a persistent Jacobi kernel with a grid-wide barrier, against launches.

The seed case (400x266, 150000 steps, float32) is launch-bound: `temporal` does 16 steps
per launch, so 9375 launches. This experiment runs all steps in one launch of
``benchmarks/resident.cl.mako``: `temporal`'s register blocking in phases of ``max_steps``
steps, with a grid-wide barrier between phases among the work-groups that occupancy
discovery found resident together (the template's header says how). It times it against
oclsci's `temporal` and `auto` in the same run, on the same context (the solver's
``advance`` until the queue is drained, like the one launch here; setup not counted), and
checks every result bit for bit against `temporal` (itself exact against NumPy) and a
1000-step run against NumPy. It also prints the fence instructions that NVIDIA's compiler
emitted (PTX), since they are what makes the barrier correct.

    PYTHONPATH=. python3 benchmarks/gpu_resident.py [--device SPEC] [--sizes 266x400 ...]
        [--fences device work_group] [--configs 4,2,32,16,16 ...]

``--configs`` are rows,cols,local_w,local_h,max_steps as for `temporal`. Not a registry
kernel: docs/performance.md (item 3) says why.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
from mako.template import Template

from oclsci import create_context
from oclsci.jacobi import JacobiSolver, jacobi
from oclsci.jacobi.picture import builtin_picture
from oclsci.jacobi.reference import jacobi_numpy, laplacian

TEMPLATE = Path(__file__).with_name("resident.cl.mako")
CONFIGS = ((4, 2, 32, 16, 16), (2, 2, 32, 32, 16), (4, 2, 32, 16, 12), (2, 2, 32, 32, 12),
           (4, 4, 16, 16, 16), (8, 2, 32, 8, 16), (4, 2, 24, 16, 12), (2, 2, 24, 24, 8))
# Polls the first group makes, at most, while it waits for the other launched groups to
# register (it stops as soon as all have).
SPIN = 4096


class ResidentJacobi:
    """One grid, two ping-pong buffers, the persistent kernel; steps in one launch."""

    def __init__(self, queue, rhs: np.ndarray, config: tuple, fences: str, spin: int = SPIN):
        rows, cols, local_w, local_h, max_steps = config
        self.queue, self.max_steps = queue, max_steps
        self.m, self.n = rhs.shape
        tile_w = local_w * cols - 2 * max_steps
        tile_h = local_h * rows - 2 * max_steps
        source = Template(filename=str(TEMPLATE)).render(
            rows=rows, cols=cols, local_w=local_w, local_h=local_h, max_steps=max_steps,
            fences=fences, volatile_loads=fences != "device", spin=spin)
        options = ["-cl-std=CL3.0"] if fences == "device" else []
        self.program = cl.Program(queue.context, source).build(options=options)
        self.kernel = self.program.jacobi_resident
        self.tiles_x = -(-self.n // tile_w)
        self.tiles = self.tiles_x * -(-self.m // tile_h)
        # One group per compute unit (at most): the discovery takes those that are resident.
        self.groups = min(self.tiles, queue.device.max_compute_units)
        if self.groups > 0xFFF:
            raise ValueError(f"{self.groups} groups: the poll counts at most 4095")
        self.local = (local_w, local_h)
        self.padded = np.zeros((self.m + 2, self.n + 2), np.float32)
        self.padded[1:-1, 1:-1] = rhs
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        self.rhs = cl.Buffer(queue.context, flags, hostbuf=self.padded)
        self.x = [cl.Buffer(queue.context, flags, hostbuf=self.padded) for _ in range(2)]
        self.sync = cl.Buffer(queue.context, flags, hostbuf=np.zeros(2, np.int32))
        self.epoch, self.current = 0, 0

    def restart(self) -> None:
        """Back to X = B (the seed's start), the queue drained."""
        for buffer in self.x:
            cl.enqueue_copy(self.queue, buffer, self.padded)
        self.current = 0
        self.queue.finish()

    def fence_instructions(self) -> list[str]:
        """The fences in the built program where it is PTX text (NVIDIA); else empty."""
        text = self.program.binaries[0].decode(errors="replace")
        return sorted({line.strip().rstrip(";") for line in text.splitlines()
                       if line.strip().startswith(("membar", "fence"))})

    def advance(self, steps: int):
        """Enqueue ``steps`` steps as one launch; return its event."""
        epoch = 3 - self.epoch if self.epoch else 1
        self.kernel.set_args(self.x[self.current], self.x[1 - self.current], self.rhs,
                             np.int32(self.m), np.int32(self.n), np.int32(self.n + 2),
                             np.int32(steps), np.int32(self.tiles_x), np.int32(self.tiles),
                             self.sync, np.int32(epoch))
        event = cl.enqueue_nd_range_kernel(
            self.queue, self.kernel, (self.groups * self.local[0], self.local[1]), self.local)
        self.epoch = epoch  # only once enqueued: the next launch must differ from this one
        if -(-steps // self.max_steps) % 2:
            self.current = 1 - self.current
        return event

    def read(self) -> np.ndarray:
        """The interior of the current iterate."""
        out = np.empty((self.m + 2, self.n + 2), np.float32)
        cl.enqueue_copy(self.queue, out, self.x[self.current])
        return out[1:-1, 1:-1]

    def participants(self) -> int:
        """How many groups registered in the last launch."""
        words = np.empty(2, np.int32)
        cl.enqueue_copy(self.queue, words, self.sync)
        return int(words[0] & 0xFFF)


def c_features(device) -> list[str]:
    """The OpenCL C features (OpenCL 3.0) the device reports; the device-scope atomics the
    barrier needs would be ``__opencl_c_atomic_scope_device``."""
    try:
        return [feature.name for feature in device.get_info(cl.device_info.OPENCL_C_FEATURES)]
    except (cl.Error, AttributeError):
        return ["(not reported: an OpenCL 1.x or 2.x device)"]


def problem(size: str) -> np.ndarray:
    """The seed's right-hand side at 266x400; elsewhere the Laplacian of integer noise."""
    m, n = (int(v) for v in size.split("x"))
    if (m, n) == (266, 400):
        return laplacian(builtin_picture()).astype(np.float32)
    picture = np.random.default_rng(19).integers(0, 256, (m, n))
    return laplacian(picture).astype(np.float32)


def main() -> None:
    """Parse the options, run every size, configuration and fence kind, print a line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--sizes", nargs="+", default=["266x400"])
    parser.add_argument("--steps", type=int, default=150000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fences", nargs="+", default=["device", "work_group"],
                        choices=["device", "work_group"])
    parser.add_argument("--configs", nargs="+", default=None)
    args = parser.parse_args()
    configs = ([tuple(int(v) for v in text.split(",")) for text in args.configs]
               if args.configs else CONFIGS)
    compute = create_context(args.device)
    queue = cl.CommandQueue(compute.context)
    print(f"device: {compute.name}, {queue.device.max_compute_units} compute units; "
          f"{args.steps} steps, float32, best of {args.rounds}", flush=True)
    print(f"OpenCL C features the device reports: {c_features(queue.device)}", flush=True)
    for size in args.sizes:
        rhs = problem(size)
        short = jacobi_numpy(rhs, 1000)
        expected = jacobi(rhs, args.steps, device=compute, kernel="temporal")
        for kernel in ("temporal", "auto"):
            times, exact = [], []
            for _ in range(args.rounds + 1):
                solver = JacobiSolver(compute, rhs, kernel=kernel)
                compute.queue.finish()
                start = time.perf_counter()
                solver.advance(args.steps)
                compute.queue.finish()
                times.append(time.perf_counter() - start)
                exact.append(np.array_equal(solver.read(), expected))
            wall = min(times[1:])
            print(f"{size} oclsci {solver.config.describe()} (--kernel {kernel}): {wall:.4f} s "
                  f"({wall / args.steps * 1e6:.3f} us/step), exact: {sum(exact)}/"
                  f"{len(exact)} runs", flush=True)
        for fences in args.fences:
            for config in configs:
                try:
                    solver = ResidentJacobi(queue, rhs, config, fences)
                except (cl.Error, AssertionError) as error:
                    print(f"{size} {fences} {config}: not built ({str(error).strip()[:120]})")
                    continue
                solver.advance(1000)
                short_exact = np.array_equal(solver.read(), short)
                exact, times = [], []
                for _ in range(args.rounds):
                    solver.restart()
                    start = time.perf_counter()
                    solver.advance(args.steps)
                    queue.finish()
                    times.append(time.perf_counter() - start)
                    exact.append(np.array_equal(solver.read(), expected))
                wall = min(times)
                print(f"{size} {fences} rows,cols,local_w,local_h,max_steps={config}: "
                      f"{wall:.4f} s ({wall / args.steps * 1e6:.3f} us/step), "
                      f"{solver.tiles} tiles, {solver.participants()} groups took part, "
                      f"fences {solver.fence_instructions() or '?'}, exact: "
                      f"{sum(exact)}/{len(exact)} runs, 1000 steps {short_exact}", flush=True)


if __name__ == "__main__":
    main()
