"""``oclsci lombscargle``: the Lomb-Scargle periodogram of a file of (time, value) samples."""

from __future__ import annotations

import signal

import click

from ..errors import Interrupted
from .options import device_option, quiet_option


class StopOnSignal:
    """SIGTERM, SIGINT and SIGHUP become a flag polled between launches (at most ~0.1 s of
    device work apart); the command then stops with exit code 128 + N and writes nothing.

    PoCL's LLVM installs its own handlers when it compiles: they are taken back at each poll.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict = {}

    def __call__(self) -> int | None:
        self._install()
        return self.signum

    def _install(self) -> None:
        for signum in self.SIGNALS:
            previous = signal.signal(signum, self._handle)
            self._previous.setdefault(signum, previous)

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = signum

    def __enter__(self) -> StopOnSignal:
        self._install()
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        if self.signum is not None and exc[0] is None:
            # A signal after the last poll: still no output.
            raise Interrupted(f"stopped by {signal.Signals(self.signum).name}; no output "
                              "written", exit_code=128 + self.signum)


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
@quiet_option
def lombscargle_command(input_path: str, freqs_spec: str | None, freqs_file: str | None,
                        output: str | None, precenter: bool, normalize: bool, dtype: str,
                        fast_math: bool, device: str | None, quiet: bool) -> None:
    """Lomb-Scargle periodogram of INPUT's (time, value) samples, as scipy.signal.lombscargle.

    INPUT: a .npy array of shape (2, N) or (N, 2), or a two-column text/CSV file. Under
    mpiexec the frequencies are shared out over the ranks, with the same result.
    """
    from ..mpi import mpi_world
    from ..signal.files import check_output, parse_freqs, read_samples, write_periodogram

    out_path = check_output(output)
    times, values = read_samples(input_path)
    freqs = parse_freqs(freqs_spec, freqs_file)
    options = {"precenter": precenter, "normalize": normalize, "dtype": dtype,
               "fast_math": fast_math}
    world = mpi_world()
    with StopOnSignal() as stop:
        if world is not None:
            from ..mpi.lombscargle import lombscargle_distributed

            compute, pgram, seconds = lombscargle_distributed(
                world, times, values, freqs, device=device, quiet=quiet, **options)
            if pgram is None:
                return
            launches = None
        else:
            from ..device import create_context
            from ..signal import Periodogram

            compute = create_context(device, quiet=quiet)
            plan = Periodogram(compute, times, values, freqs, **options)
            stop()  # take the signals back from PoCL's LLVM, which installs its own when it builds
            if not quiet:
                click.echo(f"lombscargle: computing {freqs.size} frequencies of {times.size} "
                           "samples", err=True)
            pgram = plan.run(should_stop=stop).get()
            seconds, launches = plan.timings.device_seconds, plan.timings.launches
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
