"""Lomb-Scargle periodogram on one OpenCL device, with ``scipy.signal.lombscargle``'s results.

:func:`lombscargle` takes sample times ``x``, values ``y`` and angular frequencies ``freqs``
(NumPy or PyOpenCL arrays) and returns the periodogram SciPy returns for ``normalize`` False or
True (unit weights, ``floating_mean=False``); ``precenter`` subtracts the mean of ``y`` first.
One work-item computes one frequency in one pass over the samples (``kernels/lombscargle``).

:class:`Periodogram` keeps the device buffers and kernel of one problem for repeated runs. It
launches the frequencies in pieces of about :data:`LAUNCH_SECONDS` of device work each and
waits for each one, so that ``should_stop`` is polled (and Python's signal handlers run) at
least every few tenths of a second; the pieces do not change the result.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from oclsci.arrays import check_dtype, check_fits
from oclsci.errors import InputError, Interrupted, OclsciWarning
from oclsci.lombscargle.kernels import REGISTRY, auto_variant
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext, as_compute_context
from oclsci.runtime.launch import event_seconds
from oclsci.runtime.memory import check_memory
from oclsci.runtime.signals import stop_exit_code

# "auto" (the default): the variants' registry chooses (oclsci.lombscargle.kernels).
DEFAULT_VARIANT = "auto"
# Device seconds of work per launch once the speed is known; the first launch does
# PROBE_PAIRS sample-frequency pairs (or one frequency) to learn it.
LAUNCH_SECONDS = 0.1
PROBE_PAIRS = 2**20
MAX_INT = 2**31 - 1


def _host(array: Any, name: str) -> np.ndarray:
    """A 1-D float64 host copy of ``array`` (NumPy or PyOpenCL), refusing what is not."""
    if isinstance(array, cl_array.Array):
        array = array.get()
    try:
        values = np.asarray(array)
    except (TypeError, ValueError) as error:
        raise InputError(f"{name}: not an array ({error})") from None
    if values.dtype.kind not in "fiub":
        raise InputError(f"{name}: expected real numbers, got dtype {values.dtype}")
    if values.ndim != 1:
        raise InputError(f"{name} must be 1-D, got shape {values.shape}")
    values = values.astype(np.float64)
    if values.size == 0:
        raise InputError(f"{name} is empty")
    bad = np.count_nonzero(~np.isfinite(values))
    if bad:
        raise InputError(f"{name} holds {bad} NaN or infinite value(s)")
    return values


def resolve_normalize(normalize: Any) -> bool:
    """False/"power" -> False, True/"normalize" -> True; "amplitude" and others refused."""
    if isinstance(normalize, (bool, np.bool_)):
        return bool(normalize)
    if isinstance(normalize, str) and normalize in ("power", "normalize"):
        return normalize == "normalize"
    raise InputError(f"normalize must be False/'power' or True/'normalize', got {normalize!r}")


def resolve_dtype(dtype: Any, *arrays: Any) -> np.dtype:
    """``dtype`` as float32/float64; None: float32 when every array is float32, else float64."""
    if dtype is None:
        kinds = [np.asarray(a).dtype if not isinstance(a, cl_array.Array) else a.dtype
                 for a in arrays]
        return np.dtype(np.float32) if all(k == np.float32 for k in kinds) \
            else np.dtype(np.float64)
    return check_dtype(dtype)


def float32_bound(x: Any, freqs: Any, fast_math: bool = False) -> float:
    """Bound on ``max|p - p_scipy| / max(p_scipy)`` of a float32 (or fast-math) periodogram.

    The phase ``w * x`` is rounded to float32 (relative error eps), so each cosine and sine is
    off by up to ``eps * max|w x|``, and the power by twice that, relative to the peak; 16x that
    covers the sums and tau. native_sin/native_cos add their own error, about 2**-11 relative
    on the GPUs and CPUs measured (docs/lombscargle.md), hence ``fast_math`` allows 2**-9.
    """
    eps = float(np.finfo(np.float32).eps)
    phase = float(np.max(np.abs(np.asarray(x, np.float64)))
                  * np.max(np.abs(np.asarray(freqs, np.float64))))
    bound = 16 * eps * max(1.0, phase) + 1e-5
    return bound + (2.0**-9 if fast_math else 0.0)


class ZeroValuesWarning(OclsciWarning, RuntimeWarning):
    """y is zero everywhere, so the normalized periodogram is NaN (SciPy warns too, with a
    RuntimeWarning); the command line shows it as one ``oclsci: warning:`` line."""


@dataclass
class PeriodogramTimings:
    """Seconds of the last :meth:`Periodogram.run`: device (OpenCL events), wall, launches."""

    device_seconds: float
    wall_seconds: float
    launches: int
    source: str = "OpenCL events"


class Periodogram:
    """Buffers and kernel of one problem; :meth:`run` computes every frequency.

    ``variant``: "auto" or a variant of :data:`oclsci.lombscargle.kernels.VARIANTS`.
    ``paired_sincos=False`` calls sin() and cos() instead of sincos() (for tools that cannot
    follow sincos's pointer, such as Oclgrind; twice slower on PoCL).
    """

    def __init__(self, compute: ComputeContext, x: Any, y: Any, freqs: Any, *,
                 precenter: bool = False, normalize: Any = False, dtype: Any = None,
                 fast_math: bool = False, variant: str = DEFAULT_VARIANT,
                 paired_sincos: bool = True):
        self.compute = compute
        self.dtype = compute.check_dtype(resolve_dtype(dtype, x, y, freqs))
        if REGISTRY.check_choice(variant) == "auto":
            variant = auto_variant(compute, self.dtype)
        self.spec = REGISTRY.get(variant)
        self.normalize = resolve_normalize(normalize)
        xs, ys = _host(x, "x"), _host(y, "y")
        if xs.size != ys.size:
            raise InputError(f"x and y must have the same length, got {xs.size} and {ys.size}")
        if precenter:
            ys = ys - ys.mean()
        check_fits(xs, self.dtype, "x")
        check_fits(ys, self.dtype, "y")
        self.n = int(xs.size)
        device_freqs = isinstance(freqs, cl_array.Array) and freqs.dtype == self.dtype \
            and freqs.ndim == 1 and freqs.flags.c_contiguous
        config = self.spec.resolve({})
        if not compute.supports_fp64:
            config["typed"] = True  # the baseline's double literals need fp64
        if config["vector_width"] == 0:
            config["vector_width"] = compute.facts.vector_width(self.dtype)
        self.config = config
        self.vector_width = vw = config["vector_width"]
        self.f_count = int(freqs.size) if device_freqs else 0
        if not device_freqs:
            host_freqs = _host(freqs, "freqs")
            check_fits(host_freqs, self.dtype, "freqs")
            host_freqs = host_freqs.astype(self.dtype)
            self.f_count = host_freqs.size
        elif self.f_count == 0:
            raise InputError("freqs is empty")
        padded = -(-self.f_count // vw) * vw
        if self.n > MAX_INT or self.f_count > MAX_INT:
            raise InputError(f"{self.n} samples, {self.f_count} frequencies: at most 2**31 - 1")
        if self.normalize:
            mean_square = float(np.dot(ys, ys)) / self.n
            self.scale = np.inf if mean_square == 0 else 0.5 / mean_square
        else:
            self.scale = self.n / 4.0
        itemsize = self.dtype.itemsize
        # Host: the padded frequencies and the periodogram read back.
        check_memory(compute, itemsize * (2 * self.n + 2 * padded),
                     f"a periodogram of {self.n} samples at {self.f_count} frequencies",
                     host_bytes=itemsize * 2 * padded)
        flags, ctx = cl.mem_flags, compute.context
        self.x_buffer = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR,
                                  hostbuf=xs.astype(self.dtype))
        self.y_buffer = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR,
                                  hostbuf=ys.astype(self.dtype))
        if device_freqs and padded == self.f_count:
            self.freqs_buffer = freqs.data
        else:
            # Padded with the last frequency to a whole number of vectors.
            device_padded = cl_array.empty(compute.queue, padded, self.dtype)
            if device_freqs:
                device_padded[:self.f_count] = freqs
                device_padded[self.f_count:] = freqs[-1:].get()[0]
            else:
                device_padded.set(np.concatenate(
                    [host_freqs, np.full(padded - self.f_count, host_freqs[-1], self.dtype)]))
            self.freqs_buffer = device_padded.data
            self._freqs_array = device_padded
        self._pgram_padded = cl_array.empty(compute.queue, padded, self.dtype)
        self.pgram = self._pgram_padded[:self.f_count]
        self.variant, self.fast_math = variant, bool(fast_math)
        options = ("-cl-fast-relaxed-math",) if fast_math else ()
        self.kernel = programs.new_kernel(compute, self.spec.template, options=options,
                                          dtype=self.dtype, native=bool(fast_math),
                                          paired=bool(paired_sincos),
                                          **self.spec.template_params(config))
        self.pairs_per_second: float | None = None
        self.timings = PeriodogramTimings(0.0, 0.0, 0)

    def enqueue(self, first: int = 0, count: int | None = None) -> Any:
        """Launch the kernel for frequencies ``first .. first + count`` without waiting."""
        count = self.f_count - first if count is None else count
        spec = self.spec
        global_size, local = spec.launch(self.config, None, count,
                                         self.compute.facts.compute_units)
        self.kernel.set_args(*spec.bind(
            {"n": self.n, "first": first, "count": count, "x": self.x_buffer,
             "y": self.y_buffer, "freqs": self.freqs_buffer, "pgram": self._pgram_padded.data,
             "scale": self.scale}, self.dtype))
        return cl.enqueue_nd_range_kernel(self.compute.queue, self.kernel, global_size, local)

    def _launch_count(self, first: int) -> int:
        left = self.f_count - first
        pairs = PROBE_PAIRS if self.pairs_per_second is None \
            else self.pairs_per_second * LAUNCH_SECONDS
        count = int(min(left, max(1, pairs // self.n)))
        # Whole vectors, except the last launch (whose vector reaches into the padding).
        return count if count == left else max(self.vector_width,
                                               count // self.vector_width * self.vector_width)

    def run(self, should_stop: Any = None, progress: Any = None) -> cl_array.Array:
        """Compute every frequency into the device array ``self.pgram`` (returned).

        Launches of about :data:`LAUNCH_SECONDS` each, each waited for; ``should_stop()`` is
        polled after each, and a true answer raises :class:`~oclsci.errors.Interrupted` (exit
        code 128 + the answer when it is a signal number, else 1). ``progress(done, total)``,
        when given, hears the frequencies done after each launch.
        """
        wall = time.perf_counter()
        device, launches, first = 0.0, 0, 0
        while first < self.f_count:
            count = self._launch_count(first)
            started = time.perf_counter()
            event = self.enqueue(first, count)
            event.wait()
            seconds = time.perf_counter() - started
            if self.compute.profiling:
                try:
                    seconds = max(event_seconds(event), 1e-9)
                except cl.Error:
                    pass
            device += seconds
            launches += 1
            self.pairs_per_second = self.n * count / max(seconds, 1e-9)
            first += count
            if progress is not None:
                progress(first, self.f_count)
            stop = should_stop() if should_stop is not None and first < self.f_count else None
            if stop:
                # should_stop() may answer the signal's number: exit code 128 + N.
                raise Interrupted(f"stopped by a signal after {first} of {self.f_count} "
                                  "frequencies; no output written",
                                  exit_code=stop_exit_code(stop))
        if self.normalize and np.isinf(self.scale):
            warnings.warn("y is zero everywhere: the normalized periodogram is NaN",
                          ZeroValuesWarning, stacklevel=2)
            self._pgram_padded.fill(np.nan)
        self.timings = PeriodogramTimings(
            device, time.perf_counter() - wall, launches,
            "OpenCL events" if self.compute.profiling else "host clock")
        return self.pgram


def lombscargle(x: Any, y: Any, freqs: Any, *, precenter: bool = False,
                normalize: Any = False, dtype: Any = None, fast_math: bool = False,
                device: Any = None, return_device: bool = False,
                variant: str = DEFAULT_VARIANT) -> Any:
    """Lomb-Scargle periodogram of samples ``(x, y)`` at angular frequencies ``freqs``.

    Same meaning and results as ``scipy.signal.lombscargle(x, y, freqs, normalize=...)``
    (with ``y - y.mean()`` for ``precenter``). ``dtype`` float32 or float64 (None: float32
    when all inputs are float32, else float64); ``fast_math`` uses native_sin/native_cos and
    ``-cl-fast-relaxed-math`` (float32: see docs/lombscargle.md for the accuracy lost).
    ``device``: a SPEC, a ComputeContext or None. Returns a NumPy array, or the PyOpenCL
    array on the device with ``return_device``. NaN or infinite inputs are refused.
    """
    compute = as_compute_context(device)
    plan = Periodogram(compute, x, y, freqs, precenter=precenter, normalize=normalize,
                       dtype=dtype, fast_math=fast_math, variant=variant)
    result = plan.run()
    return result if return_device else result.get()
