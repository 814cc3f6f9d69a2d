"""Checkpoint files, whatever the workload: NumPy ``.npz`` archives written atomically, read
back with every field checked, and the one line a run stopped by a signal ends with.

A checkpoint holds named arrays, a step counter and a format version. :func:`save_arrays`
writes it through :func:`oclsci.io.atomic_path` (a run killed while saving leaves the previous
checkpoint intact); :func:`load_arrays` refuses a missing, damaged or foreign file with an
:class:`~oclsci.errors.InputError` naming it. Each workload decides what its arrays are
(``oclsci.jacobi.checkpoint``, ``oclsci.stencil.checkpoint``).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from oclsci.errors import InputError, Interrupted, first_line
from oclsci.io import atomic_path
from oclsci.runtime.signals import signal_name

MAX_COUNT = 2**53  # step counts beyond this are refused (exact in float64 and int64)


def save_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray], *, counter: str,
                count: int, version: int) -> None:
    """Write ``arrays``, the step counter ``counter`` = ``count`` and ``format_version`` to
    ``path`` atomically (flushed to disk before the rename)."""
    fields = dict(arrays)
    fields[counter] = np.int64(count)
    fields["format_version"] = np.int64(version)
    with atomic_path(path) as temporary, open(temporary, "wb") as stream:
        np.savez(stream, **fields)
        stream.flush()
        os.fsync(stream.fileno())


def saved_dtype(path: str | os.PathLike, name: str) -> str | None:
    """The dtype name of array ``name`` in checkpoint ``path``, read from its header only;
    None when the file cannot tell (missing or damaged): :func:`load_arrays` then says why."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(f"{name}.npy") as stream:
            version = npy_format.read_magic(stream)
            read_header = (npy_format.read_array_header_1_0 if version == (1, 0)
                           else npy_format.read_array_header_2_0)
            return read_header(stream)[2].name
    except Exception:  # noqa: BLE001 - any damage: load_arrays reports it
        return None


def load_arrays(path: str | os.PathLike, required: Iterable[str], *, counter: str,
                version: int) -> dict[str, np.ndarray]:
    """The arrays of checkpoint ``path``, after checking that it is a readable ``.npz`` with
    every ``required`` array, an integer ``format_version`` equal to ``version`` and an
    integer ``counter`` in 0..2**53; any problem is an InputError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"checkpoint {path}: no such file")
    if not zipfile.is_zipfile(path):
        raise InputError(f"checkpoint {path}: not a checkpoint (.npz) file")
    try:
        with np.load(path, allow_pickle=False) as data:
            fields = {name: data[name] for name in data.files}
    except Exception as error:  # noqa: BLE001 - zip and npy readers raise many kinds
        raise InputError(f"checkpoint {path}: not a readable checkpoint "
                         f"({first_line(error)})") from None
    missing = {*required, counter, "format_version"} - set(fields)
    if missing:
        raise InputError(f"checkpoint {path}: missing {', '.join(sorted(missing))}")
    for name in ("format_version", counter):
        value = fields[name]
        if value.shape != () or not np.issubdtype(value.dtype, np.integer):
            raise InputError(f"checkpoint {path}: {name} is not an integer")
    if int(fields["format_version"]) != version:
        raise InputError(f"checkpoint {path}: format version {int(fields['format_version'])} "
                         f"is not supported (expected {version})")
    if not 0 <= int(fields[counter]) <= MAX_COUNT:
        raise InputError(f"checkpoint {path}: {counter} count {int(fields[counter])} is out "
                         "of range (0 to 2**53)")
    return fields


def stop_error(error: Interrupted, done: int, checkpoint: str | None,
               unit: str = "iteration") -> Interrupted:
    """What a run stopped by a signal ends with: the runner's ``error`` (exit 75 after its
    checkpoint, else 128 + the signal's number) told as one line naming the signal, the
    ``unit`` (iteration, step) it stopped at and what was kept."""
    by = "a stop request" if error.signum is None else signal_name(error.signum)
    if checkpoint:
        return Interrupted(f"stopped by {by} at {unit} {done}; checkpoint written to "
                           f"{checkpoint}: go on with --resume {checkpoint}",
                           signum=error.signum)
    return Interrupted(f"stopped by {by} at {unit} {done}; no output written (use "
                       "--checkpoint to keep the work)", exit_code=error.exit_code,
                       signum=error.signum)
