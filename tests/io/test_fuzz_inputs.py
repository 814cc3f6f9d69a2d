"""Fuzzing of every reader of user files: arrays (.npy), images (PGM, PNG, TIFF, BMP),
checkpoints (.npz) and the tuning cache.

Random, truncated and mutated bytes must give a one-line error naming the file, never a
traceback, an "internal error", a hang or a partly written output. In-process tests call the
readers many times (hypothesis); end-to-end tests run `python -m oclsci jacobi FILE -n 1 -o
out.npy` in a subprocess on a fixed corpus of broken files and on a few random ones.
"""

from __future__ import annotations

import io
import json
import os
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from signal_helpers import time_limit

from oclsci.errors import InputError, OclsciWarning
from oclsci.io import read_array
from oclsci.jacobi.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from oclsci.jacobi.solver import validate_rhs

pytestmark = pytest.mark.slow

READER_TIMEOUT_S = 20
CLI_TIMEOUT_S = 120


# -- valid files to break ----------------------------------------------------------------------

def _npy(array) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=False)
    return stream.getvalue()


def _image(array, fmt: str, mode: str | None = None) -> bytes:
    stream = io.BytesIO()
    Image.fromarray(array, mode=mode).save(stream, format=fmt) if mode else \
        Image.fromarray(array).save(stream, format=fmt)
    return stream.getvalue()


def npy_header(shape, descr: str = "<f4", payload: bytes = b"\0" * 16,
               fortran: bool = False) -> bytes:
    """A version 1.0 .npy file declaring ``shape`` and ``descr``, followed by ``payload``."""
    header = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape!r}, }}"
              .encode())
    total = 10 + len(header) + 1
    header += b" " * ((64 - total % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload


RNG = np.random.default_rng(10)
GRAY = (RNG.random((7, 9)) * 255).astype(np.uint8)
SEEDS = {
    ".npy": [_npy(RNG.standard_normal((5, 7)).astype(np.float32)),
             _npy(RNG.standard_normal((3, 4))), _npy(np.arange(12, dtype=np.int16).reshape(3, 4))],
    ".png": [_image(GRAY, "PNG"), _image((GRAY.astype(np.uint16) * 200), "PNG")],
    ".pgm": [_image(GRAY, "PPM"), b"P2\n3 2\n255\n0 1 2\n3 4 5\n"],
    ".tif": [_image(GRAY.astype(np.float32), "TIFF"), _image(GRAY, "TIFF")],
    ".bmp": [_image(GRAY, "BMP")],
}


def _checkpoint_bytes(tmp: Path) -> bytes:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    path = tmp / "seed-checkpoint.npz"
    save_checkpoint(path, Checkpoint(x=x, rhs=x * 2, iteration=7, original=x))
    return path.read_bytes()


# -- mutations ---------------------------------------------------------------------------------

@st.composite
def mutated(draw, seeds: list[bytes]):
    """A seed file, truncated, with bytes flipped, inserted or deleted; or random bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "overwrite"]))
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "truncate":
            del data[position:]
        elif op == "flip" and data:
            data[position] = draw(st.integers(0, 255))
        elif op == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[position:position + draw(st.integers(1, 16))]
        elif op == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[position:position + len(chunk)] = chunk
    return bytes(data)


# Exceptions that readers still let through, as (type name, message fragment): the fuzzers
# skip them (they would otherwise find them again and again) and each gets a strict-xfail
# regression test (READER_KNOWN_BUGS, CLI_KNOWN_BUGS, CHECKPOINT_BUGS below), which turns red
# once the reader is fixed. Empty: every bug found so far is fixed (see docs/testing.md).
KNOWN_READER_BUGS: tuple = ()


def known_bug(error: BaseException) -> bool:
    return any(type(error).__name__ == name and fragment in str(error)
               for name, fragment in KNOWN_READER_BUGS)


def assert_user_error(error: BaseException, path: Path, *, allow_known: bool = True) -> None:
    """``error`` is an InputError with one line naming ``path`` (or, for the fuzzers, a
    known bug)."""
    message = str(error)
    if allow_known and known_bug(error):
        return
    assert isinstance(error, InputError), f"{type(error).__name__}: {message}"
    assert message and "\n" not in message, repr(message)
    assert str(path) in message, f"the message does not name the file: {message}"


# -- in process: the readers themselves --------------------------------------------------------

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@pytest.mark.filterwarnings("ignore::UserWarning")  # Pillow's, on damaged TIFFs (see below)
@pytest.mark.parametrize("suffix", sorted(SEEDS))
def test_array_reader_on_broken_files(tmp_path, suffix):
    path = tmp_path / f"input{suffix}"

    @FUZZ
    @given(mutated(SEEDS[suffix]))
    def check(data):
        path.write_bytes(data)
        with time_limit(READER_TIMEOUT_S, f"read_array on {len(data)} bytes"):
            try:
                array = read_array(path)
            except Exception as error:  # noqa: BLE001 - the assertion says which
                assert_user_error(error, path)
                return
        assert isinstance(array, np.ndarray)
        try:
            validate_rhs(array)
        except InputError as error:
            assert "\n" not in str(error)

    check()


def test_checkpoint_reader_on_broken_files(tmp_path):
    seed = _checkpoint_bytes(tmp_path)
    path = tmp_path / "broken.npz"

    @FUZZ
    @given(mutated([seed]))
    def check(data):
        path.write_bytes(data)
        with time_limit(READER_TIMEOUT_S, "load_checkpoint"):
            try:
                state = load_checkpoint(path)
            except Exception as error:  # noqa: BLE001
                assert_user_error(error, path)
                return
        assert state.x.shape == state.rhs.shape and state.iteration >= 0

    check()


def _crafted_checkpoint(path: Path, **fields) -> None:
    with open(path, "wb") as stream:
        np.savez(stream, **fields)


GOOD = np.ones((2, 3), dtype=np.float32)
CRAFTED_CHECKPOINTS = {
    "missing-x": dict(rhs=GOOD, iteration=np.int64(1), format_version=np.int64(1)),
    "version-2": dict(x=GOOD, rhs=GOOD, iteration=np.int64(1), format_version=np.int64(2)),
    "version-array": dict(x=GOOD, rhs=GOOD, iteration=np.int64(1),
                          format_version=np.array([1, 1])),
    "version-text": dict(x=GOOD, rhs=GOOD, iteration=np.int64(1),
                         format_version=np.array("one")),
    "iteration-array": dict(x=GOOD, rhs=GOOD, iteration=np.arange(3),
                            format_version=np.int64(1)),
    "iteration-float-nan": dict(x=GOOD, rhs=GOOD, iteration=np.float64("nan"),
                                format_version=np.int64(1)),
    "iteration-negative": dict(x=GOOD, rhs=GOOD, iteration=np.int64(-4),
                               format_version=np.int64(1)),
    "shapes-differ": dict(x=GOOD, rhs=np.ones((3, 2), np.float32), iteration=np.int64(1),
                          format_version=np.int64(1)),
    "x-1d": dict(x=np.ones(3, np.float32), rhs=np.ones(3, np.float32), iteration=np.int64(1),
                 format_version=np.int64(1)),
    "x-int": dict(x=np.ones((2, 3), np.int32), rhs=np.ones((2, 3), np.int32),
                  iteration=np.int64(1), format_version=np.int64(1)),
    "x-nan": dict(x=GOOD * np.nan, rhs=GOOD, iteration=np.int64(1), format_version=np.int64(1)),
    "rhs-complex": dict(x=GOOD, rhs=GOOD.astype(np.complex64), iteration=np.int64(1),
                        format_version=np.int64(1)),
    "rhs-float64": dict(x=GOOD, rhs=GOOD.astype(np.float64), iteration=np.int64(1),
                        format_version=np.int64(1)),
    "original-shape": dict(x=GOOD, rhs=GOOD, iteration=np.int64(1), format_version=np.int64(1),
                           original=np.ones((5, 5))),
    "original-text": dict(x=GOOD, rhs=GOOD, iteration=np.int64(1), format_version=np.int64(1),
                          original=np.array(["a", "b"])),
}


CHECKPOINT_BUGS: dict = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=CHECKPOINT_BUGS[n]))
    if n in CHECKPOINT_BUGS else n for n in sorted(CRAFTED_CHECKPOINTS)])
def test_checkpoint_reader_on_crafted_fields(tmp_path, name):
    path = tmp_path / f"{name}.npz"
    _crafted_checkpoint(path, **CRAFTED_CHECKPOINTS[name])
    try:
        state = load_checkpoint(path)
    except Exception as error:  # noqa: BLE001
        assert_user_error(error, path, allow_known=False)
        return
    # Accepted: it must then be a usable state, or one that the solver refuses in one line.
    assert state.x.ndim == 2 and state.x.shape == state.rhs.shape and state.iteration >= 0
    assert np.all(np.isfinite(state.x))
    try:
        validate_rhs(state.rhs)
    except InputError as error:
        assert "\n" not in str(error)


def test_tuning_cache_reader_on_broken_files(tmp_path, capsys):
    """A broken cache is ignored with one warning line; it never raises."""
    from oclsci.kernelspec.registry import load_cache

    seed = json.dumps({"format": 1, "entries": {"dev | driver 1 | oclsci 0 | float32 | c~2^4": {
        "best": {"kernel": "coalesced", "params": {"rows_per_item": 2}},
        "kernels": {}}}}).encode()
    path = tmp_path / "tuning.json"

    @FUZZ
    @given(mutated([seed, b"{}", b'{"format": 1, "entries": []}']))
    def check(data):
        path.write_bytes(data)
        with time_limit(READER_TIMEOUT_S, "load_cache"), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entries = load_cache(path)
        assert isinstance(entries, dict)
        for warning in caught:
            assert warning.category is OclsciWarning, warning
            assert str(warning.message).startswith("ignoring the tuning cache"), warning
            assert "\n" not in str(warning.message)

    check()
    assert capsys.readouterr().err == ""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**33) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["kernel", "params", "local_size", "best", "kernels",
                                       "rows_per_item", "vector", "tile_w", "halo_width",
                                       "coalesced", "blocked", "seed"]), children, max_size=4),
    max_leaves=12)


@pytest.mark.filterwarnings("ignore::oclsci.errors.OclsciWarning")  # ignored entries say so
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=json_values)
def test_tuning_cache_entries_of_any_shape_are_ignored_or_used(any_compute, tmp_path_factory,
                                                                entry):
    """Whatever a cache entry holds, choosing a configuration gives a valid one or the default."""
    from oclsci.jacobi.kernels import KernelConfig, cached_config
    from oclsci.kernelspec.registry import cache_key

    path = tmp_path_factory.mktemp("cache") / "tuning.json"
    shape = (8, 8)
    key = cache_key(any_compute, np.float32, shape)
    path.write_text(json.dumps({"format": 1, "entries": {key: entry}}))
    old = os.environ.get("OCLSCI_TUNE_CACHE")
    os.environ["OCLSCI_TUNE_CACHE"] = str(path)
    try:
        for kernel in (None, "coalesced", "blocked", "seed"):
            config = cached_config(any_compute, np.float32, shape, kernel)
            assert config is None or isinstance(config, KernelConfig)
    finally:
        if old is None:
            os.environ.pop("OCLSCI_TUNE_CACHE", None)
        else:
            os.environ["OCLSCI_TUNE_CACHE"] = old


# -- end to end: the command line --------------------------------------------------------------

def oclsci(*args, cwd, extra_env=None):
    """Run the CLI in ``cwd``; a run past CLI_TIMEOUT_S is a failure (a hang on bad input)."""
    return run_cli(*args, cwd=cwd, extra_env=extra_env, timeout=CLI_TIMEOUT_S)


def assert_one_line_failure(result, folder: Path, name: str | None = None) -> None:
    """Exit status != 0, one stderr line "oclsci: error: ...", no traceback, no output."""
    assert result.returncode != 0, f"accepted: {result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("oclsci: error:"), lines[0]
    assert "Traceback" not in result.stderr and "internal error" not in lines[0], lines[0]
    if name is not None:
        assert name in lines[0], f"the message does not name {name}: {lines[0]}"
    # No output, and no temporary file left by an interrupted atomic write.
    assert sorted(p.name for p in folder.iterdir() if "out" in p.name) == []


def _corpus() -> dict[str, tuple[bytes, bytes | None]]:
    """Broken inputs: file name -> (bytes, None or the intact file it was cut from).

    A file cut from an intact one may be accepted when everything the reader needs survived
    (a PNG without its end chunk, a BMP without its last row's padding), but then the result
    must be that of the intact file.
    """
    corpus: dict[str, tuple[bytes, bytes | None]] = {name: (data, None) for name, data in {
        "empty.npy": b"", "empty.png": b"", "empty.pgm": b"",
        "text.npy": b"hello world\n", "text.png": b"hello world\n",
        "random.npy": bytes(RNG.integers(0, 256, 200, dtype=np.uint8)),
        "random.pgm": bytes(RNG.integers(0, 256, 200, dtype=np.uint8)),
        "random.tif": bytes(RNG.integers(0, 256, 200, dtype=np.uint8)),
        "magic-only.npy": b"\x93NUMPY",
        "header-1d.npy": npy_header((16,), payload=b"\0" * 64),
        "header-3d.npy": npy_header((2, 2, 2), payload=b"\0" * 32),
        "header-objects.npy": npy_header((2, 2), descr="|O"),
        "header-complex.npy": npy_header((2, 1), descr="<c8"),
        "header-strings.npy": npy_header((2, 2), descr="<U3", payload=b"\0" * 48),
        "header-negative.npy": npy_header((-1, 5)),
        "header-huge.npy": npy_header((1 << 20, 1 << 20), descr="<f8"),
        "header-too-big.npy": npy_header((1 << 31, 1 << 31)),
        "header-garbage.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': <<<}\n",
        "header-tokenize.npy": npy_header((2, 2)).replace(b"{'descr':", b"{'descr'[:", 1),
        "nan.npy": _npy(np.array([[1.0, np.nan]])),
        "pgm-huge.pgm": b"P5\n100000 100000\n255\n" + b"\0" * 64,
        "pgm-bomb.pgm": b"P5\n20000 20000\n255\n" + b"\0" * 64,
        "pgm-maxval-0.pgm": b"P5\n2 2\n0\n\0\0\0\0",
        "pgm-ascii-bad.pgm": b"P2\n3 2\n255\n0 1 x\n3 4 5\n",
        "colour.png": _image(np.zeros((3, 3, 3), np.uint8), "PNG"),
        "colour.pgm": _image(np.zeros((3, 3, 3), np.uint8), "PPM"),
    }.items()}
    for suffix, seeds in SEEDS.items():
        data = seeds[0]
        for cut in sorted({1, 8, len(data) // 2, len(data) - 1}):
            corpus[f"truncated-{cut}{suffix}"] = (data[:cut], data)
    return corpus


# Broken inputs that oclsci does not yet handle properly: name -> reason (strict xfails),
# for the reader called in process and for the command line.
READER_KNOWN_BUGS: dict = {}
CLI_KNOWN_BUGS: dict = {}


def _cases(known: dict[str, str]):
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=known[name]))
            if name in known else name for name in sorted(_corpus())]


@pytest.mark.parametrize("name", _cases(READER_KNOWN_BUGS))
def test_reader_refuses_broken_input_naming_the_file(tmp_path, name):
    """In process: an InputError of one line naming the file, and no warning on the way."""
    data, intact = _corpus()[name]
    path = tmp_path / name
    path.write_bytes(data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with time_limit(READER_TIMEOUT_S, f"read_array({name})"):
            try:
                array = read_array(path)
            except Exception as error:  # noqa: BLE001
                assert_user_error(error, path, allow_known=False)
                array = None
    assert not caught, [f"{w.category.__name__}: {w.message}" for w in caught]
    if array is not None:
        try:
            validate_rhs(array)
        except InputError as error:
            assert "\n" not in str(error)
            return
        assert intact is not None, f"{name} accepted"
        (tmp_path / f"intact-{name}").write_bytes(intact)
        np.testing.assert_array_equal(array, read_array(tmp_path / f"intact-{name}"))


@pytest.mark.parametrize("name", _cases(CLI_KNOWN_BUGS))
def test_cli_refuses_broken_input_in_one_line(tmp_path, name):
    data, intact = _corpus()[name]
    (tmp_path / name).write_bytes(data)
    result = oclsci("jacobi", name, "-n", "1", "-o", "out.npy", "--quiet", cwd=tmp_path)
    if result.returncode == 0 and intact is not None:
        # Accepted although cut: then exactly as the intact file.
        assert result.stderr == ""
        (tmp_path / f"intact-{name}").write_bytes(intact)
        again = oclsci("jacobi", f"intact-{name}", "-n", "1", "-o", "intact-result.npy",
                       "--quiet", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "out.npy"),
                                      np.load(tmp_path / "intact-result.npy"))
        return
    assert_one_line_failure(result, tmp_path)


CHECKPOINT_CLI_BUGS: dict = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=CHECKPOINT_CLI_BUGS[n]))
    if n in CHECKPOINT_CLI_BUGS else n for n in ["truncated", "random", "not-zip", "crafted"]])
def test_cli_refuses_broken_checkpoint_in_one_line(tmp_path, name):
    seed = _checkpoint_bytes(tmp_path)
    (tmp_path / "seed-checkpoint.npz").unlink()
    data = {"truncated": seed[: len(seed) // 2], "random": bytes(range(256)) * 2,
            "not-zip": _npy(GOOD)}.get(name)
    path = tmp_path / "state.npz"
    if data is None:
        _crafted_checkpoint(path, **CRAFTED_CHECKPOINTS["version-array"])
    else:
        path.write_bytes(data)
    result = oclsci("jacobi", "--resume", "state.npz", "-n", "1", "-o", "out.npy", "--quiet",
                    cwd=tmp_path)
    assert_one_line_failure(result, tmp_path, "state.npz")


def test_cli_refuses_folder_and_missing_file(tmp_path):
    (tmp_path / "folder.npy").mkdir()
    for name in ("folder.npy", "missing.npy"):
        result = oclsci("jacobi", name, "-n", "1", "-o", "out.npy", "--quiet", cwd=tmp_path)
        assert_one_line_failure(result, tmp_path, name)


@pytest.mark.parametrize("suffix", sorted(SEEDS))
def test_cli_on_random_mutations(tmp_path, suffix):
    """A few mutated files per format through the whole command: one line or a result."""
    @settings(max_examples=4, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(mutated(SEEDS[suffix]))
    def check(data):
        for stale in tmp_path.iterdir():
            stale.unlink()
        (tmp_path / f"in{suffix}").write_bytes(data)
        result = oclsci("jacobi", f"in{suffix}", "-n", "1", "-o", "out.npy", "--quiet",
                        cwd=tmp_path)
        if result.returncode == 0:
            assert result.stderr == "" and np.load(tmp_path / "out.npy").ndim == 2
        else:
            assert_one_line_failure(result, tmp_path)

    check()


def test_cli_laplacian_refuses_broken_image(tmp_path):
    (tmp_path / "broken.png").write_bytes(SEEDS[".png"][0][:40])
    result = oclsci("laplacian", "broken.png", "-o", "out.npy", cwd=tmp_path)
    assert_one_line_failure(result, tmp_path, "broken.png")


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"format": 1, "entries": []}',
                                     b'{"format": 99, "entries": {}}', b"\xff\xfe\x00"])
def test_cli_ignores_broken_tuning_cache_with_one_warning(tmp_path, content):
    cache = tmp_path / "tuning.json"
    cache.write_bytes(content)
    np.save(tmp_path / "b.npy", GOOD)
    result = oclsci("jacobi", "b.npy", "-n", "2", "-o", "out.npy", "--quiet", cwd=tmp_path,
                    extra_env={"OCLSCI_TUNE_CACHE": str(cache)})
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 1 and "Traceback" not in result.stderr, result.stderr
    for line in lines:
        assert line.startswith("oclsci: warning: ignoring the tuning cache"), line
    assert np.load(tmp_path / "out.npy").shape == GOOD.shape
