# Sourced by the MPI scaling scripts (mpi_jacobi_scaling.sh, mpi_stencil_scaling.sh): the
# number of GPUs here, and the launcher in the array `launcher` (MPIEXEC, default mpiexec),
# with Open MPI's `-x VAR` for the variables the ranks need.
gpus() {  # OCLSCI_GPUS, else what nvidia-smi or rocm-smi lists, else 1
    if [ -n "${OCLSCI_GPUS:-}" ]; then echo "$OCLSCI_GPUS"
    elif command -v nvidia-smi > /dev/null; then nvidia-smi -L | grep -c '^GPU'
    elif command -v rocm-smi > /dev/null; then rocm-smi --showid | grep -c 'GPU\['
    else echo 1
    fi
}
read -r -a launcher <<< "${MPIEXEC:-mpiexec}"
if "${launcher[@]}" --version 2>&1 | grep -qi "open mpi\|openrte"; then
    for var in PYTHONPATH OCL_ICD_VENDORS PYTHONUNBUFFERED OCLSCI_MPI_OVERLAP \
               OCLSCI_MPI_EXCHANGE_EVERY OCLSCI_MPI_NODE_RANKS OCLSCI_QUEUE_BANDS; do
        launcher+=(-x "$var")
    done
fi
