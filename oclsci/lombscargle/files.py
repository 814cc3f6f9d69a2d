"""Files of ``oclsci lombscargle``: samples and frequencies in, periodograms out.

Samples: a ``.npy`` array of shape (2, N) or (N, 2), or a two-column text file (time, value;
commas, semicolons, tabs or spaces between columns; lines starting with ``#`` and one header
line of names are skipped). Frequencies: ``MIN:MAX:COUNT`` (``np.linspace``, angular) or a
1-D ``.npy`` file. Output: ``.npy`` (the periodogram, as SciPy returns it), ``.csv``
(frequency, power) or ``.png`` (a plot, with matplotlib). Every error is an
:class:`InputError` naming the file or value; outputs are written atomically.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from oclsci.errors import InputError
from oclsci.io import (
    atomic_path,
    check_output_path,
    existing_file,
    read_npy,
    require_matplotlib,
)
from oclsci.runtime.memory import check_host_memory

OUTPUT_SUFFIXES = (".npy", ".csv", ".png")


def read_samples(path: str | os.PathLike, *, normalize: bool = False,
                 precenter: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(times, values)`` as float64 from a .npy (2, N)/(N, 2) array or a two-column text file.

    A (2, 2) array is refused as ambiguous (rows or columns?). With ``normalize`` (and
    ``precenter``), values whose mean square is zero are refused: nothing to divide by.
    """
    path = existing_file(path)
    text = path.suffix.lower() != ".npy"
    # Held besides the file's array: the float64 columns, a copy of each in the run's dtype
    # for the device, and the device's own (host memory too, on a CPU device).
    array = _read_text(path) if text else read_npy(path, held_bytes_per_value=3 * 8)
    if array.dtype.kind not in "fiub":
        raise InputError(f"{path}: expected real numbers, got dtype {array.dtype}")
    if array.ndim != 2 or 2 not in array.shape:
        raise InputError(f"{path}: expected shape (2, N) or (N, 2) (time, value), "
                         f"got {array.shape}")
    if not text and array.shape == (2, 2):
        raise InputError(f"{path}: shape (2, 2) is ambiguous: (time, value) rows or columns? "
                         "Give the two samples as a two-column text file (time, value)")
    columns = array.T if text or array.shape[0] != 2 else array  # a text file's are columns
    times, values = (np.ascontiguousarray(c, dtype=np.float64) for c in columns)
    if times.size == 0:
        raise InputError(f"{path}: no samples")
    for name, column in (("times", times), ("values", values)):
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            raise InputError(f"{path}: {bad.size} NaN or infinite {name} (first at sample "
                             f"{bad[0]})")
    if normalize and not np.any(values - values[0] if precenter else values):
        what = (f"every value is {values[0]:g}, which --precenter makes zero" if precenter
                else "every value is zero")
        raise InputError(f"{path}: {what}: --normalize cannot divide by their mean square "
                         "(the periodogram would be NaN)")
    return times, values


def _read_text(path: Path) -> np.ndarray:
    try:
        # utf-8-sig: a byte-order mark (spreadsheets write one) is not part of the first line.
        lines = path.read_text(encoding="utf-8-sig", errors="strict").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a readable text file ({error})") from None
    rows: list = []
    header_skipped = False
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = [f for f in re.split(r"[,;\s]+", text) if f]
        try:
            values = [float(f) for f in fields]
        except ValueError:
            if not rows and not header_skipped:
                header_skipped = True  # the first line may name the columns
                continue
            raise InputError(f"{path}:{number}: not two numbers: {line.strip()!r}") from None
        if len(values) != 2:
            raise InputError(f"{path}:{number}: expected 2 columns (time, value), "
                             f"got {len(values)}")
        rows.append(values)
    if not rows:
        raise InputError(f"{path}: no samples")
    return np.array(rows, dtype=np.float64)


def parse_freqs(spec: str | None, path: str | None) -> np.ndarray:
    """Angular frequencies from ``MIN:MAX:COUNT`` (linspace) or a 1-D .npy file."""
    if (spec is None) == (path is None):
        raise InputError("give exactly one of --freqs MIN:MAX:COUNT and --freqs-file F.npy")
    if path is not None:
        freqs = read_npy(existing_file(path), held_bytes_per_value=4 * 8)
        if freqs.ndim != 1 or freqs.size == 0 or freqs.dtype.kind not in "fiu":
            raise InputError(f"{path}: expected a non-empty 1-D array of numbers, got "
                             f"shape {freqs.shape}, dtype {freqs.dtype}")
        freqs = freqs.astype(np.float64)
        if not np.all(np.isfinite(freqs)):
            raise InputError(f"{path}: NaN or infinite frequencies")
        return freqs
    parts = spec.split(":")
    try:
        low, high, count = float(parts[0]), float(parts[1]), int(parts[2])
        if len(parts) != 3:
            raise ValueError
    except (ValueError, IndexError):
        raise InputError(f"--freqs {spec!r}: expected MIN:MAX:COUNT, e.g. 0.01:10:100000") \
            from None
    if not (np.isfinite(low) and np.isfinite(high)):
        raise InputError(f"--freqs {spec!r}: MIN and MAX must be finite")
    if not 1 <= count <= 2**31 - 1:
        raise InputError(f"--freqs {spec!r}: COUNT must be from 1 to 2**31 - 1")
    if count > 1 and not low < high:
        raise InputError(f"--freqs {spec!r}: MIN must be less than MAX")
    check_host_memory(2 * 8 * count, f"--freqs {spec}: {count} frequencies")
    return np.linspace(low, high, count)


def check_output(path: str | None,
                 inputs: dict[str, str | os.PathLike | None] | None = None) -> Path | None:
    """Refuse, before any work, an output of unknown type, in a missing folder, or naming one
    of ``inputs`` (how the user named each input -> its path, e.g. ``{"INPUT": ...}``)."""
    checked = check_output_path(path, OUTPUT_SUFFIXES, inputs)
    if checked is not None and checked.suffix.lower() == ".png":
        require_matplotlib("a .png output")
    return checked


def write_periodogram(path: str | os.PathLike, freqs: np.ndarray, pgram: np.ndarray,
                      title: str = "") -> None:
    """Write ``pgram`` as .npy, (frequency, power) .csv or a .png plot, atomically."""
    path = Path(path)
    suffix = path.suffix.lower()
    with atomic_path(path) as temporary:
        if suffix == ".npy":
            with open(temporary, "wb") as stream:
                np.save(stream, pgram, allow_pickle=False)
        elif suffix == ".csv":
            table = np.column_stack([freqs, pgram.astype(np.float64)])
            np.savetxt(temporary, table, delimiter=",", fmt="%.17g",
                       header="angular_frequency,power", comments="")
        else:
            _plot(temporary, freqs, pgram, title)


def _plot(path: Path, freqs: np.ndarray, pgram: np.ndarray, title: str) -> None:
    import matplotlib  # optional (the plot extra) and slow: imported only to plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4), dpi=100)
    axes.plot(freqs, pgram, linewidth=0.7)
    axes.set_xlabel("angular frequency (rad / time unit)")
    axes.set_ylabel("Lomb-Scargle power")
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
