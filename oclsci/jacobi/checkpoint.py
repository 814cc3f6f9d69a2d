"""Checkpoint files of a Jacobi run: the iterate, the right-hand side and the iteration count.

A checkpoint is a NumPy ``.npz`` file written atomically, so a run killed while saving leaves
the previous checkpoint intact. It carries the right-hand side too, so that a resumed run
needs no input file.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from oclsci.errors import InputError, first_line
from oclsci.io import atomic_path
from oclsci.jacobi.runner import MAX_ITERATIONS

FORMAT_VERSION = 1


@dataclass
class Checkpoint:
    """The state of a Jacobi run after ``iteration`` steps."""

    x: np.ndarray
    rhs: np.ndarray
    iteration: int
    original: np.ndarray | None = None  # the built-in picture, when the run started from it

    @property
    def dtype(self) -> np.dtype:
        """Floating-point type of the run."""
        return self.x.dtype


def save_checkpoint(path: str | os.PathLike, checkpoint: Checkpoint) -> None:
    """Write ``checkpoint`` to ``path`` atomically."""
    arrays = {"x": checkpoint.x, "rhs": checkpoint.rhs,
              "iteration": np.int64(checkpoint.iteration),
              "format_version": np.int64(FORMAT_VERSION)}
    if checkpoint.original is not None:
        arrays["original"] = checkpoint.original
    with atomic_path(path) as temporary, open(temporary, "wb") as stream:
        np.savez(stream, **arrays)
        stream.flush()
        os.fsync(stream.fileno())


def checkpoint_dtype(path: str | os.PathLike) -> str | None:
    """The dtype name of the iterate saved in checkpoint ``path``, read from its header only.

    None when the file cannot tell (missing or damaged): :func:`load_checkpoint` then says why.
    """
    try:
        with zipfile.ZipFile(path) as archive, archive.open("x.npy") as stream:
            version = npy_format.read_magic(stream)
            read_header = (npy_format.read_array_header_1_0 if version == (1, 0)
                           else npy_format.read_array_header_2_0)
            return read_header(stream)[2].name
    except Exception:  # noqa: BLE001 - any damage: load_checkpoint reports it
        return None


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read and check a checkpoint; any problem is an :class:`InputError` naming the file."""
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
    missing = {"x", "rhs", "iteration", "format_version"} - set(fields)
    if missing:
        raise InputError(f"checkpoint {path}: missing {', '.join(sorted(missing))}")
    for name in ("format_version", "iteration"):
        value = fields[name]
        if value.shape != () or not np.issubdtype(value.dtype, np.integer):
            raise InputError(f"checkpoint {path}: {name} is not an integer")
    if int(fields["format_version"]) != FORMAT_VERSION:
        raise InputError(f"checkpoint {path}: format version {int(fields['format_version'])} "
                         f"is not supported (expected {FORMAT_VERSION})")
    x, rhs = fields["x"], fields["rhs"]
    if x.ndim != 2 or x.shape != rhs.shape or x.size == 0:
        raise InputError(f"checkpoint {path}: inconsistent shapes {x.shape} and {rhs.shape}")
    if x.dtype not in (np.float32, np.float64):
        raise InputError(f"checkpoint {path}: unsupported dtype {x.dtype}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(rhs))):
        raise InputError(f"checkpoint {path}: holds NaN or infinite values")
    iteration = int(fields["iteration"])
    if not 0 <= iteration <= MAX_ITERATIONS:
        raise InputError(f"checkpoint {path}: iteration count {iteration} is out of range "
                         "(0 to 2**53)")
    original = fields.get("original")
    if original is not None and original.shape != x.shape:
        raise InputError(f"checkpoint {path}: picture shape {original.shape} != {x.shape}")
    return Checkpoint(x=x, rhs=rhs, iteration=iteration, original=original)
