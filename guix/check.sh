#!/bin/bash
# guix/check.sh [--setup | --fail-fast] [SRC] -- evaluate oclsci's Guix files with a real Guix, offline.
#
# SRC (default: the checkout holding this script) is a directory with guix/*.scm and the
# files the package is built from. For every Guix file, with the Guix of Debian unstable's
# `guix' package (run in a debootstrap chroot; no network, no substitutes), it runs
#   guix build -n -f guix/oclsci.scm            the package evaluates, its inputs exist
#   guix build -n -m M                           each manifest, alone
#   guix package -n -p TMP -m V [-m ADD-ON]      each profile that docs/ and slurm/ build:
#                                                fails on colliding entries (two NumPys)
#   guix shell -n ... -m V [-m ADD-ON]           slurm/task.sh's command lines, per variant
#   guix shell -n --pure python-numpy ...        the seed's ad-hoc command, and docs/guix.md's
#   guix lint (offline checkers) on the package
# and exits 1 if any of them fails (their output says which), 0 when all pass.
#
# The chroot lives in $OCLSCI_GUIX_CACHE (default /var/cache/oclsci-ci/guix) and is built
# there when missing (needs root, debootstrap and Debian's archive: a few minutes), then reused,
# store included, by later runs on the same machine. --setup only builds it; --fail-fast stops
# at the first failed check.
# Exit codes: 0 all checks pass; 1 a check failed; 2 usage; 3 no Guix could be had.
#
# What cannot be checked offline: `guix time-machine -C guix/channels.scm' (it fetches the
# pinned Guix), builds (no substitutes, no sources) and anything on the GPUs. The Guix used is
# Debian's (1.5.0 when written), not the pin: package names and versions may differ slightly.
set -euo pipefail

usage="usage: guix/check.sh [--setup | --fail-fast] [SRC]"
setup_only=no fail_fast=no
case ${1:-} in
    --setup) setup_only=yes; shift ;;
    --fail-fast) fail_fast=yes; shift ;;
esac
case ${1:-} in -*) echo "$usage" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "$usage" >&2; exit 2; }
src=$(cd "${1:-$(dirname "$0")/..}" 2>/dev/null && pwd) \
    || { echo "guix/check.sh: no such directory: $1" >&2; exit 2; }
[ -f "$src/guix/oclsci.scm" ] || { echo "guix/check.sh: $src/guix/oclsci.scm is missing" >&2; exit 2; }

cache=${OCLSCI_GUIX_CACHE:-/var/cache/oclsci-ci/guix}
mirror=${OCLSCI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/root

die3() { echo "guix/check.sh: $*" >&2; exit 3; }

# --- the chroot: Debian unstable with its `guix' package --------------------------------------
provision() {
    [ "$(id -u)" = 0 ] || die3 "no Guix chroot in $root and not root: cannot build one"
    command -v debootstrap >/dev/null || die3 "debootstrap is missing (apt-get install debootstrap)"
    local new=$cache/root.new log=$cache/provision.log
    echo "guix/check.sh: building the Guix chroot in $root (log: $log)" >&2
    rm -rf "$new"
    mkdir -p "$new"
    {
        debootstrap --variant=minbase sid "$new" "$mirror" &&
        mount -t proc proc "$new/proc" &&
        { chroot "$new" /bin/sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d &&
            chmod +x /usr/sbin/policy-rc.d &&
            echo "Acquire::Check-Valid-Until \"false\";" > /etc/apt/apt.conf.d/99oclsci &&
            apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends guix
            '; rc=$?; umount "$new/proc"; exit_rc=$rc; [ $rc = 0 ]; }
    } >"$log" 2>&1 || { tail -20 "$log" >&2; die3 "building the chroot failed (see $log)"; }
    chroot "$new" guix --version | head -1 >&2
    mv "$new" "$root"
}

mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9                                 # one check at a time per chroot (CI, tests)
[ -x "$root/usr/bin/guix" ] || provision
[ "$setup_only" = yes ] && { echo "guix/check.sh: chroot ready in $root" >&2; exit 0; }

# --- a daemon in the chroot, and the files to check ------------------------------------------
[ "$(id -u)" = 0 ] || die3 "running Guix's daemon in the chroot needs root"
work=$(mktemp -d "$root/tmp/oclsci-check.XXXXXX")
in_work=/tmp/${work##*/}
daemon=
cleanup() {
    local status=$?
    set +e
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; fi
    for m in dev proc; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"

# The files the package is built from: Git's tracked files (as guix/oclsci.scm selects them),
# or every file when SRC is not a Git checkout.
mkdir -p "$work/src"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1 \
        && [ "$(git -C "$src" rev-parse --show-toplevel)" = "$src" ]; then
    (cd "$src" && git ls-files -z --cached | xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' \
        | tar --null -T - -cf -) | tar -xf - -C "$work/src"
else
    (cd "$src" && tar --exclude=.git --exclude=__pycache__ --exclude=.pytest_cache -cf - .) \
        | tar -xf - -C "$work/src"
fi

in_chroot() {
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
        GUIX_LOCPATH= XDG_CACHE_HOME="$in_work/cache" /bin/sh -c 'cd "$0/src" && exec "$@"' \
        "$in_work" "$@"
}
users=()
chroot "$root" getent group guixbuild >/dev/null && users=(--build-users-group=guixbuild)
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
    guix-daemon "${users[@]}" --disable-chroot --no-substitutes >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do
    [ -S "$root/var/guix/daemon-socket/socket" ] && break
    kill -0 "$daemon" 2>/dev/null || { cat "$work/daemon.log" >&2; die3 "guix-daemon did not start"; }
    sleep 0.2
done
in_chroot guix describe >/dev/null 2>&1 || true
echo "guix/check.sh: $(in_chroot guix --version | head -1), daemon without substitutes or network"

# --- the checks -------------------------------------------------------------------------------
failed=()
check() {                               # check DESCRIPTION GUIX-ARGS...
    local what=$1 out
    shift
    out=$(in_chroot guix "$@" 2>&1) && status=0 || status=$?
    # `guix build -n' and friends say "error:" and exit non-zero; `guix lint' exits 0 and
    # prints one line per problem, "FILE:LINE:COL: oclsci@VERSION: MESSAGE".
    # Guix 1.5.0's "Consider running 'guix pull'" warning (it is older than a few months) and
    # the locale warning are not about the files.
    if [ "$status" != 0 ] || grep -vE "warning: failed to install locale|Consider running 'guix pull'" <<<"$out" \
            | grep -qE '(^|: )(error|warning):|: oclsci@[^ ]*: '; then
        echo "FAIL  $what: guix $*"
        sed 's/^/      /' <<<"$out"
        failed+=("$what")
        if [ "$fail_fast" = yes ]; then
            echo "guix/check.sh: stopped at the first failed check ($what)"
            exit 1
        fi
    else
        echo "ok    $what"
    fi
}

variants=(guix/manifest.scm guix/manifest-amd.scm guix/manifest-nvidia.scm)
add_ons=(guix/manifest-mpi.scm guix/manifest-dev.scm)
profile=$in_work/profile

# (Each manifest alone is evaluated by the profiles below, which also resolve the derivations.)
check "package evaluates" build -n -f guix/oclsci.scm
# Profiles, as guix package builds them: colliding entries are errors there, while
# `guix shell' lets them through (and merges two NumPys into one environment).
for v in "${variants[@]}"; do
    check "profile $v" package -n -p "$profile" -m "$v"
    for a in "${add_ons[@]}"; do
        check "profile $v + $a" package -n -p "$profile" -m "$v" -m "$a"
    done
done
# slurm/task.sh builds its profile with `guix package -p' (checked above) and docs/guix.md
# enters the variants with `guix shell --pure'.
for v in "${variants[@]}"; do
    check "shell $v" shell -n --pure --preserve='^SLURM' -m "$v" -- true
done
# The seed's own ad-hoc command on PlaFRIM, word for word (docs/guix.md quotes it): it names
# "python-numpy", so its environment merges two NumPys (`guix shell' allows that), but it
# must still evaluate. Then docs/guix.md's ad-hoc command closer to it.
check "seed's ad-hoc shell" shell -n --pure python-numpy python-pyopencl vim coreutils less grep \
    which gawk ocl-icd python rocm-opencl-runtime opencl-headers opencl-icd-loader sed bash
check "docs' ad-hoc shell" shell -n --pure python python-numpy python-pyopencl python-mako \
    python-click python-pillow rocm-opencl-runtime clinfo -- clinfo -l
# Guix's own linter, offline checkers, on the package (a module wrapping guix/oclsci.scm).
mkdir -p "$work/lint"
printf '(define-module (oclsci-lint) #:declarative? #f)\n(define-public oclsci-under-lint (load "%s/src/guix/oclsci.scm"))\n' \
    "$in_work" >"$work/lint/oclsci-lint.scm"
# The `derivation' checker is left out: it computes the derivations for every system Guix
# supports (minutes here), while `guix build -n' above did so for this one (x86_64-linux).
# --no-network also leaves out `home-page' (a network checker): it would report the package's
# `(home-page #f)' as "invalid value for home page" (guix/oclsci.scm says why it is #f).
check "guix lint (offline checkers)" lint --no-network --exclude=derivation \
    -L "$in_work/lint" oclsci

# Each run adds a copy of the checkout to the chroot's store: collect the garbage past 1 GiB.
if [ "$(du -sm "$root/gnu/store" | cut -f1)" -gt 1024 ]; then
    in_chroot guix gc >/dev/null 2>&1 || echo "guix/check.sh: warning: guix gc failed" >&2
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "guix/check.sh: ${#failed[@]} check(s) failed: ${failed[*]}"
    exit 1
fi
echo "guix/check.sh: all checks pass"
