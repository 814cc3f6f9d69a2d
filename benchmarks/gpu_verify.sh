#!/usr/bin/env bash
# Check and time oclsci on a GPU machine, in stages that each fit a 10-minute call:
#   bash benchmarks/gpu_verify.sh checks   # tests on the GPU, every Jacobi kernel on the seed's
#                                          # case against NumPy, Mandelbrot and axpy targets
#   bash benchmarks/gpu_verify.sh bench    # the full `oclsci bench all` table
#   bash benchmarks/gpu_verify.sh jacobi   # `oclsci bench jacobi` with the talk's CuPy kernel
#                                          # beside it (benchmarks/gpu_jacobi.py)
#   bash benchmarks/gpu_verify.sh selftest # `oclsci selftest` (full, then --quick) and the
#                                          # selftest, GPU-profile and fallback tests on the GPU
# Results go to $OUT (default ./gpu-out). Needs the GPU to be the first device (PYOPENCL_CTX).
set -u
out=${OUT:-gpu-out}
mkdir -p "$out"
export PYOPENCL_CTX=${PYOPENCL_CTX:-0:0} PYTHONUNBUFFERED=1
log() { echo "== $*"; }

checks() {
    log "devices"; python3 -m oclsci devices
    log "tests on the GPU"
    OCLSCI_TEST_DEVICES=$PYOPENCL_CTX timeout 300 python3 -m pytest -q -p no:cacheprovider \
        tests/jacobi/test_jacobi_kernels.py tests/mandelbrot/test_mandelbrot.py tests/elementwise/test_elementwise.py \
        tests/runtime/test_programs.py tests/cli/test_jacobi_cli.py -k "not signal and not sigterm" 2>&1 | tail -15
    log "seed case: 400x266 built-in picture, 150000 steps, every kernel suited to the device"
    python3 - "$out" <<'PY'
import subprocess, sys, time
import numpy as np
from oclsci.runtime.device import create_context
from oclsci.jacobi.reference import jacobi_numpy, laplacian
from oclsci.jacobi.kernels import suited
from oclsci.jacobi.picture import builtin_picture
out = sys.argv[1]
rhs = laplacian(builtin_picture())
np.save(f"{out}/rhs.npy", rhs)
kernels = ("auto",) + suited(create_context().is_cpu)
for kernel in kernels:
    result = subprocess.run([sys.executable, "-m", "oclsci", "jacobi", f"{out}/rhs.npy",
                             "--kernel", kernel, "-o", f"{out}/x_{kernel}.npy"],
                            capture_output=True, text=True)
    lines = [l for l in result.stdout.splitlines() if l.startswith(("kernel", "device time", "per step"))]
    print(f"--- {kernel} (exit {result.returncode})", *lines, result.stderr.strip()[-300:], sep="\n  ")
start = time.perf_counter()
reference = jacobi_numpy(rhs, 150000)
print(f"NumPy (the seed's code), 150000 steps: {time.perf_counter() - start:.2f} s")
for kernel in kernels:
    x = np.load(f"{out}/x_{kernel}.npy")
    print(f"{kernel}: equal to NumPy bit for bit: {np.array_equal(x, reference)}; "
          f"max |diff| {np.abs(x.astype(np.float64) - reference).max():.3g}")
PY
    log "mandelbrot: seed case, kernel only / with copy back / float64"
    python3 -m oclsci mandelbrot --no-image --repeat 20
    python3 -m oclsci mandelbrot -o "$out/mandelbrot.png" --repeat 20
    python3 -m oclsci mandelbrot --dtype float64 --no-image --repeat 10
    python3 -c "
import numpy as np
from oclsci.mandelbrot import mandelbrot
from oclsci.mandelbrot.reference import mandelbrot_set_np
r = mandelbrot(return_z=True)
Z, N = mandelbrot_set_np(-2.25, .75, -1.25, 1.25, 1500, 1250, 400, 2.0**40)
print('mandelbrot agreement with the seed NumPy code: counts', (r.counts == N).mean(), 'z', (r.z == Z).mean())"
    log "axpy 2^28 float32 against copy bandwidth"
    python3 -m oclsci elementwise axpy --size 268435456 --repeat 20
    python3 -m oclsci elementwise axpy --size 268435456 --repeat 20 --per-item 4
}

bench() {
    python3 -m oclsci bench all --json "$out/bench-gpu.json" --markdown "$out/bench-gpu.md" \
        --plot "$out/bench-gpu.png" --quiet
}

jacobi() {
    python3 benchmarks/gpu_jacobi.py --json "$out/jacobi-gpu.json" \
        --markdown "$out/jacobi-gpu.md" --plot "$out/jacobi-gpu.png"
}

selftest() {
    log "devices"; python3 -m oclsci devices
    log "oclsci selftest --json"; time python3 -m oclsci selftest --json "$out/selftest-gpu.json"
    echo "exit status: $?"
    log "oclsci selftest --quick"; python3 -m oclsci selftest --quick | tail -1
    log "tests: selftest, GPU profiles and work-group fallbacks, on the GPU"
    OCLSCI_TEST_DEVICES=$PYOPENCL_CTX timeout 240 python3 -m pytest -q -p no:cacheprovider \
        tests/cli/test_selftest.py tests/jacobi/test_gpu_profiles.py 2>&1 | tail -8
}

case "${1:-checks}" in
    checks) checks 2>&1 | tee "$out/checks.txt" ;;
    bench) bench 2>&1 | tee "$out/bench.txt" ;;
    jacobi) jacobi 2>&1 | tee "$out/jacobi.txt" ;;
    selftest) selftest 2>&1 | tee "$out/selftest.txt" ;;
    *) echo "usage: $0 checks|bench|jacobi|selftest" >&2; exit 2 ;;
esac
