"""Render the Mako kernel templates of ``kernels/`` and build them into OpenCL programs.

This is the only module that renders templates and builds programs. Each template
``kernels/NAME.cl.mako`` (or ``kernels/DOMAIN/NAME.cl.mako``, template ``DOMAIN/NAME``) holds
one kernel called NAME (``DOMAIN_NAME``) and inherits ``base.cl.mako``, which
typedefs ``real_t`` from the ``dtype`` parameter. Programs are memoised per context, template,
template parameters and build options; kernels are kept rather than retrieved again.

Mako's compiled templates are kept under ``$XDG_CACHE_HOME/oclsci/mako/`` (a fresh process
then skips compiling them: about 10 ms per template), in a folder named by a hash of the
templates, of Mako's version and of the lookup options: edited templates or another Mako get a
folder of their own, and installs with identical templates share one. Where that folder cannot
be written, or a kept module cannot be read back, templates are compiled in memory.

Builds never pass ``-cl-denorms-are-zero`` (PoCL and Intel's CPU runtime then flush subnormal
numbers to zero, and results leave NumPy's); fast math only for ``oclsci lombscargle
--fast-math``. Set ``OCLSCI_DUMP_SOURCE=DIR`` to save every rendered source in DIR.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

import mako
import numpy as np
import pyopencl as cl
from mako.exceptions import MakoException
from mako.lookup import TemplateLookup

from oclsci.errors import KernelBuildError
from oclsci.runtime import cache_home

# How every template is looked up (part of the compiled templates' folder name).
LOOKUP_OPTIONS = {"strict_undefined": True, "input_encoding": "utf-8"}

# OpenCL C type of each NumPy scalar type the kernels accept.
CL_TYPES = {
    np.dtype(np.int8): "char",
    np.dtype(np.uint8): "uchar",
    np.dtype(np.int16): "short",
    np.dtype(np.uint16): "ushort",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "uint",
    np.dtype(np.int64): "long",
    np.dtype(np.uint64): "ulong",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}


def cl_type(dtype: Any) -> str:
    """The OpenCL C scalar type name for a NumPy dtype."""
    try:
        return CL_TYPES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise KernelBuildError(f"no OpenCL type for dtype {dtype!r}") from None


def template_dir() -> Path:
    """The folder of the kernel templates: inside the installed package, else the checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "kernels", package.parent / "kernels"):
        if (candidate / "base.cl.mako").is_file():
            return candidate
    raise KernelBuildError(f"kernel templates not found next to {package} (broken installation?)")


def compiled_templates_dir() -> Path | None:
    """The folder for Mako's compiled templates, named by a hash of Mako's version, the lookup
    options and every template (path and content); None where it cannot be made or written."""
    root = template_dir()
    digest = hashlib.sha1(f"{mako.__version__} {sorted(LOOKUP_OPTIONS.items())}".encode())
    for path in sorted(root.rglob("*.cl.mako")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    folder = cache_home() / "oclsci" / "mako" / digest.hexdigest()[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK | os.X_OK) else None


def _write_module(source: bytes, path: str) -> None:
    """Write a compiled template whole, or not at all (a temporary file, then renamed)."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(source)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@lru_cache(maxsize=2)
def _lookup(keep_compiled: bool = True) -> TemplateLookup:
    folder = compiled_templates_dir() if keep_compiled else None
    if folder is None:
        return TemplateLookup(directories=[str(template_dir())], **LOOKUP_OPTIONS)
    return TemplateLookup(directories=[str(template_dir())], module_directory=str(folder),
                          module_writer=_write_module, **LOOKUP_OPTIONS)


def _discard_kept_modules(template: str) -> None:
    """Delete the kept compiled modules of ``template`` and of the base it inherits, after
    reading them back failed (Mako writes them again on the next use)."""
    folder = compiled_templates_dir()
    if folder is None:
        return
    for name in (template, "base"):
        with contextlib.suppress(OSError):
            (folder / f"{name}.cl.mako.py").unlink()


def _render_with(lookup: TemplateLookup, template: str, params: dict) -> str:
    return lookup.get_template(f"{template}.cl.mako").render(cl_type=cl_type, np=np, **params)


def template_names() -> list[str]:
    """Names of every kernel template shipped, such as ``jacobi/seed`` (``base`` excluded)."""
    root = template_dir()
    return sorted(p.relative_to(root).as_posix()[: -len(".cl.mako")]
                  for p in root.rglob("*.cl.mako") if p.name != "base.cl.mako")


def kernel_name(template: str) -> str:
    """The OpenCL kernel a template defines: its path with ``_`` for ``/`` (``jacobi_seed``)."""
    return template.replace("/", "_")


def _uses_fp64(params: dict) -> bool:
    """True when any dtype among the parameters (or lists of them) is float64."""
    def is_double(value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return any(is_double(v) for v in value)
        try:
            return isinstance(value, (np.dtype, type)) and np.dtype(value) == np.float64
        except TypeError:
            return False
    return any(is_double(v) for v in params.values())


def _describe(params: dict) -> str:
    return ", ".join(f"{k}={_plain(v)}" for k, v in sorted(params.items()))


def _plain(value: Any) -> str:
    if isinstance(value, (np.dtype, type)):
        return np.dtype(value).name
    return str(value)


def render(template: str, **params: Any) -> str:
    """Render ``kernels/<template>.cl.mako`` with the given compile-time parameters."""
    params = dict(params)
    params["dtype"] = None if params.get("dtype") is None else np.dtype(params["dtype"])
    params.setdefault("uses_fp64", _uses_fp64(params))
    try:
        try:
            return _render_with(_lookup(), template, params)
        except Exception:  # noqa: BLE001 - not kept (disk full) or not read back
            # Compile in memory (a template's own error shows again there); when that works,
            # the kept modules were at fault: delete them, to be made again on the next use.
            source = _render_with(_lookup(keep_compiled=False), template, params)
            _discard_kept_modules(template)
            _lookup.cache_clear()
            return source
    except MakoException as error:
        raise KernelBuildError(f"kernel template {template!r}: {error}") from error
    except NameError as error:
        raise KernelBuildError(
            f"kernel template {template!r} ({_describe(params)}): missing parameter: {error}"
        ) from error


def _save_source(template: str, source: str, directory: str | None = None) -> Path:
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    folder = Path(directory or Path(tempfile.gettempdir()) / "oclsci-sources")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kernel_name(template)}-{digest}.cl"
    path.write_text(source)
    return path


def _save_log(source_path: Path, log: str) -> Path | None:
    """The build log beside the saved source (``.log`` for ``.cl``); None if it cannot be
    written."""
    path = source_path.with_suffix(".log")
    try:
        path.write_text(log)
    except OSError:
        return None
    return path


def _params_key(params: dict) -> tuple:
    return tuple(sorted((k, _plain(v)) for k, v in params.items()))


def build_program(compute: Any, template: str, options: tuple[str, ...] = (), **params: Any):
    """Return the built program for ``template`` and ``params`` on ``compute``, memoised."""
    key = ("program", template, _params_key(params), tuple(options))
    cache = compute.program_cache
    if key in cache:
        return cache[key]
    source = render(template, **params)
    dump_dir = os.environ.get("OCLSCI_DUMP_SOURCE")
    if dump_dir:
        _save_source(template, source, dump_dir)
    try:
        with warnings.catch_warnings():
            # NVIDIA prints notes on successful builds; they are not the user's concern.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(compute.context, source).build(options=list(options))
    except cl.RuntimeError as error:
        path = _save_source(template, source, dump_dir)
        log = str(getattr(error, "build_log", None) or error)
        log_path = _save_log(path, log)
        first = next((line for line in log.splitlines() if "error" in line.lower()), "")
        raise KernelBuildError(
            f"kernel {template!r} ({_describe(params)}) failed to build with options "
            f"{list(options)}: {first.strip() or 'see the build log'}; rendered source saved to "
            f"{path}" + (f", build log to {log_path}" if log_path else ""),
            build_log=log,
            source_path=str(path),
            log_path=None if log_path is None else str(log_path),
        ) from error
    cache[key] = program
    compute.build_count = getattr(compute, "build_count", 0) + 1
    return program


def get_kernel(compute: Any, template: str, *, name: str | None = None,
               options: tuple[str, ...] = (), **params: Any):
    """Return the memoised ``cl.Kernel`` NAME (default: :func:`kernel_name` of the template).

    The object is shared: set its arguments right before each use. For kernels whose
    arguments stay set across many launches, use :func:`new_kernel`.
    """
    name = name or kernel_name(template)
    key = ("kernel", template, name, _params_key(params), tuple(options))
    cache = compute.program_cache
    if key not in cache:
        cache[key] = new_kernel(compute, template, name=name, options=options, **params)
    return cache[key]


def new_kernel(compute: Any, template: str, *, name: str | None = None,
               options: tuple[str, ...] = (), **params: Any):
    """A fresh ``cl.Kernel`` from the memoised program, owned by the caller."""
    program = build_program(compute, template, options, **params)
    name = name or kernel_name(template)
    try:
        return cl.Kernel(program, name)
    except cl.Error as error:
        raise KernelBuildError(f"template {template!r} has no kernel named {name!r}") from error


def kernel_work_group_size(compute: Any, kernel: Any) -> int:
    """CL_KERNEL_WORK_GROUP_SIZE: the most work-items a group of this built kernel may have.

    It can be below the device's maximum: register pressure lowers it (NVIDIA), and clang
    gives OpenCL kernels without ``reqd_work_group_size`` at most 256 on AMD GPUs
    (clang/lib/CodeGen/Targets/AMDGPU.cpp, ``OpenCLDefaultMaxWorkGroupSize = 256``).
    """
    info = cl.kernel_work_group_info
    required = kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, compute.device)
    if required and all(required):
        # reqd_work_group_size: the compiler built the kernel for exactly that size.
        return int(np.prod(required))
    if not compute.facts.reports_kernel_work_group_size:  # NVIDIA: the device's limit
        return compute.facts.max_work_group_size
    return int(kernel.get_work_group_info(info.WORK_GROUP_SIZE, compute.device))


def fitted_local_size(compute: Any, kernel: Any, local: tuple[int, int]) -> tuple[int, int]:
    """A 2-D work-group shape ``local``, halved (rows first) while the built kernel allows
    fewer work-items (:func:`kernel_work_group_size`); a global size that is a multiple of
    ``local`` stays a multiple of the result."""
    limit = kernel_work_group_size(compute, kernel)
    while local[0] * local[1] > limit and max(local) > 1:
        local = (local[0], local[1] // 2) if local[1] > 1 else (local[0] // 2, 1)
    return local
