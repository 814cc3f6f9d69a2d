#!/bin/bash
# `oclsci poisson` on a CPU OpenCL device (PoCL), side by side with `oclsci jacobi`: the
# built-in picture's Laplacian stretched to SIZE x SIZE (default 1024) solved to 1e-8 in
# float64 by multigrid and by CG, against 1000 Jacobi steps of the same grid, in ROUNDS
# (default 3) alternating rounds; then warm solves through the Python API (one PoissonSolver
# reused) and PyAMG on the same system when it is installed (`pip install pyamg`).
#
#   bash docs/bench/cpu-poisson-run.sh                  # from anywhere in a clone
#   SIZE=256 ROUNDS=1 bash docs/bench/cpu-poisson-run.sh  # a quick check
#
# PYTHON (default python3) must import oclsci; this clone is put first on PYTHONPATH. Files go
# to WORK (default: a new temporary folder). docs/bench/cpu-poisson-run.txt is the output of a
# run on 2 cores (its first lines name the paths of the machine it ran on).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
SIZE=${SIZE:-1024}
ROUNDS=${ROUNDS:-3}
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
work=${WORK:-$(mktemp -d)}
mkdir -p "$work" && cd "$work" || exit 1
echo "code: $(git -C "$root" log --oneline -1 2>/dev/null) + working tree; files in $work"; uptime
rhs=b$SIZE.npy
$PY - "$SIZE" "$rhs" <<'PY'
import sys
import numpy as np
from oclsci.bench.poisson import picture_rhs
np.save(sys.argv[2], picture_rhs(int(sys.argv[1])))
PY
run() {
    echo; echo "\$ $*"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "process wall %e s" "$@" 2>&1 | grep -v "^\s*$\|^input\|^oclsci: device"
    else
        "$@" 2>&1 | grep -v "^\s*$\|^input\|^oclsci: device"
    fi
}
for _ in $(seq "$ROUNDS"); do
  run "$PY" -m oclsci poisson "$rhs" --dtype float64 --tol 1e-8 -o x-mg.npy
  run "$PY" -m oclsci poisson "$rhs" --dtype float64 --tol 1e-8 --method cg -o x-cg.npy
  run "$PY" -m oclsci jacobi "$rhs" --dtype float64 -n 1000 -o x-j.npy
done
echo; echo "warm, same process (PoissonSolver reused), and PyAMG on the same right-hand side:"
$PY - "$rhs" <<'PY'
import sys
import time
import numpy as np
from oclsci.poisson import PoissonSolver
from oclsci.runtime.device import create_context
rhs = np.load(sys.argv[1])
compute = create_context(None)
for method in ("multigrid", "cg"):
    solver = PoissonSolver(compute, rhs.shape, method=method, dtype="float64")
    runs = [solver.solve(rhs, 1e-8) for _ in range(4)][1:]
    print(f"{method}: {runs[-1].cycles} cycles to {runs[-1].residual:.2e}; device "
          + ", ".join(f"{r.device_seconds:.3f}" for r in runs) + " s; wall "
          + ", ".join(f"{r.wall_seconds:.3f}" for r in runs) + " s (3 warm solves)")
try:
    import pyamg
    import scipy.sparse as sp
except ImportError:
    print("pyamg (or scipy) is not installed: PyAMG left out")
    raise SystemExit(0)
m, n = rhs.shape
d = lambda k: sp.diags([np.ones(k - 1), -2 * np.ones(k), np.ones(k - 1)], [-1, 0, 1])
A = (sp.kron(d(m), sp.identity(n)) + sp.kron(sp.identity(m), d(n))).tocsr()
for _ in range(2):
    t0 = time.perf_counter(); ml = pyamg.ruge_stuben_solver(A); t1 = time.perf_counter()
    res = []
    x = ml.solve(rhs.ravel(), tol=1e-8, residuals=res, maxiter=200); t2 = time.perf_counter()
    true = np.linalg.norm(rhs.ravel() - A @ x) / np.linalg.norm(rhs)
    print(f"pyamg {pyamg.__version__} ruge_stuben: set-up {t1 - t0:.3f} s, solve {t2 - t1:.3f} s "
          f"({len(res) - 1} V-cycles, relative residual {true:.2e})")
PY
