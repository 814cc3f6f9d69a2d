"""``oclsci mandelbrot``: render the Mandelbrot set (the seed's case by default) to a PNG file."""

from __future__ import annotations

import functools
import statistics
import time

import click

from oclsci.cli.options import device_option, dtype_option, launched_world, quiet_option
from oclsci.errors import InputError
from oclsci.io import check_distinct_outputs, check_output_path, write_image, write_npy
from oclsci.mandelbrot.renderer import DEFAULTS, MandelbrotRenderer, parse_horizon, validate
from oclsci.mandelbrot.shading import RENDERERS, shade
from oclsci.runtime.device import create_context
from oclsci.runtime.signals import StopFlag


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
    if repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {repeat}")
    image_path = None if no_image else output
    # Refuse unusable outputs before anything is computed.
    check_output_path(image_path, (".png",))
    check_output_path(counts_path, (".npy",))
    check_distinct_outputs(output=image_path, counts=counts_path)
    horizon_value = parse_horizon(horizon)
    # Refuse bad parameters before anything is printed or computed.
    validate(width, height, maxiter, xmin, xmax, ymin, ymax, horizon_value, dtype)
    want_smooth = image_path is not None
    world = launched_world()  # None without MPI or in a world of one rank
    # Signals are collected while kernels build and run, and stop the run between bands (128 +
    # N, nothing written; under MPI every rank). Once the image is computed, one only waits
    # for the outputs.
    with StopFlag(raising=True) as stop:
        if world is not None:  # several ranks: each renders bands of rows, rank 0 gathers
            from oclsci.mandelbrot.distributed import describe_bands, mandelbrot_distributed

            compute, plan, result, timings = mandelbrot_distributed(
                world, device=device, quiet=quiet, repeat=repeat, want_smooth=want_smooth,
                notify=functools.partial(click.echo, err=True), stop_flag=stop, width=width,
                height=height, maxiter=maxiter, xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax,
                horizon=horizon_value, dtype=dtype)
            if result is None:  # not rank 0: rank 0 writes and prints
                return
            if not quiet:
                click.echo(describe_bands(world, height))
        else:
            compute = create_context(device, quiet=quiet)
            plan = MandelbrotRenderer(compute, width=width, height=height, maxiter=maxiter,
                                      xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax,
                                      horizon=horizon_value, dtype=dtype)
            timings = []
            for _ in range(repeat):  # only the last result is kept (each pins its memory)
                result = plan.run(want_z=False, want_smooth=want_smooth)
                timings.append(result.timings)
            stop.work_done()
        written = []
        colour_seconds = write_seconds = 0.0
        if image_path is not None:
            start = time.perf_counter()
            picture = shade(result.smooth, renderer=renderer, compute=compute)
            colour_seconds = time.perf_counter() - start
            write_image(image_path, picture)
            write_seconds = time.perf_counter() - start - colour_seconds
            written.append(image_path)
        if counts_path is not None:
            write_npy(counts_path, result.counts)
            written.append(counts_path)
    if quiet:
        return
    kernel = statistics.median(t.kernel_seconds for t in timings)
    total = statistics.median(t.total_seconds for t in timings)
    wall = statistics.median(t.wall_seconds for t in timings)
    median_note = f" (median of {repeat})" if repeat > 1 else ""
    click.echo(f"mandelbrot: {width}x{height}, maxiter {maxiter}, horizon {horizon_value:g}, "
               f"{dtype} on {compute.spec} {compute.name} "
               f"({plan.vector_width * plan.unroll} pixel(s) per work-item)")
    click.echo(f"  kernel {kernel * 1e3:.3f} ms, with copy back {total * 1e3:.3f} ms "
               f"({result.timings.source}){median_note}; wall {wall * 1e3:.1f} ms")
    if written:
        how = (f" (coloured in {colour_seconds * 1e3:.1f} ms, PNG written in "
               f"{write_seconds * 1e3:.1f} ms)" if image_path else "")
        click.echo(f"  wrote {', '.join(written)}{how}")
