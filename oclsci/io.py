"""Reading user files (NumPy arrays, grayscale images) and writing results atomically.

Every reader turns a missing, unreadable or corrupt file into an :class:`InputError` naming
the file; every writer writes a temporary file in the destination folder and renames it, so
an interrupted or failed run never leaves a half-written output.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import os
import re
import socket
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy_format
from PIL import Image, UnidentifiedImageError

from oclsci.errors import (
    FolderGivenError,
    InputError,
    OclsciError,
    OutputError,
    first_line,
    pip_extra,
)
from oclsci.runtime.memory import check_host_memory
from oclsci.runtime.signals import held

IMAGE_SUFFIXES = (".png", ".pgm", ".pnm", ".tif", ".tiff", ".bmp")
ARRAY_SUFFIXES = (".npy",)
# Pillow modes holding one gray value per pixel, and the NumPy dtype they become.
GRAY_MODES = {"1": np.uint8, "L": np.uint8, "I;16": np.uint16, "I;16B": np.uint16,
              "I;16L": np.uint16, "I": np.int32, "F": np.float32}


def existing_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path, or an InputError if it is missing or a folder."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise FolderGivenError(f"{path}: is a folder, not a file")
    return path


def read_array(path: str | os.PathLike) -> np.ndarray:
    """Read a 2-D array from ``.npy`` or from a grayscale image (values taken as they are)."""
    path = existing_file(path)
    if path.suffix.lower() == ".npy":
        return read_npy(path)
    return _read_image(path)


def read_npy(path: Path, held_bytes_per_value: int = 0) -> np.ndarray:
    """Load a .npy file after checking its header against the file's size, and the host's
    memory against the array and ``held_bytes_per_value`` more bytes per value (what the
    caller makes of it)."""
    try:
        with open(path, "rb") as stream:
            if stream.read(6) != b"\x93NUMPY":
                raise InputError(f"{path}: not a .npy file (bad header)")
            stream.seek(0)
            version = npy_format.read_magic(stream)
            read_header = (npy_format.read_array_header_1_0 if version == (1, 0)
                           else npy_format.read_array_header_2_0)
            shape, _, dtype = read_header(stream)
            data_bytes = os.fstat(stream.fileno()).st_size - stream.tell()
    except InputError:
        raise
    except Exception as error:  # noqa: BLE001 - NumPy's header parser raises many kinds
        raise InputError(f"{path}: not a readable .npy array ({first_line(error)})") from None
    if dtype.hasobject:
        raise InputError(f"{path}: holds Python objects, not numbers")
    values = int(np.prod(shape, dtype=np.float64))
    expected = values * dtype.itemsize
    if expected > data_bytes:
        raise InputError(f"{path}: truncated .npy file (header says {expected} bytes of data, "
                         f"file has {data_bytes})")
    check_host_memory(expected + values * held_bytes_per_value,
                      f"reading {path} ({'x'.join(map(str, shape))} {dtype})")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise InputError(f"{path}: not a readable .npy array ({first_line(error)})") from None


def _read_image(path: Path) -> np.ndarray:
    from oclsci.pnm import is_pnm, read_pnm, undo_rescaling  # images only

    try:
        if is_pnm(path):  # Pillow would rescale PGM maxval and invert PBM: parse it here
            return read_pnm(path)
    except OSError as error:
        raise InputError(f"{path}: not a readable image ({first_line(error)})") from None
    try:
        with warnings.catch_warnings(), _no_pixel_limit():
            # Pillow warns about damaged metadata; a bad file is reported once, below.
            warnings.simplefilter("ignore")
            with Image.open(path) as image:
                rawmode = _rawmode(image)
                _check_gray_image(path, image)  # from the header: before decoding
                image.load()
                mode = image.mode
                _check_gray_image(path, image, decoded=True)
                array = undo_rescaling(np.array(image), mode, rawmode)
    except InputError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as error:
        raise InputError(f"{path}: not a readable image ({first_line(error)})") from None
    return array.astype(GRAY_MODES[mode], copy=False)


# Pillow's decompression-bomb limit is a module global: lifted under this lock, one image at
# a time (another thread's image opened meanwhile is not checked against it either).
_PIXEL_LIMIT_LOCK = threading.Lock()


@contextlib.contextmanager
def _no_pixel_limit() -> Iterator[None]:
    """Lift Pillow's pixel limit (``Image.MAX_IMAGE_PIXELS``) meanwhile, then restore it:
    oclsci checks the decoded size against the host's available memory instead."""
    with _PIXEL_LIMIT_LOCK:
        saved = Image.MAX_IMAGE_PIXELS
        Image.MAX_IMAGE_PIXELS = None
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = saved


def _check_gray_image(path: Path, image: Any, decoded: bool = False) -> None:
    """Refuse a colour image, gray with alpha, and (unless ``decoded``) several pages or an
    image whose pixels cannot fit the host's available memory."""
    mode = image.mode
    if mode in ("LA", "La", "PA"):
        raise InputError(f"{path}: grayscale image with an alpha channel (mode {mode}); oclsci "
                         "reads plain grayscale images: drop the alpha channel first (e.g. "
                         "`convert IN -alpha off OUT.png`)")
    if mode not in GRAY_MODES:
        raise InputError(f"{path}: colour image (mode {mode}); oclsci reads grayscale images: "
                         "convert it first (e.g. `convert IN -colorspace Gray OUT.png`)")
    if decoded:
        return
    try:  # walks every page: Pillow fails in many ways (TypeError...) on a damaged later one
        frames = getattr(image, "n_frames", 1)
    except Exception as error:  # noqa: BLE001 - only Pillow's page walk is guarded here
        raise InputError(f"{path}: not a readable image (damaged page list: "
                         f"{first_line(error, with_type=True)})") from None
    if frames > 1:
        raise InputError(f"{path}: holds {frames} images (pages or frames); oclsci reads one: "
                         "extract it first (e.g. `convert 'IN[0]' OUT.png` for the first)")
    # Pillow's pixels, NumPy's copy of them, and the float64 copy that the solvers make.
    width, height = image.size
    itemsize = np.dtype(GRAY_MODES[mode]).itemsize
    check_host_memory(width * height * (2 * itemsize + 8),
                      f"{path}: a {width}x{height} image (its pixels and a float64 copy)")


def _rawmode(image: Any) -> str | None:
    """The raw mode Pillow will decode ``image``'s pixels with (None when it cannot tell)."""
    tiles = getattr(image, "tile", None) or []
    if not tiles:
        return None
    args = tiles[0][3]
    if isinstance(args, tuple) and args:
        args = args[0]
    return args if isinstance(args, str) else None


def check_output_path(path: str | os.PathLike | None, suffixes: tuple[str, ...],
                      inputs: dict[str, str | os.PathLike | None] | None = None) -> Path | None:
    """Refuse, before any work, an output that is a folder (:class:`FolderGivenError`, exit 2),
    whose folder is missing, whose suffix is unknown, or that names one of ``inputs`` (the
    ``-o`` of a command: see :func:`check_inputs_kept`)."""
    if path is None:
        return None
    check_inputs_kept(inputs or {}, output=path)
    path = Path(path)
    if path.is_dir():
        raise FolderGivenError(f"{path}: is a folder, not a file")
    if path.suffix.lower() not in suffixes:
        raise InputError(f"{path}: unknown output type {path.suffix or '(none)'!r}; "
                         f"use one of {', '.join(suffixes)}")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{path}: output folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{path}: output folder {folder} is not writable")
    return path


def _temporary_prefix(path: Path) -> str:
    """``.NAME.HASH.`` with NAME cut short: temporary names stay far below NAME_MAX (255)."""
    digest = hashlib.sha1(path.name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f".{path.name[:64]}.{digest}."


def _remove_stale_temporaries(folder: Path, prefix: str) -> None:
    """Remove temporary files of this output left by processes of this host that died."""
    host = _HOST_TAG
    for candidate in folder.glob(glob.escape(prefix) + "*.tmp"):
        owner = candidate.name[len(prefix):].split(".", 1)[0]  # HOST-PID
        tag, _, pid = owner.partition("-")
        if tag != host or not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                candidate.unlink()
        except OSError:
            pass  # alive, owned by someone else


_HOST_TAG = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:4]

# NumPy's message when a file system took fewer bytes than written (``tofile``, ``np.save``).
_SHORT_WRITE = re.compile(r"^(\d+) requested and (\d+) written$")


def write_failure(error: OSError) -> str:
    """Why writing a file failed, in words: ``disk full: ...`` for ENOSPC and for NumPy's
    short write (which carries no errno), else the system's message."""
    if error.errno == errno.ENOSPC:
        return f"disk full: {error.strerror or 'no space left on device'}"
    short = _SHORT_WRITE.match(str(error).strip())
    if error.errno is None and short:
        return f"disk full: only {short[2]} of {short[1]} bytes could be written"
    return error.strerror or str(error)


def have_matplotlib() -> bool:
    """True when matplotlib (the ``plot`` extra) can be imported."""
    try:
        import matplotlib.colors  # noqa: F401 - optional and slow: imported only when asked
    except ImportError:
        return False
    return True


def require_matplotlib(what: str) -> None:
    """Refuse, before any work, an output that ``what`` names when matplotlib is missing."""
    if not have_matplotlib():
        raise InputError(f"{what} needs matplotlib: {pip_extra('plot')}")


def check_distinct_outputs(**paths: str | os.PathLike | None) -> None:
    """Refuse, before any work, two options naming the same file (``option=path`` pairs)."""
    seen: dict[Path, str] = {}
    for option, path in paths.items():
        if path is None:
            continue
        resolved = Path(path).resolve()
        if resolved in seen:
            raise InputError(f"{path}: given to both --{seen[resolved]} and --{option}; "
                             "name different files")
        seen[resolved] = option.replace("_", "-")


def check_inputs_kept(inputs: dict[str, str | os.PathLike | None],
                      **outputs: str | os.PathLike | None) -> None:
    """Refuse, before any work, an output naming an input file, which writing would destroy.

    ``inputs`` maps how the user named each input (``"INPUT"``, ``"--resume"``) to its path;
    ``outputs`` are ``option=path`` pairs as for :func:`check_distinct_outputs`. A path that
    does not exist yet cannot be an input; links and other names of one file are caught.
    """
    for option, output in outputs.items():
        if output is None:
            continue
        for name, source in inputs.items():
            if source is None:
                continue
            try:
                same = os.path.samefile(output, source)
            except (OSError, ValueError):
                continue  # one of them does not exist: the input's reader will say so
            if same:
                raise InputError(f"{output}: --{option.replace('_', '-')} names the input "
                                 f"file ({name}), which it would overwrite; name another file")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` only on success.

    On any failure the temporary file is removed; an OSError becomes an
    :class:`OutputError` naming ``path``. Stop signals are held until the file is complete
    (see :func:`oclsci.runtime.signals.held`), so that a signal neither leaves a temporary
    file behind nor costs an output that is being written. Temporary files that a killed run
    (kill -9) left for the same output are removed first.
    """
    with held():
        with _atomic_path(Path(path)) as temporary:
            yield temporary


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    folder = path.parent if str(path.parent) else Path(".")
    prefix = _temporary_prefix(path)
    _remove_stale_temporaries(folder, prefix)
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f"{prefix}{_HOST_TAG}-{os.getpid()}.",
                                             suffix=".tmp", dir=folder)
        os.close(handle)
        yield Path(temporary)
        # mkstemp makes 0600 files: give the result the usual permissions (0666 less umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException as error:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        if isinstance(error, OSError):
            raise OutputError(f"{path}: cannot write ({write_failure(error)})") from None
        raise


def write_outputs(writes: Iterable[tuple[Any, Callable[[], Any]]]) -> list[str]:
    """Run ``(path, write)`` pairs in order (a None path is skipped); return the paths written.

    If one fails, the error says which outputs were already written. A stop signal that
    comes meanwhile is held until all are written (:func:`oclsci.runtime.signals.held`).
    """
    written: list[str] = []
    with held():
        for path, write in writes:
            if path is None:
                continue
            try:
                write()
            except OclsciError as error:
                if written:
                    error.args = (f"{error}; written before it: {', '.join(written)}",)
                raise
            written.append(str(path))
    return written


def to_uint8(array: np.ndarray) -> np.ndarray:
    """Min-max scale an array to 0..255 (a constant array becomes 0)."""
    array = np.asarray(array, dtype=np.float64)
    low, high = float(np.min(array)), float(np.max(array))
    if not np.isfinite(low) or not np.isfinite(high) or high <= low:
        return np.zeros(array.shape, dtype=np.uint8)
    return np.round((array - low) * (255.0 / (high - low))).astype(np.uint8)


def write_array(path: str | os.PathLike, array: np.ndarray) -> Path:
    """Write ``.npy`` (raw values, exact) or an image (min-max scaled to 8 bits), atomically."""
    path = Path(path)
    if path.suffix.lower() == ".npy":
        return write_npy(path, array)
    return write_image(path, to_uint8(array))


def write_npy(path: str | os.PathLike, array: np.ndarray) -> Path:
    """Write ``array`` in NumPy's .npy format whatever the suffix, atomically; return the path."""
    path = Path(path)
    with atomic_path(path) as temporary, open(temporary, "wb") as stream:
        np.save(stream, np.asarray(array), allow_pickle=False)
    return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 (a JSON report, a Markdown table), atomically; return the path."""
    path = Path(path)
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


def write_image(path: str | os.PathLike, pixels: np.ndarray) -> Path:
    """Write 8-bit gray (H x W) or RGB (H x W x 3) pixels, format from the suffix, atomically.

    Returns the path.
    """
    path = Path(path)
    image = Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8))
    image_format = {".pgm": "PPM", ".pnm": "PPM", ".tif": "TIFF", ".tiff": "TIFF"}.get(
        path.suffix.lower(), path.suffix.lower().lstrip(".").upper())
    with atomic_path(path) as temporary:
        image.save(temporary, format=image_format)
    return path
