"""Gray images read as the integers they store, where Pillow would rescale them.

Pillow stretches some images to the full 8- or 16-bit range: a PGM whose maxval is not 255
or 65535 (``[0, 50, 100]`` with maxval 100 reads as ``[0, 128, 255]``), PNG and TIFF gray
images of 2 or 4 bits per pixel (``0..3`` reads as ``0, 85, 170, 255``), and it inverts
bilevel PBM and min-is-white TIFF pixels. oclsci reads "values as they are": the stored
integers. Netpbm gray files (P1, P2, P4, P5) are parsed here; for other formats
:func:`undo_rescaling` maps Pillow's pixels back to the stored integers, exactly.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from oclsci.errors import InputError

PNM_MAGICS = (b"P1", b"P2", b"P3", b"P4", b"P5", b"P6")
# Pillow raw modes that scale b-bit samples to 0..255, optionally inverted ("I").
_LOW_BIT_RAWMODE = re.compile(r"^L;(?P<bits>[124])(?P<inverted>I?)R?$")


def is_pnm(path: Path) -> bool:
    """True when ``path`` starts with a Netpbm magic number (P1 to P6)."""
    with open(path, "rb") as stream:
        return stream.read(2) in PNM_MAGICS


def read_pnm(path: Path) -> np.ndarray:
    """The stored integers of a gray Netpbm image (PBM: 1 = black, as stored; PGM: 0..maxval)."""
    data = path.read_bytes()
    magic = data[:2]
    if magic in (b"P3", b"P6"):
        raise InputError(f"{path}: colour image (PPM); oclsci reads grayscale images: convert "
                         "it first (e.g. `convert IN -colorspace Gray OUT.pgm`)")
    bilevel = magic in (b"P1", b"P4")
    fields, position = _header(data, 3 if bilevel else 4, path)
    width, height = fields[1], fields[2]
    maxval = 1 if bilevel else fields[3]
    if width < 1 or height < 1:
        raise InputError(f"{path}: not a readable image (size {width}x{height})")
    if not 1 <= maxval <= 65535:
        raise InputError(f"{path}: not a readable image (maxval {maxval}, expected 1..65535)")
    count = width * height
    if magic == b"P4":
        row_bytes = (width + 7) // 8
        raw = data[position + 1:position + 1 + row_bytes * height]
        if len(raw) < row_bytes * height:
            raise InputError(f"{path}: truncated PBM image")
        bits = np.unpackbits(np.frombuffer(raw, np.uint8).reshape(height, row_bytes), axis=1)
        return np.ascontiguousarray(bits[:, :width])
    dtype = np.uint8 if maxval < 256 else np.uint16
    if magic == b"P5":
        itemsize = 1 if maxval < 256 else 2
        raw = data[position + 1:position + 1 + count * itemsize]
        if len(raw) < count * itemsize:
            raise InputError(f"{path}: truncated PGM image ({len(raw)} of {count * itemsize} "
                             "bytes of pixels)")
        values = np.frombuffer(raw, ">u1" if itemsize == 1 else ">u2").astype(dtype)
    else:
        text = re.sub(rb"#[^\n]*", b" ", data[position:])
        tokens = list(text.replace(b"\t", b" ").decode("ascii", "replace").split())
        if magic == b"P1":  # plain PBM digits need no separators
            tokens = [digit for token in tokens for digit in token]
        if len(tokens) < count or not all(token.isdigit() for token in tokens[:count]):
            raise InputError(f"{path}: truncated or damaged plain PNM image")
        values = np.array([int(token) for token in tokens[:count]], dtype=np.int64)
    if int(values.max()) > maxval:
        raise InputError(f"{path}: a pixel value {int(values.max())} exceeds maxval {maxval}")
    return values.astype(dtype).reshape(height, width)


def _header(data: bytes, count: int, path: Path) -> tuple[list[int], int]:
    """The magic's ``count - 1`` integer fields and the offset of the byte ending the last."""
    fields: list[int] = [0]
    position = 2
    while len(fields) < count:
        while position < len(data) and (data[position:position + 1].isspace()
                                        or data[position:position + 1] == b"#"):
            if data[position:position + 1] == b"#":
                end = data.find(b"\n", position)
                position = len(data) if end < 0 else end
            position += 1
        start = position
        while position < len(data) and data[position:position + 1].isdigit():
            position += 1
        if start == position:
            raise InputError(f"{path}: not a readable image (damaged PNM header)")
        fields.append(int(data[start:position]))
    if position >= len(data) or not data[position:position + 1].isspace():
        raise InputError(f"{path}: not a readable image (damaged PNM header)")
    return fields, position


def undo_rescaling(array: np.ndarray, mode: str, rawmode: str | None) -> np.ndarray:
    """Pillow's pixels of an image decoded with ``rawmode`` back to the stored integers."""
    if rawmode is None:
        return array
    if mode == "1":
        values = np.asarray(array, dtype=np.uint8)
        return 1 - values if rawmode.endswith("I") else values
    match = _LOW_BIT_RAWMODE.match(rawmode)
    if mode == "L" and match:
        top = 2 ** int(match["bits"]) - 1
        values = (np.asarray(array, dtype=np.uint8) // (255 // top)).astype(np.uint8)
        return top - values if match["inverted"] else values
    return array
