#!/bin/bash
# Scaling of `oclsci jacobi` over MPI through the command users run (--kernel auto, float32):
# one GPU against P (default: every GPU that nvidia-smi, rocm-smi or OCLSCI_GPUS names here),
# strong on 16384^2 (and 32768^2 for P >= 4), weak on 16384^2 per GPU; the exchange overlapped
# (the GPU default) and not (OCLSCI_MPI_OVERLAP=0); the default exchange period and PERIODS
# (default 32 48: multiples of both temporal's 8 or 16 and streaming's 16 steps per launch in
# float32; other periods add a launch per exchange); rows between the node's ranks through
# MPI's copy (OCLSCI_MPI_NODE_RANKS=1) rather than shared memory (the default); the ranks'
# interiors on one queue (OCLSCI_QUEUE_BANDS=1) rather than in bands of rows; a short run
# (2000 steps: start-up skew between ranks included). The exchange plan is the measured one
# where `oclsci tune --mpi` has cached the node's constants (with OCLSCI_MPI_OVERLAP unset),
# else the fixed rules; the `mpi` line says which. Every strong-scaling output is compared
# bit for bit with one GPU's (the weak run's grid has no one-GPU run). Compare figures within
# one run only.
#
#   benchmarks/mpi_jacobi_scaling.sh [P]          # N=20000 steps by default
#   MPIEXEC="mpiexec --allow-run-as-root --oversubscribe" benchmarks/mpi_jacobi_scaling.sh 2
#
# SIZE=n changes 16384 (a quick check on a CPU: SIZE=256 N=200 OCLSCI_MPI_OVERLAP=1).
# Needs oclsci importable by `python3` (installed, or PYTHONPATH=checkout, passed to the ranks
# by the launcher: Open MPI's `-x VAR`, benchmarks/mpi_common.sh), mpi4py and about 13 GiB
# of host memory per 16384^2 input (inputs go to ${TMPDIR:-/tmp}).
set -u
. "$(dirname "$0")/mpi_common.sh"  # gpus, launcher
P=${1:-$(gpus)}
N=${N:-20000}
SIZE=${SIZE:-16384}
PERIODS=${PERIODS:-32 48}
dir=${TMPDIR:-/tmp}/oclsci-scaling
mkdir -p "$dir"
# Empty: the default (overlapped on GPUs), and a measured plan where constants are cached.
export OCLSCI_MPI_OVERLAP=${OCLSCI_MPI_OVERLAP:-} OCLSCI_MPI_EXCHANGE_EVERY= \
    OCLSCI_MPI_NODE_RANKS= OCLSCI_QUEUE_BANDS=
echo "oclsci $(python3 -m oclsci --version 2>&1 | tail -1); $P ranks; $N steps; $(date -u +%FT%TZ)"
python3 - "$P" "$dir" "$SIZE" <<'PY'
import sys
import numpy as np
p, folder, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
np.save(f"{folder}/b16k.npy", rng.random((n, n), dtype=np.float32))
np.save(f"{folder}/weak.npy", rng.random((n * p, n), dtype=np.float32))
if p >= 4:
    np.save(f"{folder}/b32k.npy", rng.random((2 * n, 2 * n), dtype=np.float32))
PY
run() {
    echo; echo "\$ $*"
    /usr/bin/time -f "process wall %e s" "$@" 2>&1 \
        | grep -v "^\s*$\|^oclsci: rank\|^input\|^grid\|^residual"
}
same() {
    python3 -c "import numpy as np, sys; print(sys.argv[1], 'bit-identical to one GPU:',
np.array_equal(np.load(sys.argv[2]), np.load(sys.argv[3])))" "$1" "$2" "$3"
}
jacobi=(python3 -m oclsci jacobi)
mpi=("${launcher[@]}" -n "$P" python3 -m oclsci jacobi)
# Untimed: on a fresh machine the first run was slower (one H200: 150.0 against 142.7 us per
# step in the next run), which would flatter every efficiency below.
"${jacobi[@]}" "$dir/b16k.npy" -n 200 -q
run "${jacobi[@]}" "$dir/b16k.npy" -n "$N" -o "$dir/one.npy"
run "${mpi[@]}" "$dir/b16k.npy" -n "$N" -o "$dir/strong.npy"
same "strong, overlapped" "$dir/one.npy" "$dir/strong.npy"
run "${mpi[@]}" "$dir/weak.npy" -n "$N" -o "$dir/weak_out.npy"
OCLSCI_QUEUE_BANDS=1 run "${mpi[@]}" "$dir/b16k.npy" -n "$N" -o "$dir/strong1q.npy"
same "strong, interiors on one queue" "$dir/one.npy" "$dir/strong1q.npy"
OCLSCI_MPI_OVERLAP=0 run "${mpi[@]}" "$dir/b16k.npy" -n "$N" -o "$dir/strong0.npy"
same "strong, not overlapped" "$dir/one.npy" "$dir/strong0.npy"
OCLSCI_MPI_NODE_RANKS=1 run "${mpi[@]}" "$dir/b16k.npy" -n "$N" -o "$dir/strong_mpi.npy"
same "strong, every row through MPI" "$dir/one.npy" "$dir/strong_mpi.npy"
for period in $PERIODS; do
    OCLSCI_MPI_EXCHANGE_EVERY=$period run "${mpi[@]}" "$dir/b16k.npy" -n "$N" \
        -o "$dir/strong$period.npy"
    same "strong, exchange every $period steps" "$dir/one.npy" "$dir/strong$period.npy"
done
run "${jacobi[@]}" "$dir/b16k.npy" -n 2000 -o "$dir/one_short.npy"
run "${mpi[@]}" "$dir/b16k.npy" -n 2000 -o "$dir/strong_short.npy"
same "strong, 2000 steps" "$dir/one_short.npy" "$dir/strong_short.npy"
if [ "$P" -ge 4 ]; then
    run "${jacobi[@]}" "$dir/b32k.npy" -n $((N / 4)) -o "$dir/one32.npy"
    run "${mpi[@]}" "$dir/b32k.npy" -n $((N / 4)) -o "$dir/strong32.npy"
    same "strong, twice the size" "$dir/one32.npy" "$dir/strong32.npy"
fi
rm -rf "$dir"
