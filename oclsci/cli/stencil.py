"""``oclsci stencil EXPR INPUT.npy -n STEPS -o OUT.npy``: run a user's stencil
(:class:`oclsci.stencil.Stencil`) on a device, or over MPI ranks when ``mpiexec`` starts it,
and write the field: parse the options into a :class:`~oclsci.stencil.driver.StencilJob`, let
:func:`~oclsci.stencil.driver.run_job` run it, print.
"""

from __future__ import annotations

import functools
import math
import time

import click

from oclsci.cli import (
    device_option,
    progress_every_option,
    progress_maker,
    quiet_option,
)
from oclsci.errors import InputError
from oclsci.stencil import kernels as stencil_kernels
from oclsci.stencil.driver import StencilJob, run_job
from oclsci.stencil.problem import PERIODIC


def split_pairs(pairs: tuple[str, ...], option: str) -> dict[str, str]:
    """``NAME=VALUE`` words as a dict, refusing malformed or repeated names."""
    found: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name or not value:
            raise InputError(f"{option} takes NAME=VALUE, got {pair!r}")
        if name in found:
            raise InputError(f"{option} {name} given twice")
        found[name] = value
    return found


def parse_params(pairs: tuple[str, ...]) -> dict[str, float]:
    """``--param k=0.2`` values as numbers."""
    params = {}
    for name, text in split_pairs(pairs, "--param").items():
        try:
            params[name] = float(text)
        except ValueError:
            raise InputError(f"--param {name} takes a number, got {text!r}") from None
    return params


class BoundaryType(click.ParamType):
    """``--boundary``: a number, or ``periodic``."""

    name = "VALUE|periodic"

    def convert(self, value, param, ctx):
        """``periodic`` as it is, anything else as a finite float written in ASCII."""
        if isinstance(value, (int, float)):
            number = float(value)
        else:
            text = str(value).strip()
            if text.lower() == PERIODIC:
                return PERIODIC
            try:
                number = float(text) if text.isascii() and "_" not in text else None
            except ValueError:
                number = None
            if number is None:
                self.fail(f"{value!r} is neither a number nor {PERIODIC!r}", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


BOUNDARY = BoundaryType()


@click.command("stencil")
@click.argument("expression", metavar="EXPR")
@click.argument("input_path", metavar="[INPUT.npy]", required=False)
@click.option("--steps", "-n", type=click.IntRange(min=0), required=True,
              help="Updates to run in all (including those already in a resumed checkpoint).")
@click.option("--output", "-o", required=True, metavar="OUT.npy",
              help="Where to write the field (.npy, written atomically).")
@click.option("--field", "field_pairs", multiple=True, metavar="NAME=FILE.npy",
              help="A read-only field the stencil reads (repeat for several).")
@click.option("--param", "param_pairs", multiple=True, metavar="NAME=VALUE",
              help="A scalar parameter's value (repeat for several).")
@click.option("--prev", "prev_path", default=None, metavar="PREV.npy",
              help="The previous time level at the start, for u.prev (default: INPUT).")
@click.option("--boundary", type=BOUNDARY, default="0", show_default=True,
              metavar="VALUE|periodic",
              help="The value of u beyond the grid (fields read zero there), or 'periodic': "
                   "the grid wraps around on every axis.")
@click.option("--kernel", default="auto", show_default=True,
              help=stencil_kernels.choices_help())
@click.option("--kernel-param", "kernel_pairs", multiple=True, metavar="NAME=VALUE",
              help="A parameter of the kernel (e.g. max_steps=4; repeat for several; "
                   "docs/stencil.md lists them).")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default=None,
              help="Floating-point type of the run  [default: INPUT's, if float32 or float64, "
                   "else float32; with --resume, the checkpoint's]")
@device_option
@click.option("--checkpoint", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="Checkpoint file: written every --checkpoint-every steps, at the end and "
                   "on SIGTERM, SIGUSR1, SIGINT or SIGHUP (then exit code 75).")
@click.option("--checkpoint-every", type=click.IntRange(min=0), default=0,
              help="Steps between checkpoints (0: only on a signal and at the end).")
@click.option("--resume", type=click.Path(dir_okay=False), metavar="FILE.npz",
              help="Go on from this checkpoint (on any number of MPI ranks): the same command, "
                   "INPUT and --prev then left out or unread.")
@progress_every_option
@quiet_option
def stencil_command(expression: str, input_path: str | None, steps: int, output: str,
                    field_pairs: tuple[str, ...], param_pairs: tuple[str, ...],
                    prev_path: str | None, boundary: float | str, kernel: str,
                    kernel_pairs: tuple[str, ...], dtype: str | None, device: str | None,
                    checkpoint: str | None, checkpoint_every: int, resume: str | None,
                    progress_every: float, quiet: bool) -> None:
    """Run EXPR, an update of the field u written as a Python expression
    (e.g. 'u + k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)'), STEPS times on
    INPUT.npy; the result equals the NumPy reference bit for bit (docs/stencil.md). Under
    mpiexec the ranks share the grid in slabs, with the same result. Exit code 75 means a
    signal stopped the run after
    writing the checkpoint: rerun with --resume to finish."""
    params = parse_params(param_pairs)
    kernel_params = stencil_kernels.parse_param_values(
        kernel, split_pairs(kernel_pairs, "--kernel-param"))
    job = StencilJob(expression=expression, input=input_path, steps=steps, output=output,
                     fields=split_pairs(field_pairs, "--field"), params=params, prev=prev_path,
                     boundary=boundary, dtype=dtype, device=device, kernel=kernel,
                     kernel_params=kernel_params, checkpoint=checkpoint,
                     checkpoint_every=checkpoint_every, resume=resume)
    # Under mpiexec, rank 0 reads and writes, every rank steps a slab.
    outcome = run_job(job, progress=progress_maker(quiet, progress_every, "stencil"),
                      notify=None if quiet else functools.partial(click.echo, err=True))
    if outcome is None or quiet:
        return
    seconds = time.perf_counter() - outcome.started
    result, problem, compute = outcome.result, outcome.problem, outcome.compute
    run_steps = problem.steps - outcome.first_step
    cells = result.size * run_steps
    rate = f", {cells / seconds:.3g} cell updates/s" if seconds > 0 and cells else ""
    this_run = f" ({run_steps} in this run)" if outcome.first_step else ""
    click.echo(f"stencil: {outcome.stencil.expression.describe()}; "
               f"{'x'.join(map(str, result.shape))} {problem.dtype.name}, {problem.steps} "
               f"steps{this_run} on {compute.spec} {compute.name} in {seconds:.3f} s "
               f"wall{rate}")
    click.echo(f"  kernel {outcome.kernel}")
    if run_steps and outcome.step_seconds > 0:
        slowest = ", the slowest rank's" if outcome.distribution else ""
        click.echo(f"  per step {1e6 * outcome.step_seconds / run_steps:.3f} us (the steps' "
                   f"wall time {outcome.step_seconds:.4f} s{slowest})")
    if outcome.distribution:
        click.echo(f"  mpi {outcome.distribution}")
    if outcome.boundary:
        click.echo(f"  boundary {outcome.boundary}")
    for path in outcome.written:
        click.echo(f"  wrote {path}")
