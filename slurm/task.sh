#!/bin/bash
# slurm/task.sh CMD [ARGS...] -- one task of a slurm/ script: `srun slurm/task.sh oclsci ...`
# (or run directly outside Slurm). Started by slurm/common.sh, which exports the settings.
#
#   CMD = oclsci   run `oclsci ARGS...`
#   CMD = report   print this node's name, Python, `oclsci --version` and `oclsci devices`
#   CMD = mpi-library  print the family of the MPI that mpi4py loads: mpich, openmpi or unknown
#
# in oclsci's environment: with OCLSCI_USE_GUIX=yes, in the pinned Guix profile of the node's
# variant (OCLSCI_GUIX_VARIANT: guix/manifest[-amd|-nvidia].scm [+ guix/manifest-mpi.scm]).
# One `guix time-machine' per job and variant: the first task of the job to get here builds the
#   guix time-machine -C guix/channels.scm -- package -p PROFILE -m guix/manifest....scm ...
# (PROFILE: $OCLSCI_GUIX_PROFILES/VARIANT[-mpi], by default in ~/.cache/oclsci/guix-profiles, a
# directory every node sees; the others wait on its lock), then every task runs
#   guix shell --pure -p PROFILE --preserve='^SLURM' ... -- CMD
# which evaluates nothing. Without Guix, the current Python environment (OCLSCI_PYTHON).
set -eu

what=${1:?usage: task.sh oclsci|report|mpi-library [ARGS...]}
shift
root=${OCLSCI_ROOT:?OCLSCI_ROOT is not set (run through slurm/common.sh)}
rank=${SLURM_PROCID:-0}
scratch=${TMPDIR:-/tmp}/oclsci-$(id -u)

# Several processes sharing PoCL's kernel cache can crash PoCL: one cache per job and rank
# (jobs of a chain, or of an array, may run side by side on a node). PyOpenCL's cache lock in
# an NFS home blocks the other nodes: a node-local cache unless one is set.
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$scratch/pocl}/job${SLURM_JOB_ID:-0}-rank$rank
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$scratch/cache}

# Until oclsci installs its own handlers, the signals that ask for a checkpoint are ignored
# rather than fatal, from here on (building the Guix profile included); `guix shell` (which forks
# CMD and waits) ignores them too, so that only oclsci acts on them. A warning that comes too
# early is thus harmless: the SIGTERM at the time limit still gets a checkpoint.
if [ "$what" = oclsci ]; then trap '' USR1 TERM; fi

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
    if [ -z "${OCLSCI_GUIX_PROFILES:-}" ] && [ ! -d "${HOME:-}" ]; then
        # mkdir -p would make the user's HOME itself: never that.
        echo "task.sh: error: HOME=${HOME:-} is not a folder: set HOME, or OCLSCI_GUIX_PROFILES to a folder that every node sees (Guix profiles are kept there)" >&2
        exit 1
    fi
    profiles=${OCLSCI_GUIX_PROFILES:-$HOME/.cache/oclsci/guix-profiles}
    manifests=(-m "$manifest")
    name=$variant
    if [ "${OCLSCI_GUIX_MPI:-no}" = yes ]; then
        manifests+=(-m "$root/guix/manifest-mpi.scm")
        name=$variant-mpi
    fi
    profile=$profiles/$name
    mkdir -p "$profiles"
    # Built once per job (outside Slurm: every time), as the checkout may have changed; the
    # first task builds it while the others wait, then they all use the same store path.
    exec 8>"$profile.lock"
    flock 8
    job=${SLURM_JOB_ID:-none-$$}
    if [ ! -e "$profile" ] || [ "$(cat "$profile.job" 2>/dev/null)" != "$job" ]; then
        guix time-machine -C "${OCLSCI_GUIX_CHANNELS:-$root/guix/channels.scm}" -- \
            package -p "$profile" "${manifests[@]}" >&2
        echo "$job" >"$profile.job"
    fi
    profile=$(readlink -f "$profile")
    exec 8>&-
    env_cmd=(guix shell --pure -p "$profile"
             --preserve='^SLURM' --preserve='^PMI' --preserve='^OMPI_' --preserve='^OCLSCI_'
             --preserve='^PYOPENCL_' --preserve='^POCL_' --preserve='^XDG_CACHE_HOME$'
             --preserve='^(ROCR|HIP|CUDA)_VISIBLE_DEVICES$' --preserve='^GPU_DEVICE_ORDINAL$')
    if [ "$variant" = nvidia ]; then
        # The host's NVIDIA OpenCL driver, exposed to the pure environment (docs/guix.md).
        eval "$("$root/guix/nvidia-icd.sh" "$scratch/nvidia-rank$rank")"
        env_cmd+=(--preserve='^OCL_ICD_VENDORS$' --preserve='^LD_LIBRARY_PATH$')
    fi
    env_cmd+=(--)
    python=python3
else
    env_cmd=()
    python=${OCLSCI_PYTHON:-python3}
fi

case $what in
    oclsci)
        exec "${env_cmd[@]}" "$python" -m oclsci "$@" ;;
    report)
        exec "${env_cmd[@]}" "$python" -c '
import platform, subprocess, sys
print(f"node {platform.node()}: Python {platform.python_version()} ({sys.executable})",
      flush=True)
for args in (["--version"], ["devices"]):
    subprocess.run([sys.executable, "-m", "oclsci", *args], check=False)
' ;;
    mpi-library)
        # Without MPI_Init (a batch shell is no MPI task): the library's own version string.
        exec "${env_cmd[@]}" "$python" -c '
import mpi4py
mpi4py.rc.initialize = False
from mpi4py import MPI
text = MPI.Get_library_version().lower()
print("openmpi" if "open mpi" in text else
      "mpich" if any(word in text for word in ("mpich", "intel(r) mpi", "mvapich")) else
      "unknown")
' ;;
    *) echo "task.sh: unknown command $what" >&2; exit 2 ;;
esac
