"""``oclsci lombscargle``: the Lomb-Scargle periodogram of a file of (time, value) samples.

The command parses its options into a :class:`~oclsci.lombscargle.driver.LombScargleJob`, lets
:func:`~oclsci.lombscargle.driver.run_job` run it (over MPI ranks when started by ``mpiexec``),
and prints the summary of the outcome.
"""

from __future__ import annotations

import functools

import click

from oclsci.cli import (
    device_option,
    progress_every_option,
    progress_maker,
    quiet_option,
)
from oclsci.lombscargle.driver import LombScargleJob, LombScargleOutcome, run_job


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
    job = LombScargleJob(input=input_path, freqs=freqs_spec, freqs_file=freqs_file,
                         output=output, precenter=precenter, normalize=normalize, dtype=dtype,
                         fast_math=fast_math, device=device)
    outcome = run_job(job, progress=progress_maker(quiet, progress_every, "lombscargle",
                                                   unit="frequency", units="frequencies"),
                      notify=None if quiet else functools.partial(click.echo, err=True))
    if outcome is not None and not quiet:
        print_summary(job, outcome)


def print_summary(job: LombScargleJob, outcome: LombScargleOutcome) -> None:
    """Print the end-of-run summary (sizes, device, time, the peak, the output)."""
    if outcome.distribution:
        click.echo(outcome.distribution)
    compute, pgram, freqs, seconds = outcome.compute, outcome.pgram, outcome.freqs, \
        outcome.device_seconds
    peak = int(pgram.argmax())
    how = f" in {outcome.launches} launch(es)" if outcome.launches else ""
    click.echo(f"lombscargle: {outcome.samples} samples, {freqs.size} frequencies, {job.dtype}"
               f"{', fast math' if job.fast_math else ''} on {compute.spec} {compute.name}")
    click.echo(f"  device time {seconds * 1e3:.3f} ms{how}, "
               f"{outcome.samples * freqs.size / max(seconds, 1e-12):.3g} sample-frequency "
               "pairs/s")
    click.echo(f"  peak power {float(pgram[peak]):.6g} at angular frequency {freqs[peak]:.6g}")
    for path in outcome.written:
        click.echo(f"  wrote {path}")
