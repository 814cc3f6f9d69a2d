"""Lomb-Scargle benchmark case: the seed's 2**10 samples at 2**20 frequencies, float32 and float64.

Reference: ``scipy.signal.lombscargle`` (SciPy's own code, called on blocks of frequencies so
that its ``samples x frequencies`` temporaries stay small; :func:`lombscargle_numpy` where
SciPy is missing). Variants: each of the seed's tuning steps as an OpenCL kernel
(:data:`oclsci.lombscargle.kernels.VARIANTS`) and the kept one with ``--fast-math``. Each
variant's first call in this process (plan, build or disk-cache load, run) is given in its
description; the first call in a fresh process, with the binary cache warm, in the notes. One
"iteration" is the whole periodogram; the throughput counts sample-frequency pairs (one sine
and one cosine each).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl

from oclsci.bench.core import Case, Check, Timing, host_timed
from oclsci.lombscargle import VARIANTS, Periodogram, auto_variant, float32_bound, lombscargle_numpy
from oclsci.runtime import programs
from oclsci.runtime.launch import timed

SEED_CASE = (2**10, 2**20)
QUICK_CASE = (2**10, 2**14)
# Seconds of SciPy per block of frequencies: 2**22 sample-frequency pairs per call.
SCIPY_BLOCK_PAIRS = 2**22
# Sine-cosine pairs per clock per compute unit on NVIDIA GPUs: 16 special-function results
# per SM per clock (sm_70 .. sm_90), two per pair.
NVIDIA_PAIRS_PER_CLOCK_PER_SM = 8


def seed_inputs(samples: int, frequencies: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's test signal: y = 2 cos(x + pi/2) at sorted random times in [0.01, 10 pi],
    angular frequencies linspace(0.01, 10, frequencies)."""
    rng = np.random.default_rng(2020)
    x = np.sort(rng.uniform(0.01, 10 * np.pi, samples))
    y = 2.0 * np.cos(x + 0.5 * np.pi)
    return x, y, np.linspace(0.01, 10.0, frequencies)


_SCIPY_RUNS: dict = {}


class ScipyLombScargle:
    """scipy.signal.lombscargle on blocks of frequencies (float64, as SciPy computes)."""

    kind = "host"
    name = "scipy"

    def __init__(self, x: np.ndarray, y: np.ndarray, freqs: np.ndarray):
        self.x, self.y, self.freqs = x, y, freqs
        try:  # SciPy is optional: without it, its algorithm in NumPy is the reference
            from scipy.signal import lombscargle as function

            self.description = (f"scipy.signal.lombscargle, float64, on blocks of "
                                f"{max(1, SCIPY_BLOCK_PAIRS // x.size)} frequencies; one "
                                "timed call, shared by the float32 and float64 tables")
        except ImportError:
            function = lombscargle_numpy
            self.description = "oclsci.lombscargle.periodogram_numpy (SciPy's algorithm; no SciPy)"
        self.function = function

    def run(self, iterations: int) -> Timing:
        """SciPy is timed once per problem (minutes at the seed's size on a CPU core): the
        bench's warm-up and timed runs, and the float32 and float64 tables, share that call
        (SciPy computes in float64 either way)."""
        key = (self.x.size, self.freqs.size)
        if key not in _SCIPY_RUNS:
            _SCIPY_RUNS[key] = self._timed()
        done = _SCIPY_RUNS[key]
        return Timing(done.wall, None, done.output, "host clock, one call shared")

    def _timed(self) -> Timing:
        block = max(1, SCIPY_BLOCK_PAIRS // self.x.size)

        def compute() -> np.ndarray:
            return np.concatenate([
                np.atleast_1d(self.function(self.x, self.y, self.freqs[i:i + block]))
                for i in range(0, self.freqs.size, block)])
        return host_timed(compute)


class OpenclLombScargle:
    """One kernel configuration through :class:`oclsci.lombscargle.Periodogram`."""

    kind = "opencl"

    def __init__(self, compute: Any, inputs: tuple, dtype: str, variant: str,
                 fast_math: bool = False):
        self.compute, self.inputs, self.dtype = compute, inputs, dtype
        self.variant, self.fast_math = variant, fast_math
        self.name = variant + ("+fast-math" if fast_math else "")
        if variant == "auto":
            kept = auto_variant(compute, dtype)
            self.base = f"auto (here `{kept}`)"
        else:
            config = VARIANTS[variant].resolve({})
            width = config["vector_width"]
            self.base = (
                f"{'explicit real_t literals' if config['typed'] else 'double literals'}, "
                + (f"reqd_work_group_size({config['local_size']})"
                   if config["local_size"] else "work-groups of 128, no attribute")
                + (", grid-stride (20 work-groups per compute unit)" if config["stride"]
                   else ", one work-item per " + ("frequency" if width == 1 else
                                                  "vector of the device's preferred width "
                                                  "of frequencies")))
        if fast_math:
            self.base += ", native_sin/cos + -cl-fast-relaxed-math"
        self.description = self.base
        self.plan: Any = None

    def run(self, iterations: int) -> Timing:
        """The first call (the bench's warm-up) includes the plan and the program build (from
        PyOpenCL's disk cache when warm); its time goes into the description."""
        if self.plan is None:
            def first_call() -> Any:
                plan = Periodogram(self.compute, *self.inputs, dtype=self.dtype,
                                   fast_math=self.fast_math, variant=self.variant)
                plan.run()
                return plan

            first, self.plan = timed(first_call)
            self.description = f"{self.base}; first call in this process {first * 1e3:.1f} ms"
            return Timing(first, None, self.plan.pgram.get().astype(np.float64))
        wall, _ = timed(self.plan.run)
        timings = self.plan.timings
        return Timing(wall, timings.device_seconds, self.plan.pgram.get().astype(np.float64),
                      timings.source)


def relative_to_peak(rtol: float):
    """A checker: ``max|x - ref| <= rtol * max|ref|`` (the float32 bound, or 1e-10)."""
    def check(output: Any, reference: Any) -> Check:
        x, ref = np.asarray(output, np.float64), np.asarray(reference, np.float64)
        if x.shape != ref.shape:
            return Check(False, f"shape {x.shape} instead of {ref.shape}")
        scale = float(np.max(np.abs(ref)))
        error = float(np.max(np.abs(x - ref)))
        relative = error / scale if scale > 0 else error
        passed = bool(np.all(np.isfinite(x))) and relative <= rtol
        return Check(passed, f"{'ok' if passed else 'WRONG'}: max error {relative:.2g} of the "
                             f"peak (tolerance {rtol:.2g})",
                     {"max_abs_error": error, "max_rel_error": relative, "rtol": rtol})
    return check


def sincos_bound(compute: Any, pairs: float) -> str | None:
    """The time of ``pairs`` sine-cosine pairs at the special-function units' peak (NVIDIA)."""
    if "nvidia" not in compute.platform.name.lower() or not compute.is_gpu:
        return None
    units, mhz = compute.device.max_compute_units, compute.device.max_clock_frequency
    rate = units * mhz * 1e6 * NVIDIA_PAIRS_PER_CLOCK_PER_SM
    return (f"sin/cos bound: {pairs:.4g} pairs at {units} SMs x {mhz} MHz x "
            f"{NVIDIA_PAIRS_PER_CLOCK_PER_SM} pairs/clock (16 MUFU results/SM/clock) = "
            f"{rate:.4g} pairs/s: {pairs / rate * 1e3:.3f} ms (native_sin/cos; the accurate "
            "sincos costs more)")


def registers(compute: Any, dtype: str, fast_math: bool) -> str | None:
    """Registers per work-item of the kept kernel where the driver says (NVIDIA's -nv-verbose)."""
    if "nvidia" not in compute.platform.name.lower():
        return None
    options = ("-cl-nv-verbose",) + (("-cl-fast-relaxed-math",) if fast_math else ())
    try:
        spec = VARIANTS["stride"]
        program = programs.build_program(compute, spec.template, options, dtype=np.dtype(dtype),
                                         native=fast_math, paired=True,
                                         **spec.template_params(spec.resolve({})))
        log = program.get_build_info(compute.device, cl.program_build_info.LOG)
    except (cl.Error, Exception):  # noqa: BLE001 - a note, never a failure
        return None
    found = re.search(r"Used (\d+) registers", log or "")
    return f"{dtype}{' fast-math' if fast_math else ''}: {found.group(1)} registers" \
        if found else None


FRESH_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
from oclsci.runtime.device import create_context
from oclsci.bench.lombscargle import seed_inputs
from oclsci.lombscargle import Periodogram
compute = create_context({spec!r})
x, y, f = seed_inputs({n}, {f})
t1 = time.perf_counter()
plan = Periodogram(compute, x, y, f, dtype={dtype!r}, fast_math={fast})
plan.run().get()
t2 = time.perf_counter()
times = []
for _ in range(5):
    s = time.perf_counter(); plan.run().get(); times.append(time.perf_counter() - s)
print(json.dumps({{"first": t2 - t1, "average": sum(times) / len(times), "start": t1 - t0}}))
"""


def fresh_process_first_call(compute: Any, samples: int, frequencies: int, dtype: str,
                             fast_math: bool) -> str:
    """First call in a new process (binary cache warm: run twice, keep the second)."""
    code = FRESH_PROCESS.format(spec=compute.spec, n=samples, f=frequencies, dtype=dtype,
                                fast=fast_math)
    figures = None
    # The same oclsci as this process's, installed or from a checkout.
    package_parent = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p))
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=600, env=env)
        if done.returncode != 0:
            return f"fresh-process first call: failed ({done.stderr.strip()[-200:]})"
        figures = json.loads(done.stdout.strip().splitlines()[-1])
    return (f"fresh process, binary cache warm ({dtype}{', fast math' if fast_math else ''}): "
            f"first call {figures['first'] * 1e3:.1f} ms (plan, program from the disk cache, "
            f"run, copy back), then {figures['average'] * 1e3:.2f} ms on average: "
            f"{(figures['first'] - figures['average']) * 1e3:.1f} ms above; imports and "
            f"context {figures['start'] * 1e3:.0f} ms before")


def cases(compute: Any, quick: bool = False) -> tuple[list[Case], list[str]]:
    """The seed's case in float32 and float64 (smaller with ``quick``)."""
    samples, frequencies = QUICK_CASE if quick else SEED_CASE
    inputs = seed_inputs(samples, frequencies)
    reference = ScipyLombScargle(*inputs)
    pairs = float(samples) * frequencies
    found, skipped = [], []
    for dtype in ("float32", "float64"):
        if dtype == "float64" and not compute.supports_fp64:
            skipped.append("lombscargle float64: the device has no fp64")
            continue
        variants = [OpenclLombScargle(compute, inputs, dtype, name) for name in VARIANTS]
        if dtype == "float32":  # fast math changes float32 only (OpenCL: no double native_sin)
            variants.append(OpenclLombScargle(compute, inputs, dtype, "auto", fast_math=True))
            tolerance = float32_bound(inputs[0], inputs[2], fast_math=True)
            how = "float32_bound(fast_math=True) of oclsci.lombscargle.periodogram; the errors " \
                  "of each variant are in the JSON report (max_rel_error)"
        else:
            tolerance, how = 1e-10, "float64"
        notes = [f"check: max error within {tolerance:.2g} of the peak ({how})",
                 f"{samples} samples, {frequencies} angular frequencies linspace(0.01, 10), "
                 "y = 2 cos(x + pi/2) at sorted random times in [0.01, 10 pi]"]
        notes += [n for n in (sincos_bound(compute, pairs), registers(compute, dtype, False),
                              registers(compute, dtype, True)) if n]
        if not quick:
            notes.append(fresh_process_first_call(compute, samples, frequencies, dtype, False))
        found.append(Case(
            id=f"lombscargle-{samples}x{frequencies}-{dtype}", workload="lombscargle",
            title=f"Lomb-Scargle, {samples} samples x {frequencies} frequencies, {dtype} "
                  "(the seed's case)", problem={"samples": samples, "frequencies": frequencies,
                                                "dtype": dtype},
            iterations=1, iteration_unit="periodogram", reference=reference,
            variants=variants, work=pairs, throughput_unit="sample-frequency pairs/s",
            warmup_iterations=1, checker=relative_to_peak(tolerance), notes=notes,
            extrapolate=False))
    return found, skipped
