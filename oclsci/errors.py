"""Typed errors with a user-facing message and the exit code the CLI returns for them.

The CLI prints the message's first line (:func:`first_line`) and exits with
``error.exit_code``; a traceback is shown only with ``--debug``.
"""

from __future__ import annotations

# Exit codes documented in README ("Exit codes"). 2 is click's and argparse's usage error
# (unknown command or option, bad option value); the others follow sysexits.h where it has one.
EXIT_USER_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_PLATFORM = 69  # EX_UNAVAILABLE: no OpenCL platform, or none with a usable device
EXIT_INTERRUPTED = 75  # EX_TEMPFAIL: a checkpoint was written, resume to finish


class OclsciError(Exception):
    """Base class: an error that the user can act on, shown as one line."""

    exit_code = EXIT_USER_ERROR


class DeviceError(OclsciError):
    """A device SPEC that matches nothing, or a device that cannot do what was asked."""


class NoPlatformError(DeviceError):
    """No OpenCL platform is registered with the ICD loader, or none has a usable device
    (PoCL's kernel cache folder unusable, for one)."""

    exit_code = EXIT_NO_PLATFORM


class InputError(OclsciError):
    """A missing, unreadable or invalid input file, array or parameter."""


class FolderGivenError(InputError):
    """A folder named where a file is expected (input or output): a usage error, exit 2, as
    click gives for a path option that refuses folders, whichever command and option."""

    exit_code = EXIT_USAGE


class OutputError(OclsciError):
    """An output that cannot be written (folder gone, disk full, permission): names the file."""


class InvalidArgumentError(InputError, ValueError):
    """A Python API argument of the right type with a value that cannot be used."""


class ArgumentTypeError(InputError, TypeError):
    """A Python API argument of the wrong type."""


class UnknownNameError(InvalidArgumentError):
    """A name outside a fixed list (a kernel, workload, operation or variant): a usage error,
    exit 2, as click gives for an option whose value is not one of its choices."""

    exit_code = EXIT_USAGE


class DeviceMemoryError(DeviceError, InvalidArgumentError):
    """A problem too large for the device's memory, refused before allocating (a
    :class:`DeviceError` and an :class:`InvalidArgumentError`: the size is the argument)."""


class NonFiniteResultError(OclsciError, ArithmeticError):
    """A computation produced NaN or infinite values (they overflowed the dtype)."""


class KernelBuildError(OclsciError):
    """An OpenCL program failed to build; carries the build log and the paths of the saved
    source and log."""

    def __init__(self, message: str, build_log: str = "", source_path: str | None = None,
                 log_path: str | None = None):
        super().__init__(message)
        self.build_log = build_log
        self.source_path = source_path
        self.log_path = log_path


class Interrupted(OclsciError):
    """A run stopped on a signal (exit 75 when it wrote its checkpoint, else 128 + signal)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str, exit_code: int = EXIT_INTERRUPTED,
                 signum: int | None = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.signum = signum  # the stop signal's number, when a signal stopped the run


class OclsciWarning(UserWarning):
    """Something the user may want to fix that does not stop the run (a broken tuning cache,
    a runtime that cannot be registered); the CLI shows it as ``oclsci: warning: ...``."""


def first_line(error: BaseException, *, with_type: bool = False) -> str:
    """``error`` as one line: the first non-empty line of its message, never empty.

    ``with_type=True`` prefixes the type's name (``OpenCL`` for PyOpenCL's errors), as the CLI
    shows errors that are not :class:`OclsciError`. An error without a message gives its type.
    """
    name = "OpenCL" if type(error).__module__.startswith("pyopencl") else type(error).__name__
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return name
    return f"{name}: {lines[0]}" if with_type else lines[0]


def pip_extra(extra: str) -> str:
    """How to install one of oclsci's extras, from PyPI and from a clone: for messages."""
    return f"`pip install 'oclsci[{extra}]'` (from a clone: `pip install '.[{extra}]'`)"
