#!/bin/bash
# Scaling of `oclsci stencil` over MPI through the command users run: the 3-D 7-point heat
# stencil (--param k=0.1, float32, --kernel auto) on one GPU against P (default: every GPU
# that nvidia-smi, rocm-smi or OCLSCI_GPUS names here), strong on SIZE^3 (default 512^3),
# weak on SIZE^3 per GPU ((P SIZE) x SIZE x SIZE; its one-GPU figure is the SIZE^3 run's); the
# exchange overlapped (the GPU default) and not (OCLSCI_MPI_OVERLAP=0). The exchange plan is
# the measured one where `oclsci tune --mpi` has cached the node's constants (with
# OCLSCI_MPI_OVERLAP unset), else the fixed rules; the `mpi` line says which. Every strong
# output is compared bit for bit with one GPU's (the weak run's grid has no one-GPU run). At
# the end a table of efficiencies from the summaries' `per step` lines (the steps' wall time,
# the slowest rank's): strong t1 / (P tP), weak t1 / tP. Compare figures within one run only.
# Exits non-zero if a run fails or an output differs.
#
#   benchmarks/mpi_stencil_scaling.sh [P]          # N=1000 steps by default
#   MPIEXEC="mpiexec --allow-run-as-root --oversubscribe" benchmarks/mpi_stencil_scaling.sh 2
#
# SIZE=n changes 512 (a quick check on a CPU: SIZE=24 N=20 OCLSCI_MPI_OVERLAP=1).
# Needs oclsci importable by `python3` (installed, or PYTHONPATH=checkout, passed to the ranks
# by the launcher: Open MPI's `-x VAR`, benchmarks/mpi_common.sh), mpi4py and about 0.5 GiB
# of host memory per 512^3 grid, (P + 1) of them for the inputs (inputs go to ${TMPDIR:-/tmp}).
set -u
. "$(dirname "$0")/mpi_common.sh"  # gpus, launcher
P=${1:-$(gpus)}
N=${N:-1000}
SIZE=${SIZE:-512}
dir=${TMPDIR:-/tmp}/oclsci-stencil-scaling
mkdir -p "$dir"
: > "$dir/times"
# Empty: the default (overlapped on GPUs), and a measured plan where constants are cached.
export OCLSCI_MPI_OVERLAP=${OCLSCI_MPI_OVERLAP:-} OCLSCI_MPI_EXCHANGE_EVERY= \
    OCLSCI_MPI_NODE_RANKS= OCLSCI_QUEUE_BANDS=
echo "oclsci $(python3 -m oclsci --version 2>&1 | tail -1); $P ranks; $N steps; $(date -u +%FT%TZ)"
python3 - "$P" "$dir" "$SIZE" <<'PY'
import sys
import numpy as np
p, folder, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
np.save(f"{folder}/cube.npy", rng.random((n, n, n), dtype=np.float32))
np.save(f"{folder}/weak.npy", rng.random((n * p, n, n), dtype=np.float32))
PY
failed=0
run() {  # run NAME COMMAND...: its summary, its per-step time kept under NAME
    local name=$1
    shift
    echo; echo "\$ $*"
    /usr/bin/time -f "process wall %e s" "$@" > "$dir/run.log" 2>&1 || failed=1
    grep -v "^\s*$\|^oclsci: rank\|^  wrote" "$dir/run.log"
    echo "$name $(sed -n 's/^  per step \([0-9.]*\) us.*/\1/p' "$dir/run.log")" >> "$dir/times"
}
same() {
    python3 -c "import numpy as np, sys; equal = np.array_equal(np.load(sys.argv[2]),
np.load(sys.argv[3])); print(sys.argv[1], 'bit-identical to one GPU:', equal)
sys.exit(0 if equal else 1)" "$1" "$2" "$3" || failed=1
}
heat="u + k * (u[-1, 0, 0] + u[1, 0, 0] + u[0, -1, 0] + u[0, 1, 0] + u[0, 0, -1] + u[0, 0, 1] - 6 * u)"
options=(--param k=0.1 -n "$N" --kernel auto)
stencil=(python3 -m oclsci stencil "$heat")
mpi=("${launcher[@]}" -n "$P" python3 -m oclsci stencil "$heat")
# Untimed, as in mpi_jacobi_scaling.sh: a fresh machine's first run is slower.
"${stencil[@]}" "$dir/cube.npy" --param k=0.1 -n 30 -q -o "$dir/warm.npy"
run one "${stencil[@]}" "$dir/cube.npy" "${options[@]}" -o "$dir/one.npy"
run strong "${mpi[@]}" "$dir/cube.npy" "${options[@]}" -o "$dir/strong.npy"
same "strong, overlapped" "$dir/one.npy" "$dir/strong.npy"
run weak "${mpi[@]}" "$dir/weak.npy" "${options[@]}" -o "$dir/weak_out.npy"
OCLSCI_MPI_OVERLAP=0 run strong0 "${mpi[@]}" "$dir/cube.npy" "${options[@]}" \
    -o "$dir/strong0.npy"
same "strong, not overlapped" "$dir/one.npy" "$dir/strong0.npy"
echo
python3 - "$P" "$SIZE" "$dir/times" <<'PY' || failed=1
import sys
p, n = int(sys.argv[1]), int(sys.argv[2])
times = {name: float(us) for name, *rest in map(str.split, open(sys.argv[3]))
         for us in rest[:1]}
runs = [("one GPU", "one", 1, f"{n}^3", 1), ("strong, overlapped (default)", "strong", p,
        f"{n}^3", p), ("weak, overlapped (default)", "weak", p, f"{p * n}x{n}x{n}", 1),
        ("strong, not overlapped", "strong0", p, f"{n}^3", p)]
print(f"{'run':30} {'P':>2} {'grid':>14} {'us per step':>12} {'efficiency':>10}")
for label, name, ranks, grid, share in runs:
    us = times.get(name)
    efficiency = times["one"] / (share * us) if us and "one" in times else None
    print(f"{label:30} {ranks:>2} {grid:>14} " + (f"{us:12.1f}" if us else f"{'-':>12}")
          + (f" {100 * efficiency:9.1f}%" if efficiency else f" {'-':>10}"))
sys.exit(0 if len(times) == len(runs) else 1)
PY
rm -rf "$dir"
[ "$failed" = 0 ] || echo "FAILED: a run failed or an output differs"
exit "$failed"
