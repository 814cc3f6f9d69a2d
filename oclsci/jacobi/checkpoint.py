"""Checkpoint files of a Jacobi run: the iterate, the right-hand side and the iteration count.

A checkpoint is a NumPy ``.npz`` file written atomically (:mod:`oclsci.checkpoints`), so a run
killed while saving leaves the previous checkpoint intact. It carries the right-hand side too,
so that a resumed run needs no input file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oclsci.checkpoints import load_arrays, save_arrays, saved_dtype
from oclsci.errors import InputError

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
    arrays = {"x": checkpoint.x, "rhs": checkpoint.rhs}
    if checkpoint.original is not None:
        arrays["original"] = checkpoint.original
    save_arrays(path, arrays, counter="iteration", count=checkpoint.iteration,
                version=FORMAT_VERSION)


def checkpoint_dtype(path: str | os.PathLike) -> str | None:
    """The dtype name of the iterate saved in checkpoint ``path``, read from its header only.

    None when the file cannot tell (missing or damaged): :func:`load_checkpoint` then says why.
    """
    return saved_dtype(path, "x")


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read and check a checkpoint; any problem is an :class:`InputError` naming the file."""
    path = Path(path)
    fields = load_arrays(path, ("x", "rhs"), counter="iteration", version=FORMAT_VERSION)
    x, rhs = fields["x"], fields["rhs"]
    if x.ndim != 2 or x.shape != rhs.shape or x.size == 0:
        raise InputError(f"checkpoint {path}: inconsistent shapes {x.shape} and {rhs.shape}")
    if x.dtype not in (np.float32, np.float64):
        raise InputError(f"checkpoint {path}: unsupported dtype {x.dtype}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(rhs))):
        raise InputError(f"checkpoint {path}: holds NaN or infinite values")
    original = fields.get("original")
    if original is not None and original.shape != x.shape:
        raise InputError(f"checkpoint {path}: picture shape {original.shape} != {x.shape}")
    return Checkpoint(x=x, rhs=rhs, iteration=int(fields["iteration"]), original=original)
