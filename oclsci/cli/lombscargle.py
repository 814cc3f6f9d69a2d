"""``oclsci lombscargle``: the Lomb-Scargle periodogram of a file of (time, value) samples."""

from __future__ import annotations

import functools

import click

from oclsci.cli.options import device_option, launched_world, quiet_option
from oclsci.cli.progress import optional_progress, progress_every_option, progress_maker
from oclsci.lombscargle import Periodogram
from oclsci.lombscargle.files import check_output, parse_freqs, read_samples, write_periodogram
from oclsci.runtime.device import create_context
from oclsci.runtime.signals import StopFlag


@click.command("lombscargle")
@click.argument("input_path", metavar="INPUT")
@click.option("--freqs", "freqs_spec", metavar="MIN:MAX:COUNT", default=None,
              help="Angular frequencies: COUNT values from MIN to MAX (np.linspace).")
@click.option("--freqs-file", "freqs_file", metavar="F.npy", default=None,
              help="Angular frequencies from a 1-D .npy array.")
@click.option("--output", "-o", default=None, metavar="OUT.npy|.csv|.png",
              help="Write the periodogram (.npy), frequency and power (.csv) or a plot (.png).")
@click.option("--precenter", is_flag=True, help="Subtract the mean of the values first.")
@click.option("--normalize", is_flag=True,
              help="Power over the mean square of the values (SciPy's normalize=True).")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float64",
              show_default=True, help="Floating-point type of the computation (SciPy: float64).")
@click.option("--fast-math", is_flag=True,
              help="native_sin/native_cos and -cl-fast-relaxed-math (less accurate).")
@device_option
@progress_every_option
@quiet_option
def lombscargle_command(input_path: str, freqs_spec: str | None, freqs_file: str | None,
                        output: str | None, precenter: bool, normalize: bool, dtype: str,
                        fast_math: bool, device: str | None, progress_every: float,
                        quiet: bool) -> None:
    """Lomb-Scargle periodogram of INPUT's (time, value) samples, as scipy.signal.lombscargle.

    INPUT: a .npy array of shape (2, N) or (N, 2), or a two-column text/CSV file. Under
    mpiexec the frequencies are shared out over the ranks, with the same result.
    """
    out_path = check_output(output, {"INPUT": input_path, "--freqs-file": freqs_file})
    times, values = read_samples(input_path, normalize=normalize, precenter=precenter)
    freqs = parse_freqs(freqs_spec, freqs_file)
    options = {"precenter": precenter, "normalize": normalize, "dtype": dtype,
               "fast_math": fast_math}
    world = launched_world()
    progress = progress_maker(quiet, progress_every, "lombscargle", unit="frequency",
                              units="frequencies")
    # Signals are collected while kernels build and run; a poll between launches stops the
    # run (128 + N, nothing written; under MPI every rank). Once the periodogram is computed,
    # one only waits for the output.
    with StopFlag(raising=True) as stop:
        if world is not None:
            from oclsci.lombscargle.distributed import (
                describe_frequency_bands,
                lombscargle_distributed,
            )

            compute, pgram, seconds = lombscargle_distributed(
                world, times, values, freqs, device=device, quiet=quiet,
                notify=functools.partial(click.echo, err=True), stop_flag=stop,
                progress=progress, **options)
            if pgram is None:
                return
            if not quiet:
                click.echo(describe_frequency_bands(world))
            launches = None
        else:
            compute = create_context(device, quiet=quiet)
            plan = Periodogram(compute, times, values, freqs, **options)
            if not quiet:
                click.echo(f"lombscargle: computing {freqs.size} frequencies of {times.size} "
                           "samples", err=True)
            with optional_progress(progress, freqs.size) as update:
                pgram = plan.run(should_stop=stop, progress=update).get()
            seconds, launches = plan.timings.device_seconds, plan.timings.launches
            stop.work_done()
        title = (f"{input_path}: {times.size} samples, {dtype}"
                 + (", precentered" if precenter else "") + (", normalized" if normalize else ""))
        if out_path is not None:
            write_periodogram(out_path, freqs, pgram, title)
    if quiet:
        return
    peak = int(pgram.argmax())
    how = f" in {launches} launch(es)" if launches else ""
    click.echo(f"lombscargle: {times.size} samples, {freqs.size} frequencies, {dtype}"
               f"{', fast math' if fast_math else ''} on {compute.spec} {compute.name}")
    click.echo(f"  device time {seconds * 1e3:.3f} ms{how}, "
               f"{times.size * freqs.size / max(seconds, 1e-12):.3g} sample-frequency pairs/s")
    click.echo(f"  peak power {float(pgram[peak]):.6g} at angular frequency {freqs[peak]:.6g}")
    if out_path is not None:
        click.echo(f"  wrote {out_path}")
