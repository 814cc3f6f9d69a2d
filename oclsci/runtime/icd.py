"""Registration of OpenCL runtimes that pip installs but the ICD loader cannot find alone.

Intel's CPU runtime (``pip install 'oclsci[intel]'``: the PyPI packages ``intel-opencl-rt``,
``intel-cmplr-lib-rt`` and ``tbb``) puts ``libintelocl.so`` in the environment's ``lib/``, but
its own ICD file (``etc/OpenCL/vendors/intel-cpu.icd``) names
``/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so``, a placeholder that only conda's
post-link script rewrites, and lies in a folder that the pyopencl wheel's loader does not read.
So oclsci registers it itself, before the loader first lists platforms:

* it loads the runtime's libraries (TBB, Intel's maths libraries) with ``RTLD_GLOBAL`` from
  wherever pip put them, since ``LD_LIBRARY_PATH`` is read only when a process starts;
* it writes an ICD folder it manages (under ``$XDG_CACHE_HOME/oclsci/icd``, named by a hash
  of its content so that concurrent ranks agree) with the runtime's absolute path and the ICD
  files that the loader would otherwise have read (``OPENCL_VENDOR_PATH`` or
  /etc/OpenCL/vendors, so that NVIDIA's, ROCm's or Oclgrind's stay listed), and points
  ``OCL_ICD_VENDORS`` at it. Subprocesses inherit it.

A user who sets ``OCL_ICD_VENDORS`` chooses the runtimes: Intel's pip runtime is then not
added (an empty folder means no platform, exit 69, unless NVIDIA's driver is installed and
named by no ICD file: it is still added, since Guix profiles set ``OCL_ICD_VENDORS`` to
theirs). Platform indices do not move when the ``intel`` extra is installed:
:func:`oclsci.runtime.device.get_platforms` lists Intel's pip runtime last.

NVIDIA's driver library, when installed but named by no ICD file (Guix and NixOS profiles),
is added to that folder the same way.

``OCLSCI_REGISTER_ICDS=0`` turns this off. Only :mod:`oclsci.runtime.device` calls
:func:`register_pip_runtimes`.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import tempfile
import warnings
from importlib import metadata
from pathlib import Path

from oclsci.errors import OclsciWarning, pip_extra
from oclsci.runtime import cache_home

INTEL_DISTRIBUTION = "intel-opencl-rt"
INTEL_LIBRARY = "libintelocl.so"
INTEL_PLATFORM = "Intel(R) OpenCL"  # its platform's name (Intel's GPU platforms say more)
# libintelocl.so's DT_NEEDED that pip installs from other distributions (in load order).
INTEL_DEPENDENCIES = ("libtbb.so.12", "libimf.so", "libsvml.so", "libirng.so", "libintlc.so.5")
DEPENDENCY_DISTRIBUTIONS = (INTEL_DISTRIBUTION, "intel-cmplr-lib-rt", "tbb")
MARKER = "oclsci-managed-icds"
DISABLE_VARIABLE = "OCLSCI_REGISTER_ICDS"
DEFAULT_VENDORS_DIR = Path("/etc/OpenCL/vendors")

# NVIDIA's OpenCL library, where drivers put it: NixOS's /run/opengl-driver/lib, then the
# usual library folders. Guix and NixOS profiles have no nvidia.icd that names it
# (guix/nvidia-icd.sh and docs/guix.md; NixOS: hardware.opengl's ICD list is per-system).
NVIDIA_LIBRARY = "libnvidia-opencl.so.1"
NVIDIA_FOLDERS = ("/run/opengl-driver/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                  "/usr/lib", "/usr/lib/aarch64-linux-gnu")

_registered: list[str] | None = None
_keep_loaded: list[ctypes.CDLL] = []


def _distribution_libraries(name: str) -> dict[str, Path]:
    """Shared libraries that the installed distribution ``name`` owns, by file name."""
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return {}
    found = {}
    for entry in distribution.files or ():
        if ".so" in entry.name:
            path = Path(distribution.locate_file(entry)).resolve()
            if path.is_file():
                found.setdefault(entry.name, path)
    return found


def find_intel_runtime() -> Path | None:
    """Path of Intel's ``libintelocl.so`` when ``intel-opencl-rt`` is installed, else None."""
    return _distribution_libraries(INTEL_DISTRIBUTION).get(INTEL_LIBRARY)


def preload_intel_dependencies(runtime: Path) -> list[str]:
    """Load the runtime's dependencies globally; return the names that could not be found."""
    libraries: dict[str, Path] = {}
    for name in DEPENDENCY_DISTRIBUTIONS:
        for file_name, path in _distribution_libraries(name).items():
            libraries.setdefault(file_name, path)
    missing = []
    for name in INTEL_DEPENDENCIES:
        path = libraries.get(name, runtime.parent / name)
        if not path.is_file():
            missing.append(name)
            continue
        _keep_loaded.append(ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL))
    return missing


def loader_icd_lines(environ: dict[str, str]) -> list[tuple[str, str]]:
    """``(file_name, library)`` of the ICD files the loader reads without our folder."""
    current = environ.get("OCL_ICD_VENDORS", "")
    if current and Path(current).is_file():
        return [(Path(current).name, Path(current).read_text().strip())]
    # ocl-icd reads OPENCL_VENDOR_PATH instead of /etc/OpenCL/vendors when it is set.
    default = Path(environ.get("OPENCL_VENDOR_PATH") or DEFAULT_VENDORS_DIR)
    folder = Path(current) if current and Path(current).is_dir() else default
    lines = []
    for source in sorted(folder.glob("*.icd")) if folder.is_dir() else ():
        library = source.read_text(errors="replace").strip()
        if not library:
            continue
        if not os.path.isabs(library) and (source.parent / library).exists():
            library = str(source.parent / library)
        lines.append((source.name, library))
    return lines


def unlisted_nvidia_library(lines: list[tuple[str, str]]) -> str | None:
    """NVIDIA's OpenCL library when the driver is installed but no ICD file names it."""
    if any("nvidia" in library.lower() for _, library in lines):
        return None
    for folder in NVIDIA_FOLDERS:
        path = Path(folder) / NVIDIA_LIBRARY
        if path.exists():
            return str(path)
    return None


def _cache_root(environ: dict[str, str]) -> Path:
    return cache_home(environ) / "oclsci" / "icd"


def write_vendors_dir(lines: list[tuple[str, str]], environ: dict[str, str]) -> Path:
    """Write (once) the managed ICD folder listing ``lines``; return its path."""
    content = "".join(f"{name}\0{library}\n" for name, library in lines)
    digest = hashlib.sha256(content.encode()).hexdigest()[:16]
    roots = [_cache_root(environ), Path(tempfile.gettempdir()) / f"oclsci-icd-{os.getuid()}"]
    for root in roots:
        folder = root / digest
        if (folder / MARKER).exists():
            return folder
        try:
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
            for index, (name, library) in enumerate(lines):
                (staging / f"{index:02d}-{name}").write_text(f"{library}\n")
            (staging / MARKER).write_text("ICD files written by oclsci (oclsci/icd.py)\n")
            try:
                staging.rename(folder)
            except OSError:  # another process won the race: use its identical folder
                for child in staging.iterdir():
                    child.unlink()
                staging.rmdir()
            return folder
        except OSError:
            continue
    raise OSError("no writable folder for oclsci's ICD files (tried "
                  + ", ".join(str(r) for r in roots) + ")")


def register_pip_runtimes(environ: dict[str, str] | None = None) -> list[str]:
    """Make pip-installed runtimes (Intel's CPU runtime) visible to the ICD loader.

    Call before the first ``pyopencl.get_platforms()`` of the process; later calls return the
    first call's answer. Returns the libraries registered: Intel's runtime when installed,
    NVIDIA's when no ICD file names it; empty when there is none, when
    ``OCLSCI_REGISTER_ICDS=0``, or when registration failed (reported by a warning).
    """
    global _registered
    if _registered is not None:
        return _registered
    environ = os.environ if environ is None else environ
    _registered = []
    if environ.get(DISABLE_VARIABLE, "1").strip().lower() in ("0", "no", "false", "off"):
        return _registered
    if not sys.platform.startswith("linux"):
        return _registered
    runtime = find_intel_runtime()
    current = environ.get("OCL_ICD_VENDORS", "")
    if current and (Path(current) / MARKER).exists():  # inherited from an oclsci parent
        if runtime is not None:
            preload_intel_dependencies(runtime)
        _registered = [p.read_text().strip() for p in sorted(Path(current).glob("*.icd"))]
        return _registered
    lines = [entry for entry in loader_icd_lines(environ)
             if not entry[1].startswith("/opt/anaconda1anaconda2anaconda3")]
    added = []
    # OCL_ICD_VENDORS set by the user names the runtimes they want: Intel's is not added.
    if runtime is not None and not current:
        missing = preload_intel_dependencies(runtime)
        if missing:
            warnings.warn(f"Intel's OpenCL runtime ({runtime}) lacks {', '.join(missing)}; "
                          f"reinstall it with {pip_extra('intel')}", OclsciWarning,
                          stacklevel=2)
        else:
            added.append(("intel-cpu.icd", str(runtime)))
    nvidia = unlisted_nvidia_library(lines)
    if nvidia is not None:
        added.append(("nvidia.icd", nvidia))
    if not added:
        return _registered
    lines += added
    try:
        folder = write_vendors_dir(lines, environ)
    except OSError as error:
        warnings.warn(f"OpenCL runtimes not registered ({', '.join(lib for _, lib in added)}): "
                      f"{error}", OclsciWarning, stacklevel=2)
        return _registered
    environ["OCL_ICD_VENDORS"] = str(folder)
    _registered = [library for _, library in added]
    return _registered
