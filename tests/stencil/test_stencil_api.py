"""The Python API: arguments refused in one line before any work, the progress and stop
hooks, the dtype a run takes, and the package reachable as ``oclsci.stencil``."""

from __future__ import annotations

import numpy as np
import pytest

import oclsci
from oclsci.errors import (
    ArgumentTypeError,
    Interrupted,
    InvalidArgumentError,
    NonFiniteResultError,
)
from oclsci.stencil import Stencil

HEAT = "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"


def test_the_issue_example_runs(any_compute):
    heat = oclsci.stencil.Stencil(HEAT, params={"k": 0.2})
    u0 = np.zeros((16, 16), np.float32)
    u0[8, 8] = 1
    u = heat.run(u0, steps=50, device=any_compute)
    assert u.dtype == np.float32 and u.shape == (16, 16)
    assert 0 < u.sum() < 1  # heat leaves through the cold boundary
    assert oclsci.Stencil is Stencil


@pytest.mark.parametrize(("call", "error", "fragment"), [
    (lambda s, u: s.run(u, 1, fields={"b": u}), InvalidArgumentError,
     "field 'b' is given but the stencil never reads it"),
    (lambda s, u: s.run(u[0], 1), InvalidArgumentError, "u0 must be a 2-D array, got 1"),
    (lambda s, u: s.run(u[:0], 1), InvalidArgumentError, "u0 is empty"),
    (lambda s, u: s.run(u.astype(str), 1), ArgumentTypeError, "u0 must hold numbers"),
    (lambda s, u: s.run(u, -1), InvalidArgumentError, "steps must be between 0"),
    (lambda s, u: s.run(u, 1.5), ArgumentTypeError, "steps must be an integer"),
    (lambda s, u: s.run(u, 1, dtype=np.int32), InvalidArgumentError,
     "dtype must be float32 or float64"),
    (lambda s, u: s.run(u, 1, params={"k": "a"}), ArgumentTypeError,
     "parameter 'k' must be a real number"),
    (lambda s, u: s.run(u, 1, params={"k": 1e300}, dtype=np.float32), InvalidArgumentError,
     "parameter 'k' is 1e+300, beyond float32's range"),
    (lambda s, u: s.run(u, 1, params={"k": 10**400}), InvalidArgumentError,
     "parameter 'k' is 100000000000... (401 digits), beyond float64's range"),
    (lambda s, u: s.run(u, 1, params={"c": 1.0}), InvalidArgumentError,
     "parameter 'c' is given but the stencil never reads it"),
    (lambda s, u: s.run(u, 1, prev=u), InvalidArgumentError,
     "prev is given but the stencil never reads u.prev"),
    (lambda s, u: s.run(np.full_like(u, np.nan), 1), InvalidArgumentError,
     "u0 holds 20 NaN or infinite value(s)"),
])
def test_bad_arguments_are_refused_in_one_line(any_compute, call, error, fragment):
    stencil = Stencil(HEAT, params={"k": 0.2})
    with pytest.raises(error) as caught:
        call(stencil, np.ones((4, 5)))
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_a_division_by_zero_is_named_as_a_possible_cause(any_compute):
    with pytest.raises(NonFiniteResultError) as caught:
        Stencil("u / 0").run(np.ones((3, 4)), 1, device=any_compute)
    assert "12 NaN or infinite value(s): the computation overflowed float64 (scale the input " \
           "down) or divided by zero" in str(caught.value)


def test_fields_are_checked():
    stencil = Stencil("u + b[1, 0]", fields=["b"])
    u0 = np.ones((4, 5))
    with pytest.raises(InvalidArgumentError, match="field 'b' is read by the stencil but not"):
        stencil.reference(u0, 1)
    with pytest.raises(InvalidArgumentError, match=r"field 'b' has shape \(5, 4\), u0 \(4, 5\)"):
        stencil.reference(u0, 1, fields={"b": u0.T})
    with pytest.raises(InvalidArgumentError, match="u0 must be a 3-D array"):
        Stencil("u[0, 0, 1]").reference(u0, 1)
    with pytest.raises(InvalidArgumentError, match="parameter 'k' has no value"):
        stencil = Stencil("k * u", params={"k": 1})
        stencil.params.clear()
        stencil.reference(u0, 1)


def test_stencil_arguments_are_checked():
    with pytest.raises(ArgumentTypeError, match="params must map names to numbers"):
        Stencil("u", params=[("k", 1)])
    with pytest.raises(InvalidArgumentError, match="the boundary value is inf"):
        Stencil("u", boundary=float("inf"))


def test_dtype_follows_u0_when_float(any_compute):
    stencil = Stencil("0.5 * (u[0, 1] + u[0, -1])")
    assert stencil.reference(np.ones((2, 3), np.float64), 1).dtype == np.float64
    assert stencil.reference(np.ones((2, 3), np.int64), 1).dtype == np.float32
    assert stencil.run(np.ones((2, 3)), 0, device=any_compute).dtype == np.float64
    # Either byte order: a big-endian file's float64 stays float64, with the same bits.
    u0 = np.random.default_rng(7).random((5, 6))
    swapped = u0.astype(">f8" if np.little_endian else "<f8")
    got = stencil.run(swapped, 3, device=any_compute)
    assert got.dtype == np.float64
    assert np.array_equal(got, stencil.run(u0, 3, device=any_compute))
    assert stencil.reference(swapped, 1).dtype == np.float64


def test_progress_reaches_the_end(any_compute):
    seen = []
    Stencil(HEAT, params={"k": 0.1}).run(np.ones((8, 8)), 40, device=any_compute,
                                          progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (40, 40)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_a_stop_request_interrupts(any_compute):
    with pytest.raises(Interrupted, match="stopped by a stop request at step"):
        Stencil(HEAT, params={"k": 0.1}).run(np.ones((8, 8)), 1000, device=any_compute,
                                              should_stop=lambda: True)
