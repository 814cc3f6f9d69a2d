"""``oclsci stencil --checkpoint/--resume`` on one device: a checkpoint holds the field, u.prev
and what the run needs to go on; a resumed run ends where the uninterrupted one ends; a
resumed command that would compute something else is refused in one line. (Over MPI ranks
and with stop signals: tests/mpi/test_stencil_mpi.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DEVICE_SPECS

from oclsci.errors import InputError
from oclsci.stencil import Stencil
from oclsci.stencil.checkpoint import load_checkpoint

WAVE = "2 * u - u.prev + c * k * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u)"
pytestmark = pytest.mark.skipif(not DEVICE_SPECS, reason="no OpenCL device")


@pytest.fixture
def run(tmp_path, invoke_cli):
    rng = np.random.default_rng(9)
    arrays = {"u0": rng.standard_normal((9, 14)), "k": rng.uniform(0.1, 0.2, (9, 14)),
              "prev": rng.standard_normal((9, 14))}
    arrays = {name: array.astype(np.float32) for name, array in arrays.items()}  # the run's
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)

    def command(steps, *extra):
        return invoke_cli("stencil", WAVE, tmp_path / "u0.npy", "-n", steps, "--param",
                          "c=0.3", "--field", f"k={tmp_path / 'k.npy'}", "--prev",
                          tmp_path / "prev.npy", "--device", DEVICE_SPECS[0], "-q", *extra)

    def reference(steps):
        return Stencil(WAVE, params={"c": 0.3}, fields=["k"]).reference(
            arrays["u0"], steps, fields={"k": arrays["k"]}, prev=arrays["prev"],
            dtype=np.float32)

    return tmp_path, command, reference


def test_checkpoint_then_resume_is_bit_identical(run):
    folder, command, reference = run
    checkpoint = folder / "c.npz"
    assert command(12, "-o", folder / "a.npy", "--checkpoint", checkpoint,
                   "--checkpoint-every", 5)[0] == 0
    state = load_checkpoint(checkpoint)
    assert state.step == 12 and state.expression == WAVE and set(state.fields) == {"k"}
    assert np.array_equal(state.u, reference(12))
    assert np.array_equal(state.prev, reference(11))
    # The same command with --resume and the total steps; --checkpoint may name the same file.
    assert command(30, "-o", folder / "b.npy", "--resume", checkpoint, "--checkpoint",
                   checkpoint)[0] == 0
    assert np.array_equal(np.load(folder / "b.npy"), reference(30))
    assert load_checkpoint(checkpoint).step == 30


def test_resuming_another_run_is_refused(run, invoke_cli):
    folder, command, _ = run
    checkpoint = folder / "c.npz"
    assert command(4, "-o", folder / "a.npy", "--checkpoint", checkpoint)[0] == 0

    def resume(expression=WAVE, c="0.3", steps=9, *extra):
        return invoke_cli("stencil", expression, "-n", steps, "--param", f"c={c}",
                          "--resume", checkpoint, "-o", folder / "x.npy", "--device",
                          DEVICE_SPECS[0], *extra)

    for (code, _, err), words in (
            (resume(WAVE.replace("c *", "2 * c *")), "was made for the stencil"),
            (resume(WAVE, "0.4"), "was made for other parameters: c=0.3"),
            (resume(WAVE, "0.3", 9, "--dtype", "float64"), "contradicts checkpoint"),
            (resume(WAVE, "0.3", 3), "is at step 4, past --steps 3")):
        assert code == InputError.exit_code and words in err, err
        assert len(err.strip().splitlines()) == 1, err
    # A parameter left out reads as a field: still the checkpoint's parameters are named.
    code, _, err = invoke_cli("stencil", WAVE, "-n", 9, "--resume", checkpoint, "-o",
                              folder / "x.npy", "--device", DEVICE_SPECS[0])
    assert code == InputError.exit_code, err
    assert "was made for other parameters: c=0.3" in err and len(err.strip().splitlines()) == 1
    assert resume()[0] == 0  # the fields come from the checkpoint


def test_checkpoint_options_are_checked_first(run, invoke_cli, tmp_path):
    _, command, _ = run
    code, _, err = command(3, "-o", tmp_path / "x.npy", "--checkpoint-every", 2)
    assert code == InputError.exit_code and "--checkpoint-every 2 needs --checkpoint" in err
    code, _, err = invoke_cli("stencil", "u", "-n", 3, "-o", tmp_path / "x.npy")
    assert code == InputError.exit_code and "INPUT.npy is needed" in err


def test_a_resume_with_a_zero_of_the_other_sign_is_refused(tmp_path, invoke_cli):
    """-0.0 equals 0.0 yet gives other bits (the sign of a zero result): a resume must name
    the checkpoint's parameters and boundary value bit for bit."""
    np.save(tmp_path / "z.npy", np.zeros((4, 5), np.float32))
    common = ("stencil", "u[1, 0] + k", "--device", DEVICE_SPECS[0], "-q")
    checkpoint = tmp_path / "c.npz"
    assert invoke_cli(*common, tmp_path / "z.npy", "--param", "k=0", "-n", 2,
                      "-o", tmp_path / "a.npy", "--checkpoint", checkpoint)[0] == 0
    for extra, words in ((("--param", "k=-0.0"), "was made for other parameters: k=0.0"),
                         (("--param", "k=0", "--boundary", "-0.0"),
                          "was made for the boundary value 0.0")):
        code, _, err = invoke_cli(*common, *extra, "-n", 4, "--resume", checkpoint,
                                  "-o", tmp_path / "r.npy")
        assert code == InputError.exit_code and words in err, err
        assert not (tmp_path / "r.npy").exists()
