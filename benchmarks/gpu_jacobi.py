"""``oclsci bench jacobi`` with the talk's CuPy raw kernel timed in the same run.

Run with oclsci importable (installed, or ``PYTHONPATH=.`` from the checkout), the GPU first
in PYOPENCL_CTX or named with ``--device``:

    python3 benchmarks/gpu_jacobi.py --json $OUT/jacobi.json --markdown $OUT/jacobi.md

It runs the bench's Jacobi cases: the seed's problem (the Laplacian of the built-in 400x266
picture, 150000 steps: NumPy, the talk's PyOpenCL loop, every oclsci kernel) and the large
grids (8192^2 and 16384^2 on a GPU, 200 steps), where each kernel's "% of copy bandwidth" is
its fraction of the streaming bound (12 bytes per cell update against the device-to-device
copy bandwidth measured in the same run). To the seed's problem it adds the talk's "GPU brut"
CuPy RawKernel, the anchor of the talk's table (left out, with a note, when CuPy is missing).
Every result is checked against NumPy's.

``--tune SECONDS`` first runs ``oclsci tune`` for each grid of the run (as a user would: the
kernels then run the tuned configurations from the cache); ``--no-cache`` times what
``--kernel auto`` runs on a fresh installation (``OCLSCI_TUNE_CACHE=off``). ``--quick``: the
bench's quick sizes (1000 steps, one smaller large grid), for a check on any machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from oclsci import create_context
from oclsci.bench import Timing, run_bench, to_markdown, write_json, write_markdown, write_plot
from oclsci.bench.jacobi import large_plan
from oclsci.jacobi.picture import builtin_picture
from oclsci.jacobi.reference import laplacian

SEED_CASE = "jacobi-400x266"
# The talk's "GPU brut" kernel as written (B read as int: the built-in picture's Laplacian is
# made of integers, so it computes the same numbers).
CUPY_SEED = r'''
extern "C" __global__ void laplace_gpu(float *newBuff, float *buff, const int *blur, int m, int n) {
  int i = threadIdx.x+ blockIdx.x * blockDim.x;
  int j = threadIdx.y+ blockIdx.y * blockDim.y;
  if ((i >= 1) && (i < (m+1)) &&
      (j >= 1) && (j < (n+1))) {
      newBuff[i * (n+2) + j ] = 0.25 *( buff[(i-1) * (n+2) + j   ] + buff[(i+1) * (n+2) + j] +
                                        buff[i     * (n+2) + j-1 ] + buff[i   * (n+2) + j+1]
                                      - blur[(i-1) *   (n) + j-1]);
  }
}
'''


class CupySeedJacobi:
    """The talk's CuPy RawKernel loop: 32x32 blocks, buffers swapped after every step."""

    kind = "cuda"
    name = "cupy-raw"

    def __init__(self, rhs: np.ndarray):
        self.rhs = rhs
        self.description = ("the talk's CuPy RawKernel ('GPU brut'): one step per launch, "
                            "32x32 blocks, B read as int")
        self.kernel = None

    def _setup(self) -> None:
        import cupy as cp  # optional: only this variant needs it

        self.cp = cp
        self.kernel = cp.RawKernel(CUPY_SEED, "laplace_gpu")
        m, n = self.rhs.shape
        self.x0 = np.zeros((m + 2, n + 2), dtype=np.float32)
        self.x0[1:-1, 1:-1] = self.rhs
        self.blur = cp.asarray(self.rhs, dtype=cp.int32)
        self.block = (32, 32)
        self.grid = tuple((size + 1) // block + 1 for size, block in zip((m, n), self.block,
                                                                            strict=True))

    def run(self, iterations: int) -> Timing:
        """Start from X0 (untimed), run ``iterations`` steps timed by CUDA events."""
        first = self.kernel is None
        started = time.perf_counter()
        if first:
            self._setup()
        cp = self.cp
        m, n = self.rhs.shape
        x, x_next = cp.asarray(self.x0), cp.asarray(self.x0)
        cp.cuda.Device().synchronize()
        begin, end = cp.cuda.Event(), cp.cuda.Event()
        wall = time.perf_counter()
        begin.record()
        for _ in range(iterations):
            self.kernel(self.grid, self.block, (x_next, x, self.blur, np.int32(m), np.int32(n)))
            x, x_next = x_next, x
        end.record()
        end.synchronize()
        wall = time.perf_counter() - wall
        if first:
            self.description += (f"; first call in this process (module load) "
                                 f"{(time.perf_counter() - started) * 1e3:.0f} ms")
        device = cp.cuda.get_elapsed_time(begin, end) * 1e-3
        return Timing(wall, device, cp.asnumpy(x)[1:-1, 1:-1], "CUDA events")


def cupy_variants(case) -> list:
    """The CuPy anchor for the seed's case (none for the other cases, or without CuPy)."""
    if case.id != SEED_CASE:
        return []
    try:
        import cupy  # noqa: F401  (optional: checked here, used by the variant)
    except ImportError as error:
        print(f"no CuPy ({error}): the talk's CuPy kernel is left out", file=sys.stderr)
        return []
    return [CupySeedJacobi(laplacian(builtin_picture()).astype(np.float32))]


def tune_grids(device: str | None, quick: bool, budget: float) -> None:
    """``oclsci tune`` for the seed's grid and this device's large grids (float32)."""
    sizes, _, _ = large_plan(create_context(device), quick)
    picture = builtin_picture().shape
    for rows, cols in [picture, *((size, size) for size in sizes)]:
        command = [sys.executable, "-m", "oclsci", "tune", "--size", f"{rows}x{cols}",
                   "--budget", str(budget), *(["--device", device] if device else [])]
        print("$ oclsci " + " ".join(command[3:]), file=sys.stderr, flush=True)
        subprocess.run(command, check=True)


def main() -> int:
    """Tune if asked, run the bench with the CuPy kernel added, write the reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tune", type=float, default=0.0, metavar="SECONDS",
                        help="tune each grid first (oclsci tune --budget SECONDS)")
    parser.add_argument("--no-cache", action="store_true",
                        help="ignore the tuning cache: the defaults of a fresh installation")
    options = parser.parse_args()
    if options.no_cache and options.tune:
        parser.error("--tune and --no-cache exclude each other")
    if options.no_cache:
        os.environ["OCLSCI_TUNE_CACHE"] = "off"
    if options.tune:
        tune_grids(options.device, options.quick, options.tune)
    report = run_bench(["jacobi"], device=options.device, quick=options.quick,
                       repeat=options.repeat, extra_variants=cupy_variants,
                       command_line=[sys.argv[0], *sys.argv[1:]])
    write_json(report, options.json)
    write_markdown(report, options.markdown)
    if options.plot:
        write_plot(report, options.plot)
    print(to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
