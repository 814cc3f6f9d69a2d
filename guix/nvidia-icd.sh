#!/bin/sh
# guix/nvidia-icd.sh DIR -- expose the host's NVIDIA OpenCL driver inside
# `guix shell --pure' (see guix/manifest-nvidia.scm and docs/guix.md).
#
# Guix has no NVIDIA driver: the driver is the host's libnvidia-opencl.so.1.
# This script writes
#   DIR/vendors/nvidia.icd   one line: the absolute file name of that library
#                            (Guix's glibc does not read the host's ld.so.cache,
#                            so a bare soname would not be found);
#   DIR/lib/                 symbolic links to the driver's own libraries
#                            (libnvidia-*.so*, libcuda.so*) and nothing else,
#                            for the libraries the driver loads by soname;
# and prints the matching `export' lines for a POSIX shell:
#
#   eval "$(guix/nvidia-icd.sh "$HOME/.cache/oclsci/nvidia")"
#   guix time-machine -C guix/channels.scm -- shell --pure \
#     --preserve='^OCL_ICD_VENDORS$' --preserve='^LD_LIBRARY_PATH$' \
#     -m guix/manifest-nvidia.scm -- clinfo -l
#
# LD_LIBRARY_PATH is set to DIR/lib alone on purpose: host directories such as
# /usr/lib64 must not leak into Guix programs.
# NVIDIA_LIBDIR=/some/dir makes the script use that directory instead of
# looking the library up with `ldconfig -p' and in the usual directories.
set -eu

usage="usage: $0 DIR"
dir=${1:?$usage}

find_library() {
    if [ -n "${NVIDIA_LIBDIR:-}" ]; then
        [ -e "$NVIDIA_LIBDIR/libnvidia-opencl.so.1" ] &&
            echo "$NVIDIA_LIBDIR/libnvidia-opencl.so.1"
        return 0
    fi
    for ldconfig in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
        if command -v "$ldconfig" >/dev/null 2>&1; then
            found=$("$ldconfig" -p 2>/dev/null |
                    awk '$1 == "libnvidia-opencl.so.1" && $(NF-1) == "=>" { print $NF; exit }')
            if [ -n "$found" ]; then
                echo "$found"
                return 0
            fi
        fi
    done
    for d in /usr/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64/nvidia /usr/lib/nvidia /usr/lib; do
        if [ -e "$d/libnvidia-opencl.so.1" ]; then
            echo "$d/libnvidia-opencl.so.1"
            return 0
        fi
    done
    return 0
}

lib=$(find_library)
if [ -z "$lib" ]; then
    echo "$0: libnvidia-opencl.so.1 not found (is the NVIDIA driver installed on this node? set NVIDIA_LIBDIR)" >&2
    exit 1
fi
libdir=$(dirname "$lib")

mkdir -p "$dir/vendors" "$dir/lib"
dir=$(cd "$dir" && pwd)
printf '%s\n' "$lib" > "$dir/vendors/nvidia.icd"

# Refresh the links (the driver may have been updated since the last run).
rm -f "$dir"/lib/libnvidia-* "$dir"/lib/libcuda.*
for f in "$libdir"/libnvidia-*.so* "$libdir"/libcuda.so*; do
    [ -e "$f" ] || continue
    ln -s "$f" "$dir/lib/$(basename "$f")"
done

printf "export OCL_ICD_VENDORS='%s'\n" "$dir/vendors"
printf "export LD_LIBRARY_PATH='%s'\n" "$dir/lib"
