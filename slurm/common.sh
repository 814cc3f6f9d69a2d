# shellcheck shell=bash
# slurm/common.sh -- shared logic of the batch scripts in slurm/ (sourced, never run).
#
# The scripts (jacobi.sbatch, jacobi-mpi.sbatch, bench.sbatch, jacobi-sweep.sbatch) only set
# their defaults and call one function below. docs/slurm.md documents every OCLSCI_* variable;
# the main ones:
#
#   OCLSCI_USE_GUIX=auto|yes|no   run in the pinned Guix profile, built once per job by one
#                                 `guix time-machine -C guix/channels.scm -- package` and
#                                 entered by every task with `guix shell --pure -p` (see
#                                 slurm/task.sh; auto: when `guix` is on PATH), or in the
#                                 current Python environment (no)
#   OCLSCI_GUIX_VARIANT=auto|cpu|amd|nvidia   which guix/manifest*.scm (auto: per node, from
#                                 /dev/kfd -> amd, /dev/nvidiactl -> nvidia, else cpu)
#   OCLSCI_INPUT, OCLSCI_OUTPUT, OCLSCI_ITERATIONS, OCLSCI_DEVICE, OCLSCI_ARGS
#   OCLSCI_CHECKPOINT, OCLSCI_CHECKPOINT_EVERY, OCLSCI_RESUME
#   OCLSCI_RESUBMIT=yes|no, OCLSCI_MAX_RESUBMITS   (jacobi scripts: continue after a checkpoint)
#   OCLSCI_SRUN_MPI, OCLSCI_SRUN_ARGS  srun --mpi=OCLSCI_SRUN_MPI, more srun options (how steps start)
#   OCLSCI_SELFTEST=1             first run `oclsci selftest --quick` on every node; stop if it fails
#   OCLSCI_SHARE_GPUS=1           let several ranks of a node share a GPU (else an error)
#
# Every script works outside Slurm too (`bash slurm/jacobi.sbatch`): commands then run directly.

OCLSCI_EX_TEMPFAIL=75   # oclsci jacobi's exit code after it saved a checkpoint on a signal

oclsci_log() { printf '[oclsci %s] %s\n' "$(date '+%F %T')" "$*"; }
oclsci_die() { oclsci_log "error: $*" >&2; exit 1; }

# Print a command as it can be pasted into a shell.
oclsci_show() { local q; q=$(printf '%q ' "$@"); oclsci_log "run: ${q% }"; }

# ---------------------------------------------------------------------------- environment
# oclsci_setup: resolve the root, the paths and how commands run (Guix or not).
oclsci_setup() {
    OCLSCI_ROOT=$(cd "$OCLSCI_ROOT" && pwd) || oclsci_die "OCLSCI_ROOT: no such directory"
    export OCLSCI_ROOT
    # This job for scontrol: an array task by ARRAYID_TASKID (its SLURM_JOB_ID may be the array's).
    OCLSCI_JOB_ID=${SLURM_JOB_ID:-}
    [ -n "${SLURM_ARRAY_JOB_ID:-}" ] && OCLSCI_JOB_ID=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}
    # Relative paths given by the user are relative to the submission directory.
    OCLSCI_WORKDIR=${SLURM_SUBMIT_DIR:-$PWD}
    cd "$OCLSCI_WORKDIR" || oclsci_die "cannot enter $OCLSCI_WORKDIR"

    case ${OCLSCI_USE_GUIX:=auto} in
        auto) if command -v guix >/dev/null 2>&1; then OCLSCI_USE_GUIX=yes; else OCLSCI_USE_GUIX=no; fi ;;
        yes) command -v guix >/dev/null 2>&1 || oclsci_die "OCLSCI_USE_GUIX=yes but guix is not on PATH" ;;
        no) ;;
        *) oclsci_die "OCLSCI_USE_GUIX=$OCLSCI_USE_GUIX: expected auto, yes or no" ;;
    esac
    case ${OCLSCI_GUIX_VARIANT:=auto} in
        auto|cpu|amd|nvidia) ;;
        *) oclsci_die "OCLSCI_GUIX_VARIANT=$OCLSCI_GUIX_VARIANT: expected auto, cpu, amd or nvidia" ;;
    esac
    : "${OCLSCI_GUIX_CHANNELS:=$OCLSCI_ROOT/guix/channels.scm}"
    export OCLSCI_USE_GUIX OCLSCI_GUIX_VARIANT OCLSCI_GUIX_CHANNELS OCLSCI_GUIX_MPI

    if [ "$OCLSCI_USE_GUIX" = no ]; then
        # The current environment: the interpreter of the `oclsci` command on PATH if any,
        # else python3; the checkout itself when that Python has no oclsci installed.
        if [ -z "${OCLSCI_PYTHON:-}" ]; then
            OCLSCI_PYTHON=python3
            local exe shebang
            if exe=$(command -v oclsci 2>/dev/null); then
                shebang=$(sed -n '1s/^#! *\([^ ]*\).*/\1/p' "$exe" 2>/dev/null)
                case ${shebang##*/} in python*) OCLSCI_PYTHON=$shebang ;; esac
            fi
        fi
        command -v "$OCLSCI_PYTHON" >/dev/null 2>&1 || oclsci_die "no Python ($OCLSCI_PYTHON) on PATH"
        if ! "$OCLSCI_PYTHON" -c 'import oclsci' >/dev/null 2>&1; then
            export PYTHONPATH=$OCLSCI_ROOT${PYTHONPATH:+:$PYTHONPATH}
        fi
        export OCLSCI_PYTHON
    fi
}

# oclsci_launch [--srun SRUN-OPTIONS... --] CMD [ARGS...]: run slurm/task.sh CMD ARGS (CMD is
# oclsci or report, run in oclsci's environment) as a job step (srun) inside an allocation,
# directly outside one. The batch shell survives SIGTERM (time limit, scancel) and waits for
# the step to finish its checkpoint; a USR1 sent to the batch shell (--signal=B:USR1@T) is
# forwarded to the step. Returns the step's exit code.
oclsci_launch() {
    local -a srun_opts=()
    if [ "${1:-}" = --srun ]; then
        shift
        while [ "$#" -gt 0 ] && [ "$1" != -- ]; do srun_opts+=("$1"); shift; done
        shift
    fi
    local -a cmd
    if [ -n "${SLURM_JOB_ID:-}" ]; then
        # shellcheck disable=SC2206  # OCLSCI_SRUN_ARGS is a list of words on purpose
        # srun no longer takes --cpus-per-task from the allocation (Slurm >= 22.05): pass it on.
        # --export=ALL: the step gets this shell's settings even when the job was submitted
        # with --export=NONE (srun would read SLURM_EXPORT_ENV=NONE).
        cmd=(srun --export=ALL ${SLURM_CPUS_PER_TASK:+--cpus-per-task="$SLURM_CPUS_PER_TASK"}
             ${OCLSCI_SRUN_MPI:+--mpi="$OCLSCI_SRUN_MPI"} "${srun_opts[@]}" ${OCLSCI_SRUN_ARGS:-}
             "$OCLSCI_ROOT/slurm/task.sh" "$@")
    else
        cmd=("$OCLSCI_ROOT/slurm/task.sh" "$@")
    fi
    oclsci_show "${cmd[@]}"
    local pid rc
    trap 'oclsci_log "batch shell got SIGTERM; waiting for the step"' TERM
    trap 'oclsci_log "batch shell got SIGUSR1; forwarding it to the step"
          scancel --signal=USR1 "$OCLSCI_JOB_ID" 2>/dev/null || kill -USR1 "$pid" 2>/dev/null' USR1
    "${cmd[@]}" &
    pid=$!
    while :; do
        rc=0
        wait "$pid" || rc=$?
        # wait returns early (status > 128) when a trapped signal arrives: wait again.
        kill -0 "$pid" 2>/dev/null || break
    done
    trap - TERM USR1
    return "$rc"
}

# ---------------------------------------------------------------------------- report
# oclsci_report [SRUN-OPTIONS...]: what runs where: job, nodes, versions, OpenCL devices.
oclsci_report() {
    oclsci_log "job ${SLURM_JOB_ID:-(no Slurm job)} on ${SLURM_JOB_NODELIST:-$(uname -n)}," \
        "${SLURM_NTASKS:-1} task(s), partition ${SLURM_JOB_PARTITION:-none}," \
        "submitted from ${SLURM_SUBMIT_DIR:-$PWD}"
    oclsci_log "repository $OCLSCI_ROOT ($(git -C "$OCLSCI_ROOT" describe --always --dirty 2>/dev/null || echo 'not a git checkout'))"
    oclsci_log "environment: $(oclsci_env_summary)"
    # One line of versions and the device list per node (the first task of each node).
    local -a per_node=()
    [ -n "${SLURM_JOB_ID:-}" ] && per_node=(--srun --nodes="${SLURM_JOB_NUM_NODES:-1}"
                                            --ntasks="${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 --)
    oclsci_launch "${per_node[@]}" report || oclsci_log "warning: the report step failed (continuing)"
    oclsci_selftest "${per_node[@]}"
}

# oclsci_selftest: with OCLSCI_SELFTEST=1, `oclsci selftest --quick [--device SPEC]` on every
# node before the real work, so that a bad node (driver, device, build) fails the job at once
# with the selftest's report rather than hours later.
oclsci_selftest() {
    case ${OCLSCI_SELFTEST:-0} in
        1|yes) ;;
        0|no|'') return 0 ;;
        *) oclsci_die "OCLSCI_SELFTEST=$OCLSCI_SELFTEST: expected 1 or 0" ;;
    esac
    local rc=0
    oclsci_launch "$@" oclsci selftest --quick ${OCLSCI_DEVICE:+--device "$OCLSCI_DEVICE"} || rc=$?
    [ "$rc" = 0 ] || oclsci_die "oclsci selftest failed (exit code $rc) on ${SLURM_JOB_NODELIST:-$(uname -n)}: not running the job"
    oclsci_log "selftest passed on ${SLURM_JOB_NODELIST:-$(uname -n)}"
}

oclsci_env_summary() {
    if [ "$OCLSCI_USE_GUIX" = yes ]; then
        echo "guix time-machine -C $OCLSCI_GUIX_CHANNELS, manifest variant $OCLSCI_GUIX_VARIANT${OCLSCI_GUIX_MPI:+ + mpi}"
    else
        echo "current environment, $(command -v "$OCLSCI_PYTHON")${PYTHONPATH:+ (PYTHONPATH=$PYTHONPATH)}"
    fi
}

# ---------------------------------------------------------------------------- jacobi
# oclsci_srun_mpi: how srun connects the ranks of an MPI script (OCLSCI_GUIX_MPI=yes) with
# several tasks. OCLSCI_SRUN_MPI, else Slurm's MpiDefault; where that is none, the plug-in that
# the environment's MPI speaks (MPICH: pmi2, Open MPI: pmix), if `srun --mpi=list` has it.
# Without one the job stops with a line naming the fix: otherwise every rank would run alone.
oclsci_srun_mpi() {
    [ -z "${OCLSCI_SRUN_MPI:-}" ] && [ "${OCLSCI_GUIX_MPI:-}" = yes ] \
        && [ -n "${SLURM_JOB_ID:-}" ] && [ "${SLURM_NTASKS:-1}" -gt 1 ] || return 0
    local default
    default=$(scontrol show config 2>/dev/null | sed -n 's/^MpiDefault *= *//p') || default=
    [ -n "$default" ] && [ "$default" != none ] && return 0
    local library plugins order plugin
    library=$("$OCLSCI_ROOT/slurm/task.sh" mpi-library 2>/dev/null) || library=unknown
    plugins=$(srun --mpi=list 2>&1 | tr -c 'a-z0-9_\n' ' ') || plugins=
    case $library in
        mpich) order="pmi2 pmix" ;;
        *) order="pmix pmi2" ;;
    esac
    for plugin in $order; do
        if printf '%s\n' "$plugins" | grep -qw "$plugin"; then
            OCLSCI_SRUN_MPI=$plugin
            oclsci_log "srun --mpi=$plugin: Slurm's MpiDefault is none, and the environment's MPI is $library"
            return 0
        fi
    done
    oclsci_die "Slurm's MpiDefault is none and srun offers neither pmi2 nor pmix (srun --mpi=list): set OCLSCI_SRUN_MPI to the plug-in of your MPI (docs/slurm.md)"
}

# oclsci_jacobi [SRUN-OPTIONS...]: run `oclsci jacobi` as one step, with a checkpoint; when it
# stops on a signal (time limit near), resubmit this script to resume from the checkpoint.
oclsci_jacobi() {
    oclsci_srun_mpi
    local jobid=${SLURM_JOB_ID:-local-$$}
    : "${OCLSCI_OUTPUT:=oclsci-jacobi-$jobid.npy}"
    OCLSCI_OUTPUT=$(oclsci_abspath "$OCLSCI_OUTPUT")
    : "${OCLSCI_CHECKPOINT:=${OCLSCI_OUTPUT%.npy}.ckpt.npz}"
    OCLSCI_CHECKPOINT=$(oclsci_abspath "$OCLSCI_CHECKPOINT")
    [ -n "${OCLSCI_INPUT:-}" ] && OCLSCI_INPUT=$(oclsci_abspath "$OCLSCI_INPUT")
    export OCLSCI_OUTPUT OCLSCI_CHECKPOINT OCLSCI_INPUT

    local -a args=(jacobi)
    [ -n "${OCLSCI_INPUT:-}" ] && args+=("$OCLSCI_INPUT")
    args+=(-o "$OCLSCI_OUTPUT" --checkpoint "$OCLSCI_CHECKPOINT")
    [ -n "${OCLSCI_ITERATIONS:-}" ] && args+=(--iterations "$OCLSCI_ITERATIONS")
    [ -n "${OCLSCI_CHECKPOINT_EVERY:-}" ] && args+=(--checkpoint-every "$OCLSCI_CHECKPOINT_EVERY")
    [ -n "${OCLSCI_DEVICE:-}" ] && args+=(--device "$OCLSCI_DEVICE")
    if [ -n "${OCLSCI_RESUME:-}" ]; then
        OCLSCI_RESUME=$(oclsci_abspath "$OCLSCI_RESUME")
        [ -f "$OCLSCI_RESUME" ] || oclsci_die "OCLSCI_RESUME=$OCLSCI_RESUME: no such file"
        oclsci_log "resuming from $OCLSCI_RESUME${OCLSCI_RESUBMIT_COUNT:+ (resubmission $OCLSCI_RESUBMIT_COUNT)}"
        args+=(--resume "$OCLSCI_RESUME")
    fi
    # shellcheck disable=SC2206  # extra options, split into words on purpose
    args+=(${OCLSCI_ARGS:-} ${OCLSCI_CASE_ARGS:-})

    local rc=0
    oclsci_launch ${1:+--srun "$@" --} oclsci "${args[@]}" || rc=$?
    case $rc in
        0)
            oclsci_log "done: $OCLSCI_OUTPUT"
            rm -f "$OCLSCI_CHECKPOINT"
            return 0 ;;
        "$OCLSCI_EX_TEMPFAIL")
            oclsci_log "stopped on a signal; checkpoint $OCLSCI_CHECKPOINT"
            oclsci_resubmit "$@"
            return $? ;;
        *)
            # The step ended by a signal some other way: a rank killed by a second signal
            # (srun passes SIGTERM on at the time limit or scancel, then forces the step's end)
            # while rank 0 wrote the checkpoint, or srun's own exit code after it forced the
            # end at the time limit. Resume from the checkpoint (a periodic one at worst: the
            # result is the same, bit for bit).
            if [ -f "$OCLSCI_CHECKPOINT" ] && { [ "$rc" -gt 128 ] || oclsci_at_time_limit; }; then
                oclsci_log "stopped on a signal (step exit code $rc); checkpoint $OCLSCI_CHECKPOINT"
                oclsci_resubmit "$@"
                return $?
            fi
            oclsci_log "oclsci failed with exit code $rc"
            return "$rc" ;;
    esac
}

# Whether this job is ending at its time limit (Slurm's reason TimeLimit, or state TIMEOUT).
oclsci_at_time_limit() {
    [ -n "${SLURM_JOB_ID:-}" ] || return 1
    [ "$(oclsci_job_field Reason)" = TimeLimit ] || [ "$(oclsci_job_field JobState)" = TIMEOUT ]
}

oclsci_abspath() { case $1 in /*) echo "$1" ;; *) echo "$OCLSCI_WORKDIR/$1" ;; esac; }

# oclsci_resubmit: submit this same script again, with the same resources, to resume from the
# checkpoint once this job has ended. Not when the user cancelled the job (scancel), nor
# outside Slurm, nor after OCLSCI_MAX_RESUBMITS resubmissions.
oclsci_resubmit() {
    [ -f "$OCLSCI_CHECKPOINT" ] || { oclsci_log "error: no checkpoint $OCLSCI_CHECKPOINT"; return 1; }
    # Quoted for the shell (%q): the hint can be pasted whatever the paths hold.
    local how
    how=$(printf 'resume with: OCLSCI_RESUME=%q OCLSCI_OUTPUT=%q slurm/submit ...' \
        "$OCLSCI_CHECKPOINT" "$OCLSCI_OUTPUT")
    if [ -z "${SLURM_JOB_ID:-}" ] || [ "${OCLSCI_RESUBMIT:-yes}" = no ]; then
        oclsci_log "not resubmitting; $how"
        return "$OCLSCI_EX_TEMPFAIL"
    fi
    # Continue after the warning signal (the job still runs) or the time limit; not after
    # scancel, a preemption or a node failure (the job ends for another reason).
    local state reason count=$(( ${OCLSCI_RESUBMIT_COUNT:-0} + 1 ))
    state=$(oclsci_job_field JobState) reason=$(oclsci_job_field Reason)
    if [ "$state" != RUNNING ] && [ "$reason" != TimeLimit ]; then
        oclsci_log "job ending (state $state, reason $reason), e.g. cancelled: not resubmitting; $how"
        return "$OCLSCI_EX_TEMPFAIL"
    fi
    if [ "$count" -gt "${OCLSCI_MAX_RESUBMITS:-20}" ]; then
        oclsci_log "already resubmitted ${OCLSCI_RESUBMIT_COUNT} times (OCLSCI_MAX_RESUBMITS): stopping; $how"
        return "$OCLSCI_EX_TEMPFAIL"
    fi
    local -a opts
    mapfile -t opts < <(oclsci_job_options)
    # The script itself, not Slurm's spool copy ($0): the continuation then finds the
    # repository from its own Command, even with --export=NONE.
    local script
    script=$(oclsci_job_field Command)
    [ -r "$script" ] || script=$OCLSCI_ROOT/slurm/${OCLSCI_SCRIPT:-$(basename -- "$0")}
    [ -r "$script" ] || { oclsci_log "error: cannot find this job's script to resubmit; $how"; return 1; }
    local out
    out=$(
        # The new job must not inherit this job's SLURM_* variables (srun would read them).
        for v in "${!SLURM_@}"; do [ "$v" = SLURM_CONF ] || unset "$v"; done
        export OCLSCI_RESUME=$OCLSCI_CHECKPOINT OCLSCI_RESUBMIT_COUNT=$count OCLSCI_ROOT
        # --export=ALL: this shell's variables (the job's, OCLSCI_*), whatever the first job's
        # --export was.
        sbatch --parsable --dependency="afterany:$OCLSCI_JOB_ID" --open-mode=append \
            --export=ALL "${opts[@]}" "$script"
    ) || { oclsci_log "error: resubmission failed; $how"; return 1; }
    oclsci_log "resubmitted as job ${out%%;*} (resubmission $count), to resume from $OCLSCI_CHECKPOINT"
    return 0
}

# `scontrol -o show job` of this job as KEY=VALUE lines: values may hold spaces (paths, job
# names), so the line is cut only before the next " Key=" (a word of letters, /, : and _;
# only a job name can hold that, and oclsci_job_options asks squeue for the name).
oclsci_job_fields() {
    scontrol -o show job "$OCLSCI_JOB_ID" 2>/dev/null | head -n 1 |
        sed -E 's/ ([A-Za-z][A-Za-z0-9/:_]*)=/\n\1=/g' | sed -E 's/[[:space:]]+$//'
}

# One field of `scontrol show job` for this job.
oclsci_job_field() {
    oclsci_job_fields | sed -n "s/^$1=//p" | head -n 1
}

# The sbatch options that request what this job got: the options given on the sbatch
# command line are not in the script, so they are read back from `scontrol show job`.
oclsci_job_options() {
    local kv k v n
    while IFS= read -r kv; do
        k=${kv%%=*} v=${kv#*=}
        case $v in ''|'(null)'|N/A|'*') continue ;; esac
        case $k in
            JobName) echo "--job-name=$(squeue -h -j "$OCLSCI_JOB_ID" -o %j 2>/dev/null || echo "$v")" ;;
            Partition) echo "--partition=$v" ;;
            Account) echo "--account=$v" ;;
            QOS) echo "--qos=$v" ;;
            Reservation) echo "--reservation=$v" ;;
            Features) echo "--constraint=$v" ;;
            ReqNodeList) echo "--nodelist=$v" ;;
            ExcNodeList) echo "--exclude=$v" ;;
            # A completing job's NumNodes counts only the nodes not yet released (one of two,
            # at a time limit, had been: "Requested node configuration is not available").
            NumNodes) echo "--nodes=${SLURM_JOB_NUM_NODES:-$v}" ;;
            NumTasks) echo "--ntasks=$v" ;;
            CPUs/Task) echo "--cpus-per-task=$v" ;;
            NtasksPerN:B:S:C) n=${v%%:*}; [ "$n" != 0 ] && echo "--ntasks-per-node=$n" ;;
            TimeLimit) [ "$v" != UNLIMITED ] && [ "$v" != Partition_Limit ] && echo "--time=$v" ;;
            MinMemoryNode) [ "$v" != 0 ] && echo "--mem=$v" ;;
            MinMemoryCPU) [ "$v" != 0 ] && echo "--mem-per-cpu=$v" ;;
            OverSubscribe) [ "$v" = NO ] && echo "--exclusive" ;;
            TresPerNode) oclsci_gpus --gpus-per-node "$v" ;;
            TresPerJob) oclsci_gpus --gpus "$v" ;;
            TresPerTask) oclsci_gpus --gpus-per-task "$v" ;;
            StdOut) echo "--output=$v" ;;
            StdErr) echo "--error=$v" ;;
            WorkDir) echo "--chdir=$v" ;;
        esac
    done < <(oclsci_job_fields)
}
# gres:gpu:2 (Slurm <= 22) or gres/gpu:2 (later) -> gpu:2; several are comma-separated.
oclsci_gres() { echo "$1" | sed 's/gres[:\/]//g'; }
# TresPer*: gres:gpu:2 -> OPTION=2; any other GRES -> --gres=...
oclsci_gpus() {
    local g; g=$(oclsci_gres "$2")
    case $g in gpu:*) echo "$1=${g#gpu:}" ;; *) echo "--gres=$g" ;; esac
}

# ---------------------------------------------------------------------------- bench, sweep
# oclsci_bench: `oclsci bench --json STEM.json --markdown STEM.md OCLSCI_ARGS` as one step.
oclsci_bench() {
    : "${OCLSCI_OUTPUT:=oclsci-bench-${SLURM_JOB_ID:-local-$$}}"
    local stem
    stem=$(oclsci_abspath "${OCLSCI_OUTPUT%.json}")
    local -a args=(bench --json "$stem.json" --markdown "$stem.md")
    [ -n "${OCLSCI_DEVICE:-}" ] && args+=(--device "$OCLSCI_DEVICE")
    # shellcheck disable=SC2206  # extra options, split into words on purpose
    args+=(${OCLSCI_ARGS:-})
    local rc=0
    oclsci_launch ${SLURM_JOB_ID:+--srun --ntasks=1 --} oclsci "${args[@]}" || rc=$?
    if [ "$rc" = 0 ]; then
        oclsci_log "done: $stem.json $stem.md"
    else
        oclsci_log "oclsci bench failed with exit code $rc"
    fi
    return "$rc"
}

# oclsci_sweep_case: the case of this array task, line I+1 of OCLSCI_SWEEP_FILE (comments and
# blank lines skipped), added to the options of `oclsci jacobi`; OCLSCI_OUTPUT defaults to
# oclsci-sweep-ARRAYID_I.npy.
oclsci_sweep_case() {
    : "${OCLSCI_SWEEP_INDEX:=${SLURM_ARRAY_TASK_ID:-0}}"
    case $OCLSCI_SWEEP_INDEX in
        ''|*[!0-9]*|??????????*)  # not digits, or 10 of them or more (beyond shell arithmetic)
            oclsci_die "OCLSCI_SWEEP_INDEX=$OCLSCI_SWEEP_INDEX: expected a non-negative integer (the case's line in the sweep file, counting from 0)" ;;
    esac
    OCLSCI_SWEEP_INDEX=$((10#$OCLSCI_SWEEP_INDEX))  # 08 is 8, not a bad octal number
    OCLSCI_SWEEP_FILE=$(oclsci_abspath "${OCLSCI_SWEEP_FILE:-$OCLSCI_ROOT/slurm/sweep.txt}")
    [ -e "$OCLSCI_SWEEP_FILE" ] || oclsci_die "OCLSCI_SWEEP_FILE=$OCLSCI_SWEEP_FILE: the file does not exist"
    { [ -f "$OCLSCI_SWEEP_FILE" ] && [ -r "$OCLSCI_SWEEP_FILE" ]; } ||
        oclsci_die "OCLSCI_SWEEP_FILE=$OCLSCI_SWEEP_FILE: not a readable file"
    OCLSCI_CASE_ARGS=$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$OCLSCI_SWEEP_FILE" |
                       sed -n "$((OCLSCI_SWEEP_INDEX + 1))p") || true
    [ -n "$OCLSCI_CASE_ARGS" ] || oclsci_die "$OCLSCI_SWEEP_FILE has no case $OCLSCI_SWEEP_INDEX"
    : "${OCLSCI_OUTPUT:=oclsci-sweep-${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-local-$$}}_$OCLSCI_SWEEP_INDEX.npy}"
    # A resubmitted case is an ordinary job: it finds its case through these variables.
    export OCLSCI_SWEEP_INDEX OCLSCI_SWEEP_FILE OCLSCI_OUTPUT
    oclsci_log "sweep case $OCLSCI_SWEEP_INDEX: $OCLSCI_CASE_ARGS"
}
