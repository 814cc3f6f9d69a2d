"""``oclsci mandelbrot``: render the Mandelbrot set (the seed's case by default) to a PNG file.

The command parses its options into a :class:`~oclsci.mandelbrot.driver.MandelbrotJob`, lets
:func:`~oclsci.mandelbrot.driver.run_job` run it (over MPI ranks when started by ``mpiexec``),
and prints the summary of the outcome.
"""

from __future__ import annotations

import functools
import statistics

import click

from oclsci.cli import device_option, dtype_option, quiet_option
from oclsci.mandelbrot.driver import MandelbrotJob, MandelbrotOutcome, run_job
from oclsci.mandelbrot.renderer import DEFAULTS
from oclsci.mandelbrot.shading import RENDERERS


@click.command("mandelbrot")
@click.option("--output", "-o", default="mandelbrot.png", show_default=True, metavar="OUT.png",
              help="PNG file to write (written atomically).")
@click.option("--no-image", is_flag=True, help="Write no PNG (e.g. with --counts or to time).")
@click.option("--width", type=int, default=DEFAULTS["width"], show_default=True,
              help="Pixels along x.")
@click.option("--height", type=int, default=DEFAULTS["height"], show_default=True,
              help="Pixels along y.")
@click.option("--maxiter", type=int, default=DEFAULTS["maxiter"], show_default=True,
              help="Iterations per pixel at most.")
@click.option("--xmin", type=float, default=DEFAULTS["xmin"], show_default=True)
@click.option("--xmax", type=float, default=DEFAULTS["xmax"], show_default=True)
@click.option("--ymin", type=float, default=DEFAULTS["ymin"], show_default=True)
@click.option("--ymax", type=float, default=DEFAULTS["ymax"], show_default=True)
@click.option("--horizon", default="2**40", show_default=True,
              help="Escape radius: a number or a**b.")
@dtype_option
@device_option
@click.option("--counts", "counts_path", default=None, metavar="OUT.npy",
              help="Also save the escape counts (int32, the seed's values) as .npy.")
@click.option("--renderer", type=click.Choice(list(RENDERERS)), default="auto",
              show_default=True, help="Colouring: on the device (auto), matplotlib's "
                                      "LightSource (the seed's own), or its NumPy port.")
@click.option("--repeat", type=int, default=1, show_default=True,
              help="Compute this many times and print the median times (benchmarking).")
@quiet_option
def mandelbrot_command(output: str, no_image: bool, width: int, height: int, maxiter: int,
                       xmin: float, xmax: float, ymin: float, ymax: float, horizon: str,
                       dtype: str, device: str | None, counts_path: str | None, renderer: str,
                       repeat: int, quiet: bool) -> None:
    """Render the Mandelbrot set: escape counts with the seed's NumPy semantics, smooth
    colouring shaded like the seed's picture (hot colour map, light source)."""
    job = MandelbrotJob(image=None if no_image else output, counts=counts_path, width=width,
                        height=height, maxiter=maxiter, xmin=xmin, xmax=xmax, ymin=ymin,
                        ymax=ymax, horizon=horizon, dtype=dtype, device=device,
                        renderer=renderer, repeat=repeat)
    outcome = run_job(job, notify=None if quiet else functools.partial(click.echo, err=True))
    if outcome is not None and not quiet:
        print_summary(job, outcome)


def print_summary(job: MandelbrotJob, outcome: MandelbrotOutcome) -> None:
    """Print the end-of-run summary (image, device, kernel shape, median times, outputs)."""
    compute, plan, timings = outcome.compute, outcome.plan, outcome.timings
    if outcome.distribution:
        click.echo(outcome.distribution)
    kernel = statistics.median(t.kernel_seconds for t in timings)
    total = statistics.median(t.total_seconds for t in timings)
    wall = statistics.median(t.wall_seconds for t in timings)
    median_note = f" (median of {job.repeat})" if job.repeat > 1 else ""
    click.echo(f"mandelbrot: {job.width}x{job.height}, maxiter {job.maxiter}, horizon "
               f"{outcome.horizon:g}, {job.dtype} on {compute.spec} {compute.name} "
               f"({plan.vector_width * plan.unroll} pixel(s) per work-item)")
    click.echo(f"  kernel {kernel * 1e3:.3f} ms, with copy back {total * 1e3:.3f} ms "
               f"({outcome.result.timings.source}){median_note}; wall {wall * 1e3:.1f} ms")
    if outcome.written:
        how = (f" (coloured in {outcome.colour_seconds * 1e3:.1f} ms, PNG written in "
               f"{outcome.write_seconds * 1e3:.1f} ms)" if job.image else "")
        click.echo(f"  wrote {', '.join(outcome.written)}{how}")
