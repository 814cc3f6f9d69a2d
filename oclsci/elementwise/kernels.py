"""CuPy-style elementwise kernels for OpenCL: ``ElementwiseKernel(in_params, out_params, op)``.

A kernel is declared with typed parameter lists and a C operation on one element::

    add = ElementwiseKernel("T x, T y", "T z", "z = x + y", "add")
    z = add(x, y)                      # NumPy arrays in, a NumPy array out
    hadamard = ElementwiseKernel("float32 x, float32 val", "float32 y", "y = x + val")
    hadamard(x, np.float32(3.0), y)    # val is a scalar; y is written

Parameter types are NumPy names (int8 ... int64, uint8 ... uint64, float32, float64) or
one-letter placeholders (``T``) bound to the dtype of the arguments at call time. An argument
given as a Python or NumPy scalar instead of an array becomes a by-value scalar. An output with
the name of an input is written in place (``ElementwiseKernel("T x, T a", "T x", "x = x + a")``
increments ``x``), and so is an output given the same array as an input.

In the operation every parameter is a variable of its type, ``i`` is the element index and ``n``
the number of elements. Arguments may be NumPy arrays (copied to the device and back; outputs
not given are allocated and returned) or ``pyopencl.array.Array`` objects of the same context
(used in place, no copies; the call returns without waiting). The OpenCL program is rendered
from ``kernels/elementwise.cl.mako`` and memoised per context, kernel and resolved dtypes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from oclsci.errors import InputError, InvalidArgumentError, KernelBuildError
from oclsci.runtime import programs
from oclsci.runtime.device import ComputeContext, as_compute_context

# The dtypes an elementwise kernel accepts, by the names used in parameter lists.
TYPE_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64")
DTYPES = {name: np.dtype(name) for name in TYPE_NAMES}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLACEHOLDER = re.compile(r"[A-Z]\Z")
# Names the generated code uses itself.
RESERVED_NAMES = frozenset({"i", "n", "base"})

DEFAULT_LOCAL_SIZE = 256


@dataclass(frozen=True)
class Param:
    """One declared parameter: its type (a dtype name or a placeholder letter) and its name."""

    type_name: str
    name: str

    @property
    def is_placeholder(self) -> bool:
        return bool(_PLACEHOLDER.match(self.type_name))


def parse_params(text: str, what: str = "parameters") -> list[Param]:
    """Parse ``"float32 x, T y"`` into :class:`Param` objects, or raise :class:`InputError`."""
    if not isinstance(text, str):
        raise InputError(f"{what} must be a string such as 'float32 x, T y', got {text!r}")
    params: list[Param] = []
    if not text.strip():
        return params
    for item in text.split(","):
        words = item.split()
        if len(words) != 2:
            raise InputError(f"{what}: {item.strip()!r} is not 'TYPE NAME' "
                             f"(e.g. 'float32 x' or 'T x')")
        type_name, name = words
        if type_name not in DTYPES and not _PLACEHOLDER.match(type_name):
            raise InputError(f"{what}: unknown type name {type_name!r} in {item.strip()!r}; use "
                             f"one of {', '.join(TYPE_NAMES)} or a one-letter placeholder "
                             f"such as T")
        if not _IDENTIFIER.match(name) or name.startswith("oclsci_"):
            raise InputError(f"{what}: {name!r} is not a valid parameter name")
        if name in RESERVED_NAMES:
            raise InputError(f"{what}: {name!r} is reserved (the element index is i, the size "
                             "n); choose another parameter name")
        if any(p.name == name for p in params):
            raise InputError(f"{what}: parameter {name!r} is declared twice")
        params.append(Param(type_name, name))
    return params


def _is_scalar(value: Any) -> bool:
    return (isinstance(value, (int, float, np.generic))
            or (isinstance(value, np.ndarray) and value.ndim == 0))


def _scalar_dtype(value: Any) -> np.dtype:
    """The dtype a scalar brings to a placeholder: its own for NumPy, NumPy's default else."""
    if isinstance(value, (bool, np.bool_)):
        raise InputError("booleans are not supported; pass 0 or 1 of an integer type")
    if isinstance(value, (np.generic, np.ndarray)):
        return np.dtype(value.dtype)
    return np.dtype(np.int64) if isinstance(value, int) else np.dtype(np.float64)


def _cast_scalar(value: Any, dtype: np.dtype, where: str) -> Any:
    """``value`` as a NumPy scalar of ``dtype``, refusing lossy kinds and out-of-range ints."""
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"{where}: booleans are not supported")
    source = np.asarray(value)
    if source.dtype.kind not in "iuf":
        raise InputError(f"{where}: expected a number, got {value!r}")
    if dtype.kind in "iu":
        if source.dtype.kind == "f":
            raise InputError(f"{where}: floating-point value {value!r} for a {dtype} parameter")
        info = np.iinfo(dtype)
        if not info.min <= int(source) <= info.max:
            raise InputError(f"{where}: {int(source)} does not fit in {dtype} "
                             f"[{info.min}, {info.max}]")
        return dtype.type(int(source))
    with np.errstate(over="ignore"):
        return dtype.type(source)


@dataclass
class _Arg:
    """One argument of a call, resolved."""

    param: Param
    kind: str  # "numpy", "clarray" or "scalar"
    value: Any
    dtype: np.dtype | None = None
    allocated: bool = False  # an output allocated here: nothing to upload


class ElementwiseKernel:
    """A CuPy-like elementwise kernel; call it with the inputs (then, optionally, the outputs).

    ``in_params`` / ``out_params``: comma-separated ``TYPE NAME`` lists; ``operation``: C
    statements for one element; ``name``: the kernel's name (a C identifier); ``preamble``: C
    code placed before the kernel; ``fp_contract``: let the compiler fuse ``a*b + c`` into
    ``fma`` (faster on some devices, but results then differ from NumPy's in the last bit).
    """

    def __init__(self, in_params: str, out_params: str, operation: str,
                 name: str = "elementwise_kernel", *, preamble: str = "",
                 fp_contract: bool = False, per_item: int = 1):
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or name.startswith("oclsci"):
            raise InputError(f"kernel name {name!r} is not a valid C identifier")
        if not isinstance(operation, str) or not operation.strip():
            raise InputError(f"kernel {name}: the operation must be non-empty C code")
        if not isinstance(preamble, str):
            raise InputError(f"kernel {name}: the preamble must be a string")
        if not isinstance(per_item, int) or not 1 <= per_item <= 64:
            raise InputError(f"kernel {name}: per_item must be an integer from 1 to 64")
        self._spec = (in_params, out_params, operation, name)
        self.name = name
        self.operation = operation
        self.preamble = preamble
        self.fp_contract = bool(fp_contract)
        self.per_item = per_item
        self.in_params = parse_params(in_params, f"kernel {name}: input parameters")
        self.out_params = parse_params(out_params, f"kernel {name}: output parameters")
        if not self.out_params:
            raise InputError(f"kernel {name}: at least one output parameter is needed")
        inputs = {p.name: p for p in self.in_params}
        for p in self.out_params:
            if p.name in inputs and inputs[p.name].type_name != p.type_name:
                raise InputError(f"kernel {name}: in-place parameter {p.name!r} is declared "
                                 f"{inputs[p.name].type_name} as input but {p.type_name} as "
                                 "output")
        # Outputs that are also inputs are written in place and not passed again.
        self.inplace = [p for p in self.out_params if p.name in inputs]
        self.extra_outputs = [p for p in self.out_params if p.name not in inputs]
        self.last_event: Any = None   # the last launch of the last call
        self.last_events: list = []   # every launch of the last call (one or two)

    def variant(self, *, fp_contract: bool | None = None,
                per_item: int | None = None) -> ElementwiseKernel:
        """The same kernel with other code-generation settings."""
        return ElementwiseKernel(
            *self._spec, preamble=self.preamble,
            fp_contract=self.fp_contract if fp_contract is None else fp_contract,
            per_item=self.per_item if per_item is None else per_item)

    def __repr__(self) -> str:
        ins = ", ".join(f"{p.type_name} {p.name}" for p in self.in_params)
        outs = ", ".join(f"{p.type_name} {p.name}" for p in self.out_params)
        return f"ElementwiseKernel({ins!r}, {outs!r}, {self.operation!r}, {self.name!r})"

    # -- argument resolution -------------------------------------------------------------

    def _usage(self) -> str:
        ins = ", ".join(p.name for p in self.in_params) or "no inputs"
        outs = ", ".join(p.name for p in self.extra_outputs)
        return (f"kernel {self.name} takes {len(self.in_params)} input(s) ({ins})"
                + (f" then optionally {len(self.extra_outputs)} output(s) ({outs})" if outs
                   else ""))

    def _classify(self, param: Param, value: Any, is_output: bool) -> _Arg:
        where = f"kernel {self.name}: argument {param.name!r}"
        if isinstance(value, cla.Array):
            return _Arg(param, "clarray", value, np.dtype(value.dtype))
        if isinstance(value, np.ndarray) and value.ndim > 0:
            return _Arg(param, "numpy", value, np.dtype(value.dtype))
        if _is_scalar(value):
            if is_output:
                raise InputError(f"{where} is an output and must be an array, got a scalar")
            _scalar_dtype(value)  # refuses booleans
            return _Arg(param, "scalar", value)
        raise InputError(f"{where}: expected a NumPy or pyopencl array or a scalar, got "
                         f"{type(value).__name__}")

    def _resolve_types(self, args: list[_Arg]) -> dict[str, np.dtype]:
        """Bind each placeholder letter to a dtype: from arrays first, then from scalars."""
        bound: dict[str, np.dtype] = {}
        origin: dict[str, str] = {}
        for arg in args:
            if arg.kind != "scalar" and arg.param.is_placeholder:
                letter = arg.param.type_name
                if letter in bound and bound[letter] != arg.dtype:
                    raise InputError(
                        f"kernel {self.name}: dtype mismatch for placeholder {letter}: "
                        f"{origin[letter]!r} is {bound[letter]} but {arg.param.name!r} is "
                        f"{arg.dtype}")
                bound.setdefault(letter, arg.dtype)
                origin.setdefault(letter, arg.param.name)
        for arg in args:
            if arg.kind == "scalar" and arg.param.is_placeholder:
                bound.setdefault(arg.param.type_name, _scalar_dtype(arg.value))
        return bound

    def _param_dtype(self, param: Param, bound: dict[str, np.dtype]) -> np.dtype:
        if param.is_placeholder:
            if param.type_name not in bound:
                raise InputError(f"kernel {self.name}: cannot tell the type {param.type_name} of "
                                 f"{param.name!r}: pass an array or a scalar that fixes it")
            return bound[param.type_name]
        return DTYPES[param.type_name]

    # -- call -----------------------------------------------------------------------------

    def __call__(self, *args: Any, device: Any = None, size: int | None = None) -> Any:
        """Run the kernel; return the output array (or a tuple of them, in declaration order).

        ``device``: a SPEC, a :class:`ComputeContext` or None (pyopencl arrays must belong to
        its context). ``size``: the number of elements when no argument is an array.
        """
        n_in, n_extra = len(self.in_params), len(self.extra_outputs)
        if len(args) not in (n_in, n_in + n_extra):
            raise InputError(f"{self._usage()}; got {len(args)} argument(s)")
        resolved = [self._classify(p, v, False)
                    for p, v in zip(self.in_params, args[:n_in], strict=True)]
        given_outputs = [self._classify(p, v, True)
                         for p, v in zip(self.extra_outputs, args[n_in:], strict=False)]
        everything = resolved + given_outputs
        for arg in resolved:
            if arg.kind == "scalar" and any(p.name == arg.param.name for p in self.inplace):
                raise InputError(f"kernel {self.name}: argument {arg.param.name!r} is written in "
                                 "place and must be an array, got a scalar")
        # The results are copied back into the NumPy arrays written: refuse read-only ones
        # now, before the device's work (PyOpenCL would fail only on the copy back).
        inplace = {p.name for p in self.inplace}
        written = [a for a in resolved if a.param.name in inplace] + given_outputs
        for arg in written:
            if arg.kind == "numpy" and not arg.value.flags.writeable:
                raise InvalidArgumentError(
                    f"kernel {self.name}: argument {arg.param.name!r} is written but its NumPy "
                    "array is read-only; pass a writable array (a copy of it, for instance)")
        bound = self._resolve_types(everything)
        compute = as_compute_context(device)

        # Dtypes and shapes.
        shape: tuple[int, ...] | None = None
        shape_from = ""
        for arg in everything:
            expected = compute.check_dtype(self._param_dtype(arg.param, bound))
            if expected not in DTYPES.values():
                raise InputError(f"kernel {self.name}: dtype {expected} of {arg.param.name!r} is "
                                 f"not supported (use one of {', '.join(TYPE_NAMES)})")
            if arg.kind == "scalar":
                arg.dtype = expected
                arg.value = _cast_scalar(arg.value, expected,
                                         f"kernel {self.name}: argument {arg.param.name!r}")
                continue
            if arg.dtype != expected:
                raise InputError(f"kernel {self.name}: dtype mismatch: argument "
                                 f"{arg.param.name!r} is {arg.dtype}, expected {expected}")
            if shape is None:
                shape, shape_from = tuple(arg.value.shape), arg.param.name
            elif tuple(arg.value.shape) != shape:
                raise InputError(f"kernel {self.name}: shape mismatch: {shape_from!r} has shape "
                                 f"{shape} but {arg.param.name!r} has {tuple(arg.value.shape)}")
            if arg.kind == "clarray":
                if arg.value.context != compute.context:
                    raise InputError(f"kernel {self.name}: array {arg.param.name!r} belongs to "
                                     "another OpenCL context; create it with the queue of the "
                                     "device you pass")
                if not arg.value.flags.c_contiguous:
                    raise InputError(f"kernel {self.name}: pyopencl array {arg.param.name!r} is "
                                     "not C-contiguous; make a contiguous copy first")
        out_dtypes = [compute.check_dtype(self._param_dtype(p, bound)) for p in self.out_params]
        if shape is None:
            if size is None:
                raise InputError(f"kernel {self.name}: no array argument; pass size=N")
            if int(size) < 0:
                raise InputError(f"kernel {self.name}: size must be >= 0, got {size}")
            shape = (int(size),)
        elif size is not None and int(size) != int(np.prod(shape)):
            raise InputError(f"kernel {self.name}: size={size} but the arrays have "
                             f"{int(np.prod(shape))} elements")
        count = int(np.prod(shape))
        on_device = any(a.kind == "clarray" for a in everything)
        return self._run(compute, resolved, given_outputs, out_dtypes, shape, count, on_device)

    def _run(self, compute: ComputeContext, inputs: list[_Arg], given: list[_Arg],
             out_dtypes: list[np.dtype], shape: tuple[int, ...], count: int,
             on_device: bool) -> Any:
        queue = compute.queue
        by_name = {a.param.name: a for a in inputs}
        out_dtype_of = {p.name: d for p, d in zip(self.out_params, out_dtypes, strict=True)}
        # Outputs: given, in place (the input itself), or allocated.
        outputs: dict[str, _Arg] = {}
        for p in self.inplace:
            outputs[p.name] = by_name[p.name]
        for p, arg in zip(self.extra_outputs, given, strict=False):
            outputs[p.name] = arg
        for p in self.extra_outputs:
            if p.name not in outputs:
                dtype = out_dtype_of[p.name]
                value = (cla.empty(queue, shape, dtype) if on_device
                         else np.empty(shape, dtype=dtype))
                outputs[p.name] = _Arg(p, "clarray" if on_device else "numpy", value, dtype,
                                       allocated=True)

        # The kernel's parameters: the inputs, then the outputs not already among them.
        kernel_params: list[tuple[_Arg, bool]] = [(a, a.param.name in outputs) for a in inputs]
        kernel_params += [(outputs[p.name], True) for p in self.extra_outputs]
        self._check_overlaps([a for a, _ in kernel_params if a.kind == "clarray"])

        results = [outputs[p.name].value for p in self.out_params]
        if count == 0:
            return results[0] if len(results) == 1 else tuple(results)

        # Device memory: pyopencl arrays as they are; one buffer per distinct NumPy array.
        buffers: dict[int, tuple[Any, np.ndarray]] = {}
        wait_for: list[Any] = []
        kernel_args: list[Any] = []
        spec = []
        copies_back: list[tuple[Any, np.ndarray, np.ndarray]] = []
        mf = cl.mem_flags
        for arg, written in kernel_params:
            ctype = programs.cl_type(arg.dtype)
            if arg.kind == "scalar":
                kernel_args.append(arg.value)
                spec.append((arg.param.name, ctype, False, False))
                continue
            if arg.kind == "clarray":
                array = arg.value
                wait_for.extend(array.events)
                kernel_args += [array.base_data, np.uint64(array.offset // array.dtype.itemsize)]
            else:
                host = arg.value
                key = _memory_key(host)
                if key not in buffers:
                    contiguous = np.ascontiguousarray(host)
                    buffer = (cl.Buffer(compute.context, mf.READ_WRITE, contiguous.nbytes)
                              if arg.allocated else
                              cl.Buffer(compute.context, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                        hostbuf=contiguous))
                    buffers[key] = (buffer, contiguous)
                buffer, contiguous = buffers[key]
                if written and all(c[2] is not host for c in copies_back):
                    copies_back.append((buffer, contiguous, host))
                kernel_args += [buffer, np.uint64(0)]
            spec.append((arg.param.name, ctype, True, written))
        kernel_args.append(np.uint64(count))

        uses_fp64 = any(a.dtype == np.float64 for a, _ in kernel_params)
        params = dict(dtype=None, kernel_name=self.name, params=tuple(spec),
                      operation=self.operation, preamble=self.preamble, per_item=self.per_item,
                      fp_contract=self.fp_contract, uses_fp64=uses_fp64)
        try:
            kernels = [programs.get_kernel(compute, "elementwise", name=name, **params)
                       for name in (self.name, self.name + "_tail")]
        except KernelBuildError as error:
            # A shorter, one-line message (the operation may span lines); log and source kept.
            first = next((line.strip() for line in error.build_log.splitlines()
                          if "error" in line.lower() and "clBuildProgram" not in line), "")
            types = ", ".join(f"{a.param.name}: {a.dtype}" for a, _ in kernel_params)
            raise KernelBuildError(
                f"elementwise kernel {self.name!r} ({types}) failed to build: "
                f"{first or 'see the build log'}; rendered source saved to {error.source_path}"
                + (f", build log to {error.log_path}" if error.log_path else ""),
                build_log=error.build_log, source_path=error.source_path,
                log_path=error.log_path) from error
        # The device's and both built kernels' limits (CL_KERNEL_WORK_GROUP_SIZE can be lower).
        local = min(DEFAULT_LOCAL_SIZE, compute.facts.max_work_group_size,
                    *(programs.kernel_work_group_size(compute, k) for k in kernels))
        block = local * self.per_item
        full_groups = count // block
        events = []
        # Full work-groups without bounds checks, then the rest with them.
        if full_groups:
            kernels[0].set_args(*kernel_args)
            events.append(cl.enqueue_nd_range_kernel(queue, kernels[0], (full_groups * local,),
                                                     (local,), wait_for=wait_for or None))
        if count % block:
            kernels[1].set_args(*kernel_args)
            events.append(cl.enqueue_nd_range_kernel(
                queue, kernels[1], (local,), (local,), global_work_offset=(full_groups * local,),
                wait_for=(wait_for or None) if not events else None))
        self.last_events = events
        self.last_event = event = events[-1]
        for arg, written in kernel_params:
            if written and arg.kind == "clarray":
                arg.value.add_event(event)
        for buffer, contiguous, host in copies_back:
            cl.enqueue_copy(queue, contiguous, buffer)
            if contiguous is not host:
                host[...] = contiguous
        return results[0] if len(results) == 1 else tuple(results)

    def _check_overlaps(self, arrays: list[_Arg]) -> None:
        """Refuse pyopencl arrays that share memory without being the same elements."""
        spans = []
        for arg in arrays:
            a = arg.value
            if a.size == 0:  # PyOpenCL allocates no buffer for an empty array
                continue
            start = a.offset
            spans.append((a.base_data.int_ptr, start, start + a.nbytes, a.dtype, arg.param.name))
        for k, (ptr, start, end, dtype, name) in enumerate(spans):
            for ptr2, start2, end2, dtype2, name2 in spans[k + 1:]:
                if ptr != ptr2 or end <= start2 or end2 <= start:
                    continue
                if (start, end, dtype) != (start2, end2, dtype2):
                    raise InputError(f"kernel {self.name}: arrays {name!r} and {name2!r} overlap "
                                     "without being the same elements")


def _memory_key(array: np.ndarray) -> tuple:
    """Identify a NumPy array's elements (the same view passed twice shares one buffer)."""
    interface = array.__array_interface__
    return (interface["data"][0], array.shape, array.strides, array.dtype.str)
