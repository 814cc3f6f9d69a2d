#!/bin/bash
# slurm/task.sh CMD [ARGS...] -- one task of a slurm/ script: `srun slurm/task.sh oclsci ...`
# (or run directly outside Slurm). Started by slurm/common.sh, which exports the settings.
#
#   CMD = oclsci   run `oclsci ARGS...`
#   CMD = report   print this node's name, Python, `oclsci --version` and `oclsci devices`
#
# in oclsci's environment: with OCLSCI_USE_GUIX=yes,
#   guix time-machine -C guix/channels.scm -- shell --rebuild-cache --pure --preserve='^SLURM' ...
#     -m guix/manifest[-amd|-nvidia].scm [-m guix/manifest-mpi.scm] -- CMD
# (the manifest variant is chosen on the node itself: see OCLSCI_GUIX_VARIANT), otherwise in
# the current Python environment (OCLSCI_PYTHON).
set -eu

what=${1:?usage: task.sh oclsci|report [ARGS...]}
shift
root=${OCLSCI_ROOT:?OCLSCI_ROOT is not set (run through slurm/common.sh)}
rank=${SLURM_PROCID:-0}
scratch=${TMPDIR:-/tmp}/oclsci-$(id -u)

# Several processes sharing PoCL's kernel cache can crash PoCL: one cache per job and rank
# (jobs of a chain, or of an array, may run side by side on a node). PyOpenCL's cache lock in
# an NFS home blocks the other nodes: a node-local cache unless one is set.
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$scratch/pocl}/job${SLURM_JOB_ID:-0}-rank$rank
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$scratch/cache}

if [ "${OCLSCI_USE_GUIX:-no}" = yes ]; then
    variant=${OCLSCI_GUIX_VARIANT:-auto}
    if [ "$variant" = auto ]; then
        if [ -e /dev/kfd ]; then variant=amd
        elif [ -e /dev/nvidiactl ]; then variant=nvidia
        else variant=cpu
        fi
    fi
    case $variant in
        cpu) manifest=$root/guix/manifest.scm ;;
        *) manifest=$root/guix/manifest-$variant.scm ;;
    esac
    env_cmd=(guix time-machine -C "${OCLSCI_GUIX_CHANNELS:-$root/guix/channels.scm}" --
             shell --rebuild-cache --pure
             --preserve='^SLURM' --preserve='^PMI' --preserve='^OMPI_' --preserve='^OCLSCI_'
             --preserve='^PYOPENCL_' --preserve='^POCL_' --preserve='^XDG_CACHE_HOME$'
             --preserve='^(ROCR|HIP|CUDA)_VISIBLE_DEVICES$' --preserve='^GPU_DEVICE_ORDINAL$')
    if [ "$variant" = nvidia ]; then
        # The host's NVIDIA OpenCL driver, exposed to the pure environment (docs/guix.md).
        eval "$("$root/guix/nvidia-icd.sh" "$scratch/nvidia-rank$rank")"
        env_cmd+=(--preserve='^OCL_ICD_VENDORS$' --preserve='^LD_LIBRARY_PATH$')
    fi
    env_cmd+=(-m "$manifest")
    [ "${OCLSCI_GUIX_MPI:-no}" = yes ] && env_cmd+=(-m "$root/guix/manifest-mpi.scm")
    env_cmd+=(--)
    python=python3
else
    env_cmd=()
    python=${OCLSCI_PYTHON:-python3}
fi

case $what in
    oclsci)
        # Until oclsci installs its own handlers, the signals that ask for a checkpoint are
        # ignored rather than fatal; `guix shell` (which forks CMD and waits) ignores them too,
        # so that only oclsci acts on them. A warning that comes too early is thus harmless: the
        # SIGTERM at the time limit still gets a checkpoint.
        trap '' USR1 TERM
        exec "${env_cmd[@]}" "$python" -m oclsci "$@" ;;
    report)
        exec "${env_cmd[@]}" "$python" -c '
import platform, subprocess, sys
print(f"node {platform.node()}: Python {platform.python_version()} ({sys.executable})",
      flush=True)
for args in (["--version"], ["devices"]):
    subprocess.run([sys.executable, "-m", "oclsci", *args], check=False)
' ;;
    *) echo "task.sh: unknown command $what" >&2; exit 2 ;;
esac
