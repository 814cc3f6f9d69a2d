"""Kernel configurations, defaults, the tuning cache, the search and ``oclsci tune``."""

from __future__ import annotations

import json
import os
import re
import signal

import numpy as np
import pyopencl as cl
import pytest
from conftest import run_cli, start_cli
from signal_helpers import finish, wait_until_computing

from oclsci.errors import InputError, OclsciWarning, OutputError
from oclsci.jacobi import kernels, tuner
from oclsci.jacobi.kernels import KERNELS, KernelConfig, choose_config, default_config
from oclsci.jacobi.reference import jacobi_numpy
from oclsci.jacobi.solver import JacobiSolver
from oclsci.jacobi.tuner import candidates, predict_seconds_per_step, save_report, tune
from oclsci.kernelspec import registry as tuning_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "tuning.json"
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(path))
    return path


# -- configurations ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("is_cpu", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 8), (266, 400), (16384, 16384)])
def test_defaults_are_valid_and_fit_a_48k_gpu(name, is_cpu, dtype, shape):
    config = default_config(name, is_cpu=is_cpu, dtype=dtype, shape=shape, compute_units=4)
    config.validate(max_work_group_size=1024, local_mem_bytes=48 * 1024, dtype=dtype)
    assert KernelConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    global_size, local_size = config.launch_shape(*shape)
    if local_size is not None:
        assert all(size % group == 0
                   for size, group in zip(global_size, local_size, strict=True))


def test_defaults_shrink_for_small_devices():
    config = default_config("temporal", is_cpu=False, dtype=np.float64, shape=(266, 400),
                            local_mem_bytes=16 * 1024, max_work_group_size=128)
    config.validate(max_work_group_size=128, local_mem_bytes=16 * 1024, dtype=np.float64)


def test_steps_per_launch_and_tiles():
    temporal = KernelConfig("temporal", {"rows": 4, "cols": 2, "local_w": 32, "local_h": 16,
                                         "max_steps": 12, "buffers": 2})
    assert temporal.steps_per_launch == 12
    assert temporal.temporal_tile() == (64 - 24, 64 - 24)
    assert temporal.launch_shape(266, 400) == ((10 * 32, 7 * 16), (32, 16))
    assert temporal.local_mem_bytes(np.float32) == 2 * (2 * 64 * 32 + 2 * 16 * 2 * 32) * 4
    bands = KernelConfig("bands", {"band_h": 10, "band_w": 0, "max_steps": 3, "workers": 4})
    assert bands.steps_per_launch == 3
    layout = bands.bands_layout(25, 30)
    assert layout["tiles"] == 3 and layout["workers"] == 3
    assert layout["scratch_row"] >= 30 + 6 and layout["scratch_half"] >= 36 * 16
    assert bands.launch_shape(25, 30) == ((3,), (1,))
    assert KernelConfig("coalesced", {"rows_per_item": 3, "vector": 4}).launch_shape(10, 20) == \
        ((6, 4), None)
    assert KernelConfig("seed").steps_per_launch == 1


@pytest.mark.parametrize("config, message", [
    (KernelConfig("nope"), "unknown kernel"),
    (KernelConfig("coalesced", {"rows_per_item": 0}), ">= 1"),
    (KernelConfig("coalesced", {"rows_per_item": 1, "vector": 3}), "vector"),
    (KernelConfig("coalesced", {"rows_per_item": 1.5}), "integer"),
    (KernelConfig("coalesced", {"rows": 1}), "unknown parameter"),
    (KernelConfig("temporal", {"rows": 2, "cols": 1, "local_w": 4, "local_h": 2,
                               "max_steps": 2}), "no tile"),
    (KernelConfig("temporal", {"rows": 2, "cols": 2, "local_w": 8, "local_h": 8,
                               "max_steps": 2, "buffers": 3}), "buffers"),
    (KernelConfig("bands", {"band_w": 0, "max_steps": 2}), "band_h"),
    (KernelConfig("blocked", {"tile_w": 8, "tile_h": 8, "halo_width": 2, "local_w": 8,
                              "local_h": 8, "rhs_in_local": 1}), "true or false"),
])
def test_invalid_configurations_are_one_line_errors(config, message):
    with pytest.raises(InputError, match=message) as caught:
        config.validate()
    assert "\n" not in str(caught.value)


def _broken(spec, key, value):
    """The spec's first example with parameter ``key`` set to ``value``."""
    params, local = spec.examples[0]
    return KernelConfig(spec.name, dict(params, **{key: value}), local)


@pytest.mark.parametrize("name", KERNELS)
def test_every_parameter_is_checked(name):
    """Each parameter of each kernel refuses a wrong type, values out of bounds and values
    outside its choices, with one line naming the kernel and the parameter."""
    spec = kernels.get(name)
    for param in spec.params:
        wrong = [(1.5 if param.kind is int else 1, "integer" if param.kind is int else "true")]
        if param.kind is int:
            wrong.append((param.low - 1, f">= {param.low}"))
            if param.high is not None:
                wrong.append((param.high + 1, f"<= {param.high}"))
            if param.choices:
                wrong.append((max(param.choices) + 1, "must be"))
        for value, message in wrong:
            with pytest.raises(InputError, match=message) as caught:
                _broken(spec, param.name, value).validate()
            text = str(caught.value)
            assert "\n" not in text and repr(name) in text and param.name in text, text
    with pytest.raises(InputError, match="unknown parameter"):
        _broken(spec, "no_such_parameter", 1).validate()


@pytest.mark.parametrize("name", [name for name, spec in KERNELS.items() if spec.params])
def test_params_parse_their_text(name):
    """Every parameter reads its value from text (as the benchmarks' KEY=VALUE options give
    it) and names itself when it cannot."""
    for param in kernels.get(name).params:
        if param.kind is bool:
            assert [param.parse(t) for t in ("true", "False", "1", "0")] == [True, False] * 2
            wrong = "yes"
        else:
            assert param.parse(str(param.low)) == param.low
            wrong = "1.5"
        with pytest.raises(ValueError, match=param.name):
            param.parse(wrong)


def test_registry_names_the_kernels():
    for name in ("nope", "auto", None, 3):
        with pytest.raises(InputError, match="unknown kernel") as caught:
            kernels.get(name)
        assert str(caught.value).endswith("choose one of " + ", ".join(KERNELS))
    assert kernels.check_choice("auto") == "auto"
    with pytest.raises(InputError, match="choose auto or one of seed, "):
        kernels.check_choice("nope")
    for is_cpu in (True, False):
        kind = kernels.device_kind(is_cpu)
        autos = [n for n, s in KERNELS.items() if kind in s.auto_on]
        for shape in (None, (266, 400), (8192, 8192), (11585, 11586), (16384, 16384)):
            assert kernels.auto_kernel(is_cpu, shape) in autos
        assert kernels.auto_kernel(is_cpu) in kernels.suited(is_cpu)
        tuned = kernels.tuned_by_default(is_cpu)
        assert tuned[0] == kernels.auto_kernel(is_cpu) and set(tuned) <= set(kernels.tunable())
    # GPUs: temporal blocking in registers up to 2^25 cells, streaming from there.
    # Per device kind, exactly one auto kernel for the smallest grids, distinct thresholds.
    for kind in ("cpu", "gpu"):
        thresholds = [s.auto_min_cells for s in KERNELS.values() if kind in s.auto_on]
        assert thresholds.count(0) == 1 and len(set(thresholds)) == len(thresholds)
    shapes = (None, (4096, 4096), (5792, 5792), (5793, 5793), (16384, 16384))
    assert [kernels.auto_kernel(False, shape) for shape in shapes] == \
        ["temporal", "temporal", "temporal", "streaming", "streaming"]
    assert [kernels.auto_kernel(True, shape) for shape in shapes] == ["bands"] * 5


def test_configuration_too_big_for_the_device(any_compute):
    wide = KernelConfig("temporal", {"rows": 2, "cols": 2, "local_w": 128, "local_h": 64,
                                     "max_steps": 2, "buffers": 2})
    limit = int(any_compute.device.max_work_group_size)
    if wide.work_group_size() <= limit:
        pytest.skip("device takes 8192 work-items per group")
    assert not wide.fits(any_compute, np.float32)
    with pytest.raises(InputError, match="work-group"):
        JacobiSolver(any_compute, np.ones((4, 4)), config=wide)


# -- the cache ----------------------------------------------------------------------------------

def test_cache_path_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("OCLSCI_TUNE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tuning_cache.cache_path() == tmp_path / "xdg" / "oclsci" / "tuning.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert tuning_cache.cache_path() == tmp_path / "home" / ".cache" / "oclsci" / "tuning.json"
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(tmp_path / "mine.json"))
    assert tuning_cache.cache_path() == tmp_path / "mine.json"


def test_key_names_device_driver_version_dtype_and_size_class(any_compute):
    key = tuning_cache.cache_key(any_compute, np.float64, (266, 400))
    from oclsci import __version__

    for part in (any_compute.device.name.strip(), any_compute.device.driver_version.strip(),
                 __version__, "float64", "2^17"):
        assert part in key
    assert tuning_cache.size_class((266, 400)) == tuning_cache.size_class((300, 360))
    assert tuning_cache.size_class((266, 400)) != tuning_cache.size_class((16384, 16384))


def test_save_is_atomic_and_round_trips(cache):
    entry = {"best": {"kernel": "seed", "params": {}}, "kernels": {}}
    tuning_cache.save_entry("a", entry)
    tuning_cache.save_entry("b", entry)
    assert set(tuning_cache.load_cache(cache)) == {"a", "b"}
    assert sorted(p.name for p in cache.parent.iterdir()) == ["tuning.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert cache.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600


def test_unwritable_cache_is_one_output_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(blocker / "tuning.json"))
    with pytest.raises(OutputError, match="tuning.json"):
        tuning_cache.save_entry("a", {"best": {"kernel": "seed", "params": {}}, "kernels": {}})


@pytest.mark.parametrize("content", [b"", b"{oops", b"[]", b'{"format": 1, "entries": []}',
                                     b'{"format": 2, "entries": {}}', b"\xff\xfe"])
def test_corrupt_cache_gives_one_warning(cache, any_compute, content):
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    tuning_cache._warned.clear()
    with pytest.warns(OclsciWarning) as caught:
        for _ in range(3):
            config = choose_config(any_compute, "auto", np.float32, (266, 400))
            auto = kernels.auto_kernel(any_compute.is_cpu)
            assert config == kernels.device_default(any_compute, auto, np.float32, (266, 400))
    assert len(caught) == 1 and str(caught[0].message).startswith("ignoring the tuning cache")
    # Saving replaces the broken file.
    tuning_cache.save_entry("k", {"best": {"kernel": "seed", "params": {}}})
    assert set(tuning_cache.load_cache(cache)) == {"k"}


def test_choose_config_uses_the_cache(cache, any_compute):
    shape = (40, 50)
    key = tuning_cache.cache_key(any_compute, np.float32, shape)
    best = KernelConfig("bands", {"band_h": 7, "band_w": 0, "max_steps": 3, "workers": 2})
    coalesced = KernelConfig("coalesced", {"rows_per_item": 3, "vector": 2})
    tuning_cache.save_entry(key, tuning_cache.make_entry(best, {"bands": (best, 1e-6),
                                                    "coalesced": (coalesced, 2e-6)}, shape, 1e-6))
    assert choose_config(any_compute, "auto", np.float32, shape) == best
    assert choose_config(any_compute, "coalesced", np.float32, (45, 45)) == coalesced
    assert choose_config(any_compute, "seed", np.float32, shape) == KernelConfig("seed")
    # Other dtype or size class: defaults.
    assert choose_config(any_compute, "auto", np.float32, (4000, 4000)) != best
    monkey = os.environ.get("OCLSCI_TUNE_CACHE")
    os.environ["OCLSCI_TUNE_CACHE"] = "off"
    try:
        assert choose_config(any_compute, "auto", np.float32, shape) != best
    finally:
        os.environ["OCLSCI_TUNE_CACHE"] = monkey
    # And the solver runs it, exactly.
    rhs = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    solver = JacobiSolver(any_compute, rhs, kernel="auto")
    assert solver.config == best
    solver.advance(7)
    assert np.array_equal(solver.read(), jacobi_numpy(rhs, 7))


def test_malformed_or_unfitting_entries_are_ignored(cache, any_compute, recwarn):
    shape = (40, 50)
    key = tuning_cache.cache_key(any_compute, np.float32, shape)
    huge = {"kernel": "blocked", "params": {"tile_w": 4096, "tile_h": 4096, "halo_width": 8,
                                            "local_w": 8, "local_h": 8}}
    for best in ({"kernel": "coalesced", "params": {"rows_per_item": -1}}, huge,
                 {"kernel": "temporal", "params": {"rows": 1e9}}, "coalesced", [1, 2]):
        tuning_cache._warned.clear()
        tuning_cache.save_entry(key, {"best": best, "kernels": {"seed": {"kernel": "coalesced"}}})
        assert choose_config(any_compute, "auto", np.float32, shape).name == \
            kernels.auto_kernel(any_compute.is_cpu)
        assert choose_config(any_compute, "seed", np.float32, shape) == KernelConfig("seed")
    ours = [str(w.message) for w in recwarn if issubclass(w.category, OclsciWarning)]
    assert all(message.startswith("ignoring") for message in ours), ours


def test_streaming_segments_fit_the_grids_height():
    """On a GPU the default segment height cuts the grid into equal segments (64 to 1024 rows)
    that fill whole waves of work-groups: on an H200-like device, the heights measured fastest
    (benchmarks/slab_rates.py) for a whole 16384^2 grid and for one rank's slab of it."""
    from oclsci.jacobi.specs import streaming

    h200 = {"cus": 132, "max_wg": 1024, "local_mem": 48 * 1024, "is_cpu": False}

    def seg_h(shape, dtype=np.float32, facts=h200):
        return streaming.defaults(facts, np.dtype(dtype), shape)[0][0]["seg_h"]

    assert seg_h((16384, 16384)) == 256
    assert seg_h((4079, 16384)) == 128 and seg_h((4130, 16384)) == 130
    assert seg_h((8175, 16384)) == 171
    for m in (1025, 2017, 4096, 5793, 8159, 16384, 32768, 65536):
        for dtype in (np.float32, np.float64):
            h = seg_h((m, 16384), dtype)
            assert 64 <= h <= 1024 and h == -(-m // -(-m // h)), (m, h)
    # CPUs, small grids and facts without the device's size keep the fixed defaults.
    assert seg_h((4079, 16384), facts=dict(h200, is_cpu=True)) == 256
    assert seg_h((4079, 16384), facts={}) == 256
    assert seg_h((512, 512)) == 16


# -- the search ---------------------------------------------------------------------------------

def test_streaming_spec_matches_its_template_and_space():
    """`streaming`: the template's local arrays take what local_mem() says (edges of several
    levels per vector, the last group padded), and every configuration of its tuning space
    on an H100-like device is valid."""
    from oclsci.jacobi.specs import streaming
    from oclsci.runtime import programs

    spec = streaming.STREAMING
    large = [(params, None) for dtype in (np.float32, np.float64)
             for params, _ in streaming.defaults({}, dtype, (16384, 16384))]
    for params, _ in spec.examples + spec.corner_cases + tuple(large):
        config = KernelConfig("streaming", dict(params))
        for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
            source = programs.render(spec.template, **config.template_params(), dtype=dtype)
            arrays = re.findall(r"__local (real_t|float|double)(\d*) \w+\[(\d+)\]", source)
            declared = sum(int(size) * int(width or 1) for _, width, size in arrays)
            assert len(arrays) == 2, config.describe()
            assert declared * dtype.itemsize == config.local_mem_bytes(dtype), config.describe()
    facts = {"cus": 132, "max_wg": 1024, "local_mem": 48 * 1024, "is_cpu": False}
    for dtype in (np.float32, np.float64):
        space = streaming.candidates((16384, 16384), np.dtype(dtype), facts)
        assert len(space) > 1000
        for params, local in space:
            KernelConfig("streaming", params, local).validate(
                max_work_group_size=1024, local_mem_bytes=48 * 1024, dtype=dtype)


def test_candidates_start_with_defaults_and_fit(any_compute):
    found = candidates(any_compute, (266, 400), np.float32)
    names = [c.name for c in found]
    assert set(names) >= {"coalesced"}
    assert all(c.fits(any_compute, np.float32) for c in found)
    facts = {"cus": 132, "max_wg": 1024, "local_mem": 48 * 1024, "is_cpu": False}
    gpu = KernelConfig("temporal", {"rows": 2, "cols": 2, "local_w": 32, "local_h": 32,
                                    "max_steps": 16, "buffers": 1})
    one_step = KernelConfig("coalesced", {"rows_per_item": 2, "vector": 2}, (64, 2))
    # On a GPU, the small grid is launch-bound: temporal blocking must look better.
    assert predict_seconds_per_step(gpu, (266, 400), np.float32, facts) < \
        predict_seconds_per_step(one_step, (266, 400), np.float32, facts)


@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (70, 130)])
def test_device_compare_counts_the_cells_that_differ_in_any_bit(any_compute, shape):
    from oclsci.jacobi.tuner import _DeviceCompare

    rng = np.random.default_rng(shape[0])
    solver = JacobiSolver(any_compute, rng.standard_normal(shape).astype(np.float32),
                          dtype=np.float32, config=KernelConfig("seed"))
    compare = _DeviceCompare(solver)
    a, b = solver.x_buffers
    assert compare.differences(a, b) == 0
    rows = solver.read_rows(1, shape[0])
    changed = rng.random(shape) < 0.3
    changed[0, 0] = True
    interior = rows[:, 1:shape[1] + 1]
    interior[changed] = np.nextafter(interior[changed], np.float32(np.inf))  # one bit
    rows[:, shape[1] + 1:] = 7  # the padding beyond the interior is not compared
    cl.enqueue_copy(any_compute.queue, b, rows,
                    dst_offset=solver.row_stride * solver.dtype.itemsize)
    assert compare.differences(a, b) == int(changed.sum())


def test_tune_finds_an_exact_configuration_and_saves_it(cache, any_compute):
    configs = [KernelConfig("coalesced", {"rows_per_item": 2, "vector": 2}),
               KernelConfig("bands", {"band_h": 8, "band_w": 0, "max_steps": 4, "workers": 2}),
               KernelConfig("temporal", {"rows": 2, "cols": 2, "local_w": 4096, "local_h": 4,
                                         "max_steps": 2, "buffers": 1})]
    report = tune(any_compute, (30, 41), np.float32, budget=30, configs=configs,
                  min_seconds=0.005)
    statuses = [t.status for t in report.trials]
    assert statuses[:2] == ["ok", "ok"]
    assert statuses[2].startswith("failed")
    assert report.best is not None and report.best.config in configs[:2]
    path = save_report(report)
    assert path == cache
    assert choose_config(any_compute, "auto", np.float32, (30, 41)) == report.best.config


@pytest.mark.slow
def test_tune_command(cache, tmp_path):
    env = dict(os.environ, OCLSCI_TUNE_CACHE=str(cache))
    result = run_cli("tune", "--size", "24x31", "--budget", "0.1", "--kernel", "coalesced",
                     "--dtype", "float64", env=env)
    assert result.returncode == 0, result.stderr
    assert "best: coalesced(" in result.stdout and str(cache) in result.stdout
    entries = json.loads(cache.read_text())["entries"]
    assert len(entries) == 1 and "float64" in next(iter(entries))
    bad = run_cli("tune", "--size", "24by31", env=env)
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "oclsci: error: --size must look like ROWSxCOLUMNS (e.g. 266x400), got '24by31'"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_the_search_and_saves_nothing(cache, signum):
    """``oclsci tune`` holds a stop flag from the device's opening: a signal during the search
    ends it at the next timing, with one line and 128 + N, and the cache is left alone."""
    process = start_cli("tune", "--size", "64x64", "--budget", "600",
                        extra_env={"OCLSCI_TUNE_CACHE": str(cache)})
    try:
        wait_until_computing(process)
        process.send_signal(signum)
        code, stderr = finish(process)
    finally:
        process.kill()
    assert code == 128 + signum, stderr
    assert f"stopped by {signal.Signals(signum).name}" in stderr, stderr
    assert "Traceback" not in stderr and not cache.exists()


def test_suited_kernels_include_auto(any_compute):
    suited = kernels.suited(any_compute.is_cpu)
    assert set(suited) <= set(KERNELS) and "seed" in suited
    assert kernels.auto_kernel(any_compute.is_cpu) in suited


@pytest.mark.parametrize("where", ["under-a-file", "a-folder"])
def test_tune_refuses_an_unwritable_cache_before_the_search(tmp_path, monkeypatch, invoke_cli,
                                                             where):
    """OCLSCI_TUNE_CACHE naming a path under a regular file (root writes anywhere) or a folder
    fails at once with one line naming it, not after the search; --no-save does not check."""
    import importlib

    command = importlib.import_module("oclsci.cli.tune")
    monkeypatch.setattr(command, "tune_kernels", lambda *args, **kw: pytest.fail("searched"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = blocker / "more" / "tuning.json" if where == "under-a-file" else tmp_path
    monkeypatch.setenv("OCLSCI_TUNE_CACHE", str(path))
    code, out, err = invoke_cli("tune", "--budget", "1")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [err.strip()] and str(path) in err
    assert tuning_cache.check_writable(tmp_path / "new" / "folders" / "t.json") is not None
    with pytest.raises(pytest.fail.Exception, match="searched"):
        invoke_cli("tune", "--budget", "1", "--no-save")


class FakeClock:
    """A clock that moves only when told (tests never time anything)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_search_budget_keeps_time_for_the_finalists():
    from oclsci.kernelspec.search import FINAL_SHARE, SearchBudget

    clock = FakeClock()
    budget = SearchBudget(10.0, clock)
    budget.keep(100.0)  # more than FINAL_SHARE of the budget: capped
    assert budget.reserve == FINAL_SHARE * 10.0
    clock.now += 50  # the first candidate is screened whatever the time
    assert budget.screen_next(0)
    budget = SearchBudget(10.0, clock)
    budget.keep(2.0)
    started = clock.now
    clock.now += 1.5  # a candidate took 1.5 s
    budget.screened(started)
    assert budget.screen_next(1)  # 1.5 + 1.5 <= 10 - 2
    clock.now += 5.5  # 7 s spent: another 1.5 s would eat into the 2 s kept
    assert not budget.screen_next(2)
    # The re-timing shares what is left, 3 s: runs of 3 / (count x (repeats + 1)) s at most.
    assert budget.final_seconds(2, wanted=0.3) == 0.3
    assert budget.final_seconds(2, wanted=1.0, repeats=3) == pytest.approx(3 / 8)
    assert budget.final_seconds(7, wanted=0.45, repeats=3) == pytest.approx(3 / 28)
    clock.now += 10
    assert budget.final_seconds(2, wanted=0.45) == 0.0
    assert budget.elapsed() == pytest.approx(17)


def test_tune_spends_its_budget_on_the_fake_clock(cache, any_compute, monkeypatch):
    """With its budget gone after the first candidate, tune screens no other and does not
    re-time (the screening's timing stands); with time to spare it re-times the finalists."""
    timings = []

    def fake_time_per_step(solver, min_seconds, repeats=2, max_steps=0):
        timings.append((solver.config, min_seconds, repeats))
        clock.now += 1.0
        return 1e-3 * (1 + len(timings))

    monkeypatch.setattr(tuner, "time_per_step", fake_time_per_step)
    configs = [KernelConfig("coalesced", {"rows_per_item": 2, "vector": 2}),
               KernelConfig("coalesced", {"rows_per_item": 1, "vector": 2})]
    clock = FakeClock()
    report = tune(any_compute, (30, 41), np.float32, budget=0.5, configs=configs,
                  min_seconds=0.01, clock=clock)
    assert [t.status for t in report.trials] == ["ok"] and len(timings) == 1
    assert report.best.seconds_per_step == 2e-3 and report.seconds == 1.0
    timings.clear()
    clock = FakeClock()
    report = tune(any_compute, (30, 41), np.float32, budget=100, configs=configs,
                  min_seconds=0.01, clock=clock)
    assert [t.status for t in report.trials] == ["ok", "ok"]
    assert [(config, repeats) for config, _, repeats in timings[2:]] == [
        (configs[0], tuner.FINAL_REPEATS), (configs[1], tuner.FINAL_REPEATS)]
    assert all(seconds == pytest.approx(0.03) for _, seconds, _ in timings[2:])
