#!/bin/bash
# Issue 21 on the 2-core CPU (PoCL): 1024^2 to 1e-8 in float64 against 1000 Jacobi steps of
# the same grid, side by side, three alternating rounds; PyAMG on the same right-hand side.
set -u
PY=/work/venv/bin/python
export PYTHONPATH=/work/main
cd /tmp/cpu21
echo "code: $(git -C /work/main log --oneline -1) + working tree"; uptime
$PY - <<'PY'
import numpy as np
from oclsci.bench.poisson import picture_rhs
np.save("b1k.npy", picture_rhs(1024))
PY
run() { echo; echo "\$ $*"; /usr/bin/time -f "process wall %e s" "$@" 2>&1 | grep -v "^\s*$\|^input\|^oclsci: device"; }
for round in 1 2 3; do
  run $PY -m oclsci poisson b1k.npy --dtype float64 --tol 1e-8 -o x-mg.npy
  run $PY -m oclsci poisson b1k.npy --dtype float64 --tol 1e-8 --method cg -o x-cg.npy
  run $PY -m oclsci jacobi b1k.npy --dtype float64 -n 1000 -o x-j.npy
done
echo; echo "warm, same process (PoissonSolver reused), and PyAMG on the same right-hand side:"
$PY - <<'PY'
import time
import numpy as np
import scipy.sparse as sp
from oclsci.poisson import PoissonSolver
from oclsci.runtime.device import create_context
rhs = np.load("b1k.npy")
compute = create_context(None)
for method in ("multigrid", "cg"):
    solver = PoissonSolver(compute, rhs.shape, method=method, dtype="float64")
    runs = [solver.solve(rhs, 1e-8) for _ in range(4)][1:]
    print(f"{method}: {runs[-1].cycles} cycles to {runs[-1].residual:.2e}; device "
          + ", ".join(f"{r.device_seconds:.3f}" for r in runs) + " s; wall "
          + ", ".join(f"{r.wall_seconds:.3f}" for r in runs) + " s (3 warm solves)")
import pyamg
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
