"""``oclsci bench lombscargle`` with the seed's own CuPy kernel timed in the same run.

Run on the GPU machine, from the checkout (CuPy installed, the GPU first in PYOPENCL_CTX):

    python3 benchmarks/gpu_lombscargle.py --json $OUT/lombscargle.json \\
        --markdown $OUT/lombscargle.md --plot $OUT/lombscargle.png

It runs the bench's Lomb-Scargle cases (SciPy, every oclsci variant; the seed's 2**10 samples
x 2**20 frequencies, float32 and float64) and adds to each the seed's final CuPy raw kernel
(rebuilt from the talk's slides, ``-use_fast_math``, ``__launch_bounds__(128)``, grid-stride
over 20 blocks per SM, kernels cached per dtype; the talk's fatbin is replaced by CuPy's own
on-disk cache, warmed by the bench's warm-up). Its first call in this process is given in its
description. ``--quick``: 2**14 frequencies. Run it with oclsci importable (installed, or
``PYTHONPATH=.`` from the checkout); without CuPy the seed's kernel is left out.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from oclsci.bench import Timing, run_bench, to_markdown, write_json, write_markdown, write_plot
from oclsci.bench.lombscargle import seed_inputs

# The seed's kernel (cuSignal's _lombscargle.cu of the talk), one instantiation per dtype.
SEED_SOURCE = r"""
template<typename T>
__device__ void _cupy_lombscargle(const int x_shape, const int freqs_shape,
        const T *__restrict__ x, const T *__restrict__ y, const T *__restrict__ freqs,
        T *__restrict__ pgram, const T *__restrict__ y_dot) {
    const int tx { static_cast<int>( blockIdx.x * blockDim.x + threadIdx.x ) };
    const int stride { static_cast<int>( blockDim.x * gridDim.x ) };
    T yD {};
    if ( y_dot[0] == 0 ) {
        yD = 1.0f;
    } else {
        yD = 2.0f / y_dot[0];
    }
    for ( int tid = tx; tid < freqs_shape; tid += stride ) {
        T freq { freqs[tid] };
        T xc {}; T xs {}; T cc {}; T ss {}; T cs {}; T c {}; T s {};
        for ( int j = 0; j < x_shape; j++ ) {
            sincos( freq * x[j], &s, &c );
            xc += y[j] * c;
            xs += y[j] * s;
            cc += c * c;
            ss += s * s;
            cs += c * s;
        }
        T c_tau {}; T s_tau {};
        T tau { atan2( static_cast<T>( 2.0f ) * cs, cc - ss ) / ( static_cast<T>( 2.0f ) * freq ) };
        sincos( freq * tau, &s_tau, &c_tau );
        T c_tau2 { c_tau * c_tau };
        T s_tau2 { s_tau * s_tau };
        T cs_tau { static_cast<T>( 2.0f ) * c_tau * s_tau };
        pgram[tid] = ( static_cast<T>( 0.5f ) * (
                ( ( c_tau * xc + s_tau * xs ) * ( c_tau * xc + s_tau * xs ) /
                ( c_tau2 * cc + cs_tau * cs + s_tau2 * ss ) ) +
                ( ( c_tau * xs - s_tau * xc ) * ( c_tau * xs - s_tau * xc ) /
                ( c_tau2 * ss - cs_tau * cs + s_tau2 * cc ) ) ) ) * yD;
    }
}
extern "C" __global__ void __launch_bounds__( 128 ) _cupy_lombscargle_float32(
        const int x_shape, const int freqs_shape, const float *__restrict__ x,
        const float *__restrict__ y, const float *__restrict__ freqs,
        float *__restrict__ pgram, const float *__restrict__ y_dot ) {
    _cupy_lombscargle<float>( x_shape, freqs_shape, x, y, freqs, pgram, y_dot );
}
extern "C" __global__ void __launch_bounds__( 128 ) _cupy_lombscargle_float64(
        const int x_shape, const int freqs_shape, const double *__restrict__ x,
        const double *__restrict__ y, const double *__restrict__ freqs,
        double *__restrict__ pgram, const double *__restrict__ y_dot ) {
    _cupy_lombscargle<double>( x_shape, freqs_shape, x, y, freqs, pgram, y_dot );
}
"""
_KERNELS: dict = {}  # the seed's user-side kernel cache, per dtype


class CupySeed:
    """The seed's best CuPy kernel (float32: -use_fast_math as in the talk's last rows)."""

    kind = "cuda"
    name = "cupy-seed"

    def __init__(self, inputs: tuple, dtype: str):
        self.inputs, self.dtype = inputs, dtype
        self.description = ("the seed's CuPy raw kernel: sincos, __launch_bounds__(128), "
                            "grid-stride over 20 x 128-thread blocks per SM, -use_fast_math, "
                            "kernel cached per dtype (CuPy's disk cache for the fatbin)")
        self.ready = False

    def _setup(self) -> None:
        import cupy as cp  # optional: only this variant needs it

        self.cp = cp
        x, y, freqs = (cp.asarray(a.astype(self.dtype)) for a in self.inputs)
        self.args = (np.int32(x.size), np.int32(freqs.size), x, y, freqs,
                     cp.empty(freqs.size, dtype=self.dtype),
                     cp.zeros(1, dtype=self.dtype))  # y_dot 0: unnormalized, as SciPy's power
        if self.dtype not in _KERNELS:
            module = cp.RawModule(code=SEED_SOURCE, options=("-std=c++11", "-use_fast_math"))
            _KERNELS[self.dtype] = module.get_function(f"_cupy_lombscargle_{self.dtype}")
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.grid, self.block = (sms * 20,), (128,)
        self.kernel = _KERNELS[self.dtype]
        self.ready = True

    def run(self, iterations: int) -> Timing:
        first = not self.ready
        started = time.perf_counter()
        if first:
            self._setup()
        cp = self.cp
        begin, end = cp.cuda.Event(), cp.cuda.Event()
        start = time.perf_counter()
        begin.record()
        self.kernel(self.grid, self.block, self.args)
        end.record()
        end.synchronize()
        wall = time.perf_counter() - start
        device = cp.cuda.get_elapsed_time(begin, end) * 1e-3
        if first:
            self.description += f"; first call in this process " \
                                f"{(time.perf_counter() - started) * 1e3:.1f} ms"
        # The old SciPy formula of the seed: equal to SciPy >= 1.15's power without clamping.
        # SciPy's power is n/4 * 2 (YC^2/CC + YS^2/SS) with sums / n: 0.5 (...) with sums.
        output = cp.asnumpy(self.args[5]).astype(np.float64)
        return Timing(wall, device, output, "CUDA events")


def main() -> int:
    """Run the bench with the CuPy kernel added; write the reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()

    def extra(case):
        try:
            import cupy  # noqa: F401  (optional: checked here, used by the variant)
        except ImportError as error:
            print(f"no CuPy ({error}): the seed's kernel is left out", file=sys.stderr)
            return []
        problem = case.problem
        return [CupySeed(seed_inputs(problem["samples"], problem["frequencies"]),
                         problem["dtype"])]

    command = [sys.argv[0], *sys.argv[1:]]
    report = run_bench(["lombscargle"], device=options.device, quick=options.quick,
                       repeat=options.repeat, extra_variants=extra, command_line=command)
    write_json(report, options.json)
    write_markdown(report, options.markdown)
    if options.plot:
        write_plot(report, options.plot)
    print(to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
