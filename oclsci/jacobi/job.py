"""A Jacobi job: the options of ``oclsci jacobi``, their checks, and the problem they name.

:func:`prepare` turns a :class:`JacobiJob` into the :class:`Problem` to solve (read from an
input file, the built-in picture or a checkpoint) and the :class:`Start` that every MPI rank
needs; :mod:`oclsci.jacobi.driver` runs it. ``oclsci poisson`` reads its problem with
:func:`load_problem` too, and both summaries start with :func:`problem_lines`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from oclsci.arrays import MAX_STEPS, check_fits, same_bits
from oclsci.errors import InputError, Interrupted
from oclsci.io import check_distinct_outputs, check_inputs_kept, check_output_path, read_array
from oclsci.jacobi import kernels
from oclsci.jacobi.solver import validate_rhs

OUTPUT_SUFFIXES = (".npy", ".png", ".pgm")


@dataclass(frozen=True)
class JacobiJob:
    """What ``oclsci jacobi`` is asked to do: its options (checked by :func:`run_job`)."""

    input: str | None = None  # None: the built-in picture, or the checkpoint's with resume
    output: str | None = None  # .npy, .png or .pgm
    iterations: int = 150000  # in all, the steps of a resumed checkpoint included
    tol: float | None = None
    check_every: int = 1000
    dtype: str | None = None  # None: float32, or the checkpoint's with resume
    kernel: str = "auto"
    device: str | None = None
    checkpoint: str | None = None  # .npz
    checkpoint_every: int = 0  # 0: only on a stop signal and at the end
    resume: str | None = None
    compare: str | None = None  # .png


@dataclass
class Problem:
    """What to solve: the right-hand side, the start and where it came from."""

    rhs: np.ndarray
    x0: np.ndarray | None = None
    iteration: int = 0
    original: np.ndarray | None = None
    source: str = ""
    notes: list = field(default_factory=list)


@dataclass(frozen=True)
class Start:
    """What every rank needs of the problem to set up its part of the solve."""

    shape: tuple[int, int]
    dtype: str  # of the computation
    rhs_dtype: str
    x0_dtype: str | None
    iteration: int


def load_problem(input_path: str | None, resume: str | None) -> Problem:
    """Read the input file, the built-in picture, or a checkpoint to resume."""
    if resume:
        from oclsci.jacobi.checkpoint import load_checkpoint  # resumed runs only

        state = load_checkpoint(resume)
        if input_path is not None:
            rhs = read_array(input_path)
            if rhs.shape != state.rhs.shape or not same_bits(
                    rhs.astype(state.rhs.dtype), state.rhs):
                raise InputError(f"checkpoint {resume} was made for another input than "
                                 f"{input_path}")
        return Problem(rhs=state.rhs, x0=state.x, iteration=state.iteration,
                       original=state.original, source=f"checkpoint {resume}")
    if input_path is None:
        from oclsci.jacobi.picture import builtin_picture  # only for the built-in picture
        from oclsci.jacobi.reference import laplacian

        picture = builtin_picture()
        return Problem(rhs=laplacian(picture), original=picture,
                       source="built-in 400x266 picture (its Laplacian)")
    return Problem(rhs=read_array(input_path), source=input_path)


def check_job(job: JacobiJob) -> None:
    """Refuse bad options and unusable output paths before anything is read or computed."""
    if not 0 <= job.iterations <= MAX_STEPS:
        raise InputError(f"--iterations must be between 0 and 2**53, got {job.iterations}")
    if job.tol is not None and not (np.isfinite(job.tol) and job.tol > 0):
        raise InputError(f"--tol must be a positive number, got {job.tol}")
    if job.check_every < 1 or job.checkpoint_every < 0:
        raise InputError("--check-every must be >= 1 and --checkpoint-every >= 0")
    if job.checkpoint_every and not job.checkpoint:
        raise InputError(f"--checkpoint-every {job.checkpoint_every} needs --checkpoint "
                         "FILE.npz to write to")
    kernels.check_choice(job.kernel)
    check_output_path(job.output, OUTPUT_SUFFIXES)
    check_output_path(job.compare, (".png",))
    check_output_path(job.checkpoint, (".npz",))
    check_distinct_outputs(output=job.output, compare=job.compare, checkpoint=job.checkpoint)
    # --checkpoint may name the --resume file: the run goes on writing it.
    check_inputs_kept({"INPUT": job.input}, output=job.output, compare=job.compare,
                      checkpoint=job.checkpoint)
    check_inputs_kept({"--resume": job.resume}, output=job.output, compare=job.compare)


def prepare(job: JacobiJob) -> tuple[Problem, Start]:
    """Check the options and read the problem (on rank 0 only under MPI)."""
    # A resumed run goes on in its checkpoint's dtype.
    dtype = job.dtype
    if dtype is None and job.resume:
        from oclsci.jacobi.checkpoint import checkpoint_dtype  # resumed runs only

        dtype = checkpoint_dtype(job.resume)
    dtype = dtype or "float32"
    check_job(job)
    problem = load_problem(job.input, job.resume)
    if job.resume:
        saved = problem.x0.dtype.name
        if job.dtype is not None and job.dtype != saved:
            raise InputError(f"--dtype {job.dtype} contradicts checkpoint {job.resume}, which "
                             f"holds a {saved} run; leave --dtype out to go on in {saved}")
        if problem.iteration > job.iterations:
            raise InputError(f"checkpoint {job.resume} is at iteration {problem.iteration}, "
                             f"past --iterations {job.iterations} (the total, including the "
                             "steps done): ask for at least that many")
    check_fits(validate_rhs(problem.rhs), dtype, problem.source)
    x0_dtype = None if problem.x0 is None else problem.x0.dtype.str
    return problem, Start(problem.rhs.shape, dtype, problem.rhs.dtype.str, x0_dtype,
                          problem.iteration)


def stop_error(error: Interrupted, iteration: int, checkpoint: str | None) -> Interrupted:
    """What a run stopped by a signal ends with (:func:`oclsci.checkpoints.stop_error`)."""
    from oclsci import checkpoints  # stopped runs only

    return checkpoints.stop_error(error, iteration, checkpoint, "iteration")


def problem_lines(compute, problem: Problem, x: np.ndarray) -> list[str]:
    """The summary's first lines: device, input, grid (``oclsci jacobi`` and ``poisson``)."""
    m, n = x.shape
    return [f"device      {compute.spec} {compute.name}",
            f"input       {problem.source}",
            f"grid        {m} x {n} {x.dtype.name}"]


def picture_error_lines(problem: Problem, x: np.ndarray) -> list[str]:
    """The error against the original picture, when the problem came from one."""
    if problem.original is None:
        return []
    error = np.abs(x.astype(np.float64) - problem.original)
    return [f"error       max {error.max():.4g}, rms {np.sqrt(np.mean(error**2)):.4g} "
            "against the original picture (0..255)"]
