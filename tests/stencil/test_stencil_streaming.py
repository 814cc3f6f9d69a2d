"""The stencil kernel ``streaming``: Jacobi's streaming template rendered with a stencil's
update. Jacobi's own rendering stays byte-identical to main's before the template took
pluggable updates; the stencil's equals the NumPy reference bit for bit (the seed's Jacobi
with a right-hand side, heat with a parameter and a boundary value; odd sizes, remainder
launches, float32 and float64) and, for the seed's Jacobi, ``oclsci.jacobi``'s results with
the same configuration; other stencils are refused in one line and never chosen by auto."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_stencil_kernels import DTYPES, _skip_without_fp64

from oclsci.errors import InvalidArgumentError
from oclsci.jacobi.kernels import KERNELS as JACOBI_KERNELS
from oclsci.jacobi.kernels import KernelConfig
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.specs import streaming as jacobi_streaming
from oclsci.runtime import programs
from oclsci.stencil import Stencil
from oclsci.stencil.codegen import streaming_params
from oclsci.stencil.kernels import auto_kernel, configurations
from oclsci.stencil.specs import Geometry
from oclsci.stencil.specs.streaming import SPEC, jacobi_params

JACOBI = Stencil("0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - b)", fields=["b"])
HEAT = "u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
SHAPES = [(1, 1), (1, 33), (3, 3), (29, 47), (70, 19)]
STEPS = (1, 5, 13)  # cumulative: remainders after launches of 2, 3, 4 or 5 steps
# Small strips and segments (PoCL runs the GPU design as given): every code path of the
# template (skew 2, two rows an advance, fields in registers, shared edges, prefetch).
CONFIGS = [
    {"cols": 2, "local_w": 8, "max_steps": 3, "seg_h": 5, "skew": 2},
    {"cols": 1, "local_w": 16, "max_steps": 5, "seg_h": 16},
    {"cols": 4, "local_w": 8, "max_steps": 3, "seg_h": 4, "rows": 2, "prefetch": 3},
    {"cols": 2, "local_w": 16, "max_steps": 4, "seg_h": 11, "rhs_in_regs": 1,
     "edge_levels": 4, "prefetch": 2},
]
SOURCES = Path(__file__).with_name("jacobi_streaming_sources.json")
GPU = {"is_cpu": False, "cus": 132, "max_wg": 1024, "local_mem": 48 * 1024}
CPU = {"is_cpu": True, "cus": 2, "max_wg": 4096, "local_mem": 1 << 20}


def _id(params: dict) -> str:
    return ",".join(f"{key}={value}" for key, value in params.items())


def _jacobi_source(values: tuple, dtype) -> str:
    config = KernelConfig("streaming", dict(zip(jacobi_streaming.KEYS, values, strict=True)))
    return programs.render("jacobi/streaming", **config.template_params(), dtype=dtype)


def test_jacobi_source_is_main_s():
    """Jacobi's streaming kernel renders byte for byte as before the template took
    pluggable updates, for its examples, corner cases, GPU defaults and a sample of its
    tuning space (the stored hashes): its bits and speed cannot have changed."""
    stored = json.loads(SOURCES.read_text())
    for key, want in stored["sources"].items():
        values = tuple(value == "True" if value in ("True", "False") else int(value)
                       for value in key.split(","))
        digest = hashlib.sha256()
        for dtype in (np.float32, np.float64):
            digest.update(_jacobi_source(values, dtype).encode())
        assert digest.hexdigest()[:16] == want, f"Jacobi's streaming source changed for {key}"


def test_the_stencil_s_jacobi_is_jacobi_s_kernel():
    """The seed's Jacobi as a stencil renders Jacobi's kernel: with its names mapped back
    (field f_b in registers f0 as rhs in b), only the signature and the update's text (the
    same operations, 0.25 in hexadecimal and no cast) differ."""
    params = {"cols": 2, "local_w": 128, "max_steps": 4, "seg_h": 64, "rhs_in_regs": 1,
              "prefetch": 2, "edge_levels": 4}
    p = SPEC.resolve(params)
    stencil = programs.render(SPEC.template, **streaming_params(JACOBI.expression, 2,
                                                                np.dtype(np.float32)),
                              **SPEC.template_params(p))
    renamed = (stencil.replace("rf0_", "rb_").replace("next_f0_", "next_b_")
               .replace("f0_", "b_").replace("f_b +", "rhs +"))
    jacobi = _jacobi_source(tuple(jacobi_params(p)[key] for key in jacobi_streaming.KEYS),
                            np.float32)

    def without_signature(source: str) -> list[str]:
        head, rest = source.split("void jacobi_streaming(")
        return (head + rest[rest.index("\n{\n"):]).splitlines()

    changed = [line for line in difflib.ndiff(without_signature(jacobi),
                                              without_signature(renamed))
               if line[:1] in "+-"]
    assert changed, "the stencil's source should differ in the update's text"
    for line in changed:
        assert ("(real_t)0.25 * (" if line[0] == "-" else "0x1.0000000000000p-2f * (") \
            in line, line


def _check(compute, stencil, u0, fields, params, *, steps=STEPS):
    references = {s: stencil.reference(u0, s, fields=fields) for s in steps}
    for total in steps:
        got = stencil.run(u0, total, fields=fields, device=compute, kernel="streaming",
                          kernel_params=params)
        want = references[total]
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            raise AssertionError(f"{params} {u0.dtype} {u0.shape} after {total} steps: "
                                 f"{len(bad)} cells differ, first {bad[0].tolist()}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("params", CONFIGS, ids=_id)
def test_jacobi_and_heat_equal_numpy(compute, params, dtype):
    _skip_without_fp64(compute, dtype)
    rng = np.random.default_rng(37)
    heat = Stencil(HEAT, params={"k": 0.2}, boundary=0.75)
    for shape in SHAPES:
        u0 = rng.uniform(-1, 1, shape).astype(dtype)
        b = rng.uniform(-1, 1, shape).astype(dtype)
        _check(compute, JACOBI, u0, {"b": b}, params)
        _check(compute, heat, u0, {}, params)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_two_fields_and_defaults(compute, dtype):
    """Two fields (kept in registers, and loaded per level), and the kernel's defaults for
    this device."""
    _skip_without_fp64(compute, dtype)
    rng = np.random.default_rng(5)
    two = Stencil("u + c * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u) + s * 0.5",
                  fields=["c", "s"], boundary=-0.25)
    u0 = rng.uniform(-1, 1, (21, 40)).astype(dtype)
    fields = {"c": rng.uniform(0, 0.2, u0.shape).astype(dtype),
              "s": rng.uniform(-1, 1, u0.shape).astype(dtype)}
    for rhs_in_regs in (0, 1):
        _check(compute, two, u0, fields, {**CONFIGS[0], "skew": 1, "rhs_in_regs": rhs_in_regs},
               steps=(7,))
    _check(compute, two, u0, fields, None, steps=(7,))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("params", CONFIGS[2:], ids=_id)
def test_jacobi_stencil_equals_oclsci_jacobi(compute, params, dtype):
    """The seed's Jacobi as a stencil (u0 = b, as oclsci.jacobi starts) gives oclsci.jacobi's
    result with the same streaming configuration, bit for bit."""
    _skip_without_fp64(compute, dtype)
    b = (np.random.default_rng(3).standard_normal((37, 101)) * 100).astype(dtype)
    solver = JacobiSolver(compute, b, dtype=dtype,
                          config=KernelConfig("streaming", jacobi_params(SPEC.resolve(params))))
    solver.advance(13)
    got = JACOBI.run(b, 13, fields={"b": b}, device=compute, kernel="streaming",
                     kernel_params=params)
    assert np.array_equal(got, solver.read())


def _geometry(text: str, shape=(16384, 16384), **options) -> Geometry:
    from oclsci.stencil.solver import geometry

    stencil = Stencil(text, **options)
    u0 = np.zeros(shape, np.float32)
    fields = {name: u0 for name in stencil.expression.fields}
    return geometry(stencil.problem(u0, 1, fields=fields), np.float32)


def test_auto_takes_streaming_for_the_stencils_it_takes():
    jacobi = _geometry(JACOBI.expression.text, fields=["b"])
    assert auto_kernel(GPU, jacobi) == "streaming"
    assert auto_kernel(GPU, _geometry(HEAT, params={"k": 0.1})) == "streaming"
    assert auto_kernel(CPU, jacobi) == "step"
    assert auto_kernel(GPU, _geometry(JACOBI.expression.text, (100, 100), fields=["b"])) \
        == "tiled"
    box = "u + 0.1 * (u[-1, -1] + u[1, 1] - 2 * u)"
    assert auto_kernel(GPU, _geometry(box)) == "tiled"
    assert auto_kernel(GPU, _geometry("u * 0.5")) != "streaming"  # reads no neighbour
    assert auto_kernel(GPU, _geometry("u + 0.1 * (u[0, 0, 1] - u)", (512, 512, 512))) \
        == "column"
    assert auto_kernel(GPU, _geometry("u + 0.1 * (u[0, 1, 1] - u)", (512, 512, 512))) \
        == "stream"
    assert [c.name for c in configurations(GPU, "auto", jacobi)][-1] == "step"


def test_defaults_are_jacobi_s():
    """On a GPU the stencil's defaults are Jacobi streaming's for the grid (segment heights
    fitted to the device); its tuning space is Jacobi's."""
    for dtype, itemsize in ((np.float32, 4), (np.float64, 8)):
        geo = Geometry((16384, 16384), 1, itemsize=itemsize,
                       reads=frozenset({("u", (-1, 0)), ("u", (1, 0)), ("b", (0, 0))}))
        want = [p for p, _ in jacobi_streaming.defaults(GPU, dtype, geo.shape)]
        assert [jacobi_params(p) for p in SPEC.defaults(GPU, geo)] == want
        assert len(SPEC.candidates(GPU, geo)) == \
            len(jacobi_streaming.candidates(geo.shape, dtype, GPU))


@pytest.mark.parametrize(("text", "options", "shape", "why"), [
    ("u + 0.1 * (u[0, 0, 1] - u)", {}, (3, 4, 5), "2-D stencils only, this one is 3-D"),
    ("u + 0.1 * (u[-2, 0] - u)", {}, (6, 7), "reads u[-2, 0]"),
    ("u + 0.1 * (u[1, 1] - u)", {}, (6, 7), "reads u[1, 1]"),
    ("u + c[0, 1]", {"fields": ["c"]}, (6, 7), "reads fields at the cell only"),
    ("2 * u - u.prev", {}, (6, 7), "does not take u.prev"),
    # Radius 0: the kernel's layout has one boundary cell around the grid, the stencil's none.
    ("u * 0.5", {}, (6, 7), "radius 1 only"),
    ("u + b", {"fields": ["b"]}, (6, 7), "radius 1 only"),
])
def test_other_stencils_are_refused_in_one_line(compute, text, options, shape, why):
    stencil = Stencil(text, **options)
    u0 = np.zeros(shape, np.float32)
    fields = {name: u0 for name in stencil.expression.fields}
    with pytest.raises(InvalidArgumentError, match=f"kernel streaming: .*{re.escape(why)}"):
        stencil.run(u0, 1, fields=fields, device=compute, kernel="streaming")
    with pytest.raises(InvalidArgumentError, match=re.escape(why)):
        stencil.run(u0, 1, fields=fields, device=compute, kernel="streaming",
                    kernel_params=CONFIGS[0])


def test_the_spec_is_jacobi_s():
    """The same template and parameters as Jacobi's kernel (rhs_in_regs an integer)."""
    assert SPEC.template == JACOBI_KERNELS["streaming"].template
    assert [p.name for p in SPEC.params] == list(jacobi_streaming.KEYS)


@pytest.mark.parametrize("facts", [CPU, GPU], ids=["cpu", "gpu"])
@pytest.mark.parametrize("itemsize", [4, 8])
def test_defaults_and_tuning_space_fit(facts, itemsize):
    geo = Geometry((300, 300), 1, itemsize=itemsize,
                   reads=frozenset({("u", (-1, 0)), ("u", (0, 1)), ("b", (0, 0))}))
    assert [p for p in SPEC.defaults(facts, geo)
            if SPEC.problem(SPEC.resolve(p), geo, facts) is None]
    for p in SPEC.candidates(facts, geo) if not facts["is_cpu"] else []:
        assert SPEC.problem(SPEC.resolve(p), geo, facts) is None, p
        assert SPEC.cost(SPEC.resolve(p), geo, facts) > 0


def test_the_gpu_script_runs_small_anywhere():
    """benchmarks/stencil_vs_jacobi.py (run on a GPU by hand) on a small grid: every stencil
    kernel's result has Jacobi's bits."""
    from conftest import DEVICE_SPECS, REPO_ROOT

    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device")
    env = dict(os.environ, OCLSCI_TUNE_CACHE="off",  # the checkout first, then the rest
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" /
                                                 "stencil_vs_jacobi.py"),
                             "--size", "45", "--steps", "7", "--rounds", "1", "--device",
                             DEVICE_SPECS[0]], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "oclsci jacobi auto" in lines[1]
    for kernel, line in zip(["auto", "streaming", "tiled", "stream", "step"], lines[2:7],
                            strict=True):
        assert f"stencil {kernel} " in line and "bit-exact" in line, line
    assert lines[7].startswith("stencil auto >= 90% of oclsci jacobi auto")
