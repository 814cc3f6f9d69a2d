"""Finding Oclgrind and registering it beside the platforms already installed.

:func:`make_vendors_dir` writes a folder of ICD files (Oclgrind's and every other platform's)
for ``OCL_ICD_VENDORS``; :func:`oclgrind_environ` gives a subprocess's environment with it
and Oclgrind's checks on (:data:`CHECK_ENVIRONMENT`).
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

# Where distributions install Oclgrind's ICD library (Debian/Ubuntu first).
OCLGRIND_ICD_CANDIDATES = (
    "/usr/lib/oclgrind/liboclgrind-rt-icd.so",
    "/usr/lib/x86_64-linux-gnu/oclgrind/liboclgrind-rt-icd.so",
    "/usr/lib64/oclgrind/liboclgrind-rt-icd.so",
    "/usr/local/lib/liboclgrind-rt-icd.so",
    "/usr/lib/liboclgrind-rt-icd.so",
)

# Oclgrind's checks, all on. Kernels are built without optimisation: Oclgrind 21.10's
# uninitialised-value plugin stops with "Unsupported instruction: freeze" on the LLVM 14 code
# that clang's optimiser emits for `k / n` and `k % n`, and unoptimised code keeps every memory
# access of the source, so it is also the stricter check. PyOpenCL's binary cache is off so
# that no binary built without these options (or for another Oclgrind) is reused.
CHECK_ENVIRONMENT = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_BUILD_OPTIONS": "-cl-opt-disable",
    "OCLGRIND_MAX_ERRORS": "1000",
    # 64 KiB of local memory (Oclgrind's default is 32 KiB), as on the GPUs oclsci tunes for,
    # so that their default configurations run here too.
    "OCLGRIND_LOCAL_MEM_SIZE": "65536",
    "PYOPENCL_NO_CACHE": "1",
}


def find_oclgrind_icd() -> Path | None:
    """Oclgrind's ICD library (``$OCLSCI_OCLGRIND_ICD`` first), or None when not installed."""
    override = os.environ.get("OCLSCI_OCLGRIND_ICD")
    candidates = [override] if override else list(OCLGRIND_ICD_CANDIDATES)
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def missing_reason() -> str | None:
    """Why Oclgrind tests cannot run here, or None when they can."""
    if find_oclgrind_icd() is None:
        return ("Oclgrind is not installed (no liboclgrind-rt-icd.so in "
                f"{', '.join(OCLGRIND_ICD_CANDIDATES[:1])}...): `apt-get install -y oclgrind`, "
                "or set OCLSCI_OCLGRIND_ICD to the library")
    return None


def _pyopencl_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def wheel_loader_reads_its_own_icds() -> bool:
    """True for the pyopencl wheel's ICD loader, which always reads ``pyopencl/.libs/*.icd``.

    The wheel bundles a patched ocl-icd that reads the folder named by ``OCL_ICD_VENDORS`` (or
    /etc/OpenCL/vendors when unset) *and then* ``$PYOPENCL_HOME/.libs``, where the
    pocl-binary-distribution wheel puts ``pocl.icd`` and its ``libpocl``. Listing that ICD in
    our folder too would make PoCL appear twice.
    """
    folder = _pyopencl_dir()
    return bool(folder and glob.glob(str(folder / ".libs" / "libOpenCL*")))


def existing_icd_files() -> list[Path]:
    """The ICD files that the loader would read without ``OCL_ICD_VENDORS``, less Oclgrind's
    and Intel's pip runtime.

    ``OCL_ICD_VENDORS`` naming a folder replaces the default /etc/OpenCL/vendors (and a conda
    environment's ``etc/OpenCL/vendors``), so those are listed again in our folder. The pyopencl
    wheel's own ``.libs/*.icd`` (PoCL from ``pip install pocl-binary-distribution``) are read by
    the wheel's loader whatever ``OCL_ICD_VENDORS`` says, so they are listed only for another
    loader (a distribution's or conda's pyopencl).
    """
    folders = []
    current = os.environ.get("OCL_ICD_VENDORS")
    if current and Path(current).is_dir():
        folders.append(Path(current))
    else:
        folders.append(Path("/etc/OpenCL/vendors"))
    for prefix in (os.environ.get("CONDA_PREFIX"), sys.prefix):
        if prefix:
            folders.append(Path(prefix) / "etc" / "OpenCL" / "vendors")
    pyopencl_dir = _pyopencl_dir()
    if pyopencl_dir and not wheel_loader_reads_its_own_icds():
        folders.append(pyopencl_dir / ".libs")
    files: list[Path] = []
    for folder in folders:
        files.extend(sorted(folder.glob("*.icd")) if folder.is_dir() else [])
    # Oclgrind's is added by the caller; Intel's pip runtime (oclsci registers it in this
    # process's OCL_ICD_VENDORS when the intel extra is installed) is not what these folders
    # are for: a folder the user names lists what they chose.
    return [f for f in files
            if not any(word in f.read_text(errors="replace").lower()
                       for word in ("oclgrind", "libintelocl"))]


def make_vendors_dir(folder: str | os.PathLike, *, with_oclgrind: bool = True,
                     with_others: bool = True) -> Path:
    """Fill ``folder`` with ICD files: Oclgrind's, and those of the platforms already there.

    Relative library names in copied ICD files (``libpocl-....so``) are made absolute, so the
    loader finds them from the new folder.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if with_oclgrind:
        icd = find_oclgrind_icd()
        if icd is None:
            raise RuntimeError(missing_reason())
        (folder / "oclgrind.icd").write_text(f"{icd}\n")
    if with_others:
        for index, source in enumerate(existing_icd_files()):
            library = source.read_text().strip()
            if library and not os.path.isabs(library) and (source.parent / library).exists():
                library = str(source.parent / library)
            (folder / f"{index:02d}-{source.name}").write_text(f"{library}\n")
    return folder


def oclgrind_environ(vendors_dir: str | os.PathLike, base: dict | None = None, *,
                     checks: bool = True) -> dict[str, str]:
    """The environment of a subprocess that sees Oclgrind (and the other platforms)."""
    env = dict(os.environ if base is None else base)
    env["OCL_ICD_VENDORS"] = str(vendors_dir)
    for name in ("PYOPENCL_CTX", "PYOPENCL_TEST", "OCLSCI_TEST_DEVICES"):
        env.pop(name, None)
    if checks:
        env.update(CHECK_ENVIRONMENT)
    return env
