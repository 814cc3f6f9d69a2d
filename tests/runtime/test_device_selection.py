"""Device selection with several platforms: SPEC parsing on fake platforms, compared with
PyOpenCL's own parsers, then for real with PoCL and Oclgrind side by side (subprocesses that
see both through OCL_ICD_VENDORS), and the no-platform error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from unittest import mock

import numpy as np
import oclgrind as og
import pyopencl as cl
import pyopencl.tools
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from oclsci.errors import EXIT_NO_PLATFORM, DeviceError, NoPlatformError
from oclsci.runtime import LOCAL_RANK_VARIABLES, node_local_rank
from oclsci.runtime.binding import GpuBindingError, bind_gpu, visible_gpus
from oclsci.runtime.selection import (
    NO_PLATFORM_HELP,
    available_specs,
    parse_ctx_spec,
    parse_test_spec,
    select_device,
)

CPU, GPU = cl.device_type.CPU, cl.device_type.GPU


@dataclass(eq=False)
class FakeDevice:
    name: str
    vendor: str = "Some Vendor"
    type: int = CPU


@dataclass(eq=False)
class FakePlatform:
    name: str
    devices: list = field(default_factory=list)
    vendor: str = "Some Vendor"

    def get_devices(self):
        return list(self.devices)


def platforms_like_a_workstation():
    """Intel CPU runtime, NVIDIA (two GPUs), PoCL, Oclgrind, and a second Intel platform."""
    return [
        FakePlatform("Intel(R) OpenCL", [FakeDevice("Intel(R) Xeon(R) Gold 6248", "Intel(R)")],
                     vendor="Intel(R) Corporation"),
        FakePlatform("NVIDIA CUDA", [FakeDevice("NVIDIA A100-SXM4-40GB", "NVIDIA", GPU),
                                     FakeDevice("NVIDIA A100-SXM4-80GB", "NVIDIA", GPU)],
                     vendor="NVIDIA Corporation"),
        FakePlatform("Portable Computing Language", [FakeDevice("pthread-Xeon", "GenuineIntel")],
                     vendor="The pocl project"),
        FakePlatform("Oclgrind", [FakeDevice("Oclgrind Simulator", "University of Bristol")],
                     vendor="University of Bristol"),
        FakePlatform("Intel(R) OpenCL Graphics", [FakeDevice("Intel(R) UHD Graphics 630",
                                                             "Intel(R) Corporation", GPU)],
                     vendor="Intel(R) Corporation"),
    ]


# -- PYOPENCL_CTX syntax ------------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ("0", (0, 0)), ("1", (1, 0)), ("1:1", (1, 1)), ("1:0", (1, 0)), ("4:0", (4, 0)),
    (":0", (0, 0)), ("", (0, 0)),   # an empty part is index 0
    ("nvidia", (1, 0)), ("NVIDIA:1", (1, 1)), ("nViDiA:80gb", (1, 1)), ("cuda:a100", (1, 0)),
    ("portable", (2, 0)), ("Portable:0", (2, 0)), ("oclgrind", (3, 0)), ("OCLGRIND:sim", (3, 0)),
    ("graphics", (4, 0)), ("1:", (1, 0)),
])
def test_ctx_spec_by_index_and_case_insensitive_name(spec, expected):
    assert parse_ctx_spec(spec, platforms_like_a_workstation()) == expected


def test_ctx_name_keeps_the_last_matching_platform_like_pyopencl():
    """PyOpenCL's quirk: a PYOPENCL_CTX name matching several platforms picks the LAST one."""
    platforms = platforms_like_a_workstation()
    assert parse_ctx_spec("intel", platforms) == (4, 0)       # not the CPU runtime at 0
    assert parse_ctx_spec("opencl", platforms) == (4, 0)
    assert parse_ctx_spec("0", platforms) == (0, 0)           # an index still means the index
    with mock.patch.object(cl, "get_platforms", lambda: platforms):
        assert cl.choose_devices(interactive=False, answers=["intel"]) == \
            [platforms[4].devices[0]]


def test_ctx_device_name_keeps_the_first_matching_device():
    platforms = platforms_like_a_workstation()
    assert parse_ctx_spec("nvidia:a100", platforms) == (1, 0)
    assert parse_ctx_spec("nvidia:nvidia", platforms) == (1, 0)


def test_ctx_integer_out_of_range_is_a_name():
    platforms = [FakePlatform("Vendor 7 runtime", [FakeDevice("dev")]),
                 FakePlatform("Other", [FakeDevice("dev 12"), FakeDevice("dev 3")])]
    assert parse_ctx_spec("7", platforms) == (0, 0)
    assert parse_ctx_spec("1:3", platforms) == (1, 1)   # device named "dev 3"
    assert parse_ctx_spec("1:1", platforms) == (1, 1)   # in range: the index, not "dev 12"
    with pytest.raises(DeviceError, match="no device of platform 1 matches '-1'"):
        parse_ctx_spec("1:-1", platforms)


@pytest.mark.parametrize("spec, message", [
    ("amd", "no platform matches 'amd'"),
    ("9", "no platform matches '9'"),
    ("0:0:0", "too many ':'-separated parts"),
    ("nvidia:0,1", "names several devices"),
    ("nvidia:h100", "no device of platform 1 matches 'h100'"),
])
def test_ctx_errors_list_every_available_spec(spec, message):
    platforms = platforms_like_a_workstation()
    with pytest.raises(DeviceError) as error:
        parse_ctx_spec(spec, platforms)
    text = str(error.value)
    assert message in text and repr(spec) in text
    assert "\n" not in text
    for listed in ("0:0 (Intel(R) Xeon(R) Gold 6248)", "1:0 (NVIDIA A100-SXM4-40GB)",
                   "1:1 (NVIDIA A100-SXM4-80GB)", "2:0 (pthread-Xeon)", "3:0 (Oclgrind Simulator)",
                   "4:0 (Intel(R) UHD Graphics 630)"):
        assert listed in text


def test_platform_without_devices():
    platforms = [FakePlatform("Empty"), FakePlatform("Full", [FakeDevice("d")])]
    with pytest.raises(DeviceError, match="platform 0 has no usable device"):
        parse_ctx_spec("empty", platforms)
    assert select_device(platforms=platforms, environ={}) == (1, 0, "first device")
    assert available_specs(platforms) == ["1:0 (d)"]


# -- PYOPENCL_TEST syntax and precedence ----------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ("0", (0, 0)), ("1:1", (1, 1)), ("1:1,0", (1, 1)), ("nvidia:80gb", (1, 1)),
    ("intel", (0, 0)),                 # PYOPENCL_TEST keeps the FIRST match (name and vendor)
    ("bristol", (3, 0)), ("nvidia corporation:1", (1, 1)),  # vendors count
    ("-1", (4, 0)), ("1:-1", (1, 1)),  # Python indexing, negative indices included
    ("portable;nvidia", (2, 0)),       # several entries: the first one's first device
    ("the pocl project", (2, 0)),
])
def test_test_spec_syntax(spec, expected):
    platforms = platforms_like_a_workstation()
    assert parse_test_spec(spec, platforms) == expected


@pytest.mark.parametrize("spec", ["amd", "7", "0:5", "0:0:0", "nvidia:h100"])
def test_test_spec_errors_list_specs(spec):
    with pytest.raises(DeviceError, match=r"available: 0:0 \("):
        parse_test_spec(spec, platforms_like_a_workstation())


def test_precedence_spec_then_pyopencl_test_then_pyopencl_ctx_then_gpu():
    platforms = platforms_like_a_workstation()
    both = {"PYOPENCL_TEST": "portable", "PYOPENCL_CTX": "oclgrind"}
    assert select_device("nvidia:1", platforms=platforms, environ=both) == \
        (1, 1, "--device nvidia:1")
    assert select_device(None, platforms=platforms, environ=both) == (2, 0, "PYOPENCL_TEST")
    assert select_device("  ", platforms=platforms, environ=both) == (2, 0, "PYOPENCL_TEST")
    assert select_device(None, platforms=platforms, environ={"PYOPENCL_CTX": "oclgrind"}) == \
        (3, 0, "PYOPENCL_CTX")
    # An empty PYOPENCL_TEST is no choice; an empty PYOPENCL_CTX means platform 0, device 0.
    assert select_device(None, platforms=platforms,
                         environ={"PYOPENCL_TEST": "", "PYOPENCL_CTX": ""}) == \
        (0, 0, "PYOPENCL_CTX")
    # Nothing chosen: the first GPU, even when a CPU platform comes first.
    assert select_device(None, platforms=platforms, environ={}) == (1, 0, "first GPU")


def test_node_local_ranks_spread_over_every_gpu_of_every_platform():
    platforms = platforms_like_a_workstation()
    gpus = [(1, 0), (1, 1), (4, 0)]
    for rank in range(3):
        chosen = select_device(None, local_rank=rank, local_ranks=3, platforms=platforms,
                               environ={"SLURMD_NODENAME": "n1"})
        assert chosen[:2] == gpus[rank]
        assert chosen[2] == f"node-local rank {rank} on n1: GPU {rank} of 3"
    # PYOPENCL_CTX wins over the rank.
    assert select_device(None, local_rank=1, platforms=platforms,
                         environ={"PYOPENCL_CTX": "portable"})[:2] == (2, 0)


def test_more_ranks_than_gpus_is_an_error_unless_sharing_is_asked_for():
    platforms = platforms_like_a_workstation()
    for rank, ranks in ((0, 4), (3, None), (3, 4)):
        with pytest.raises(GpuBindingError) as error:
            select_device(None, local_rank=rank, local_ranks=ranks, platforms=platforms,
                          environ={"SLURMD_NODENAME": "enbata01"})
        assert str(error.value).startswith("4 ranks on node enbata01 but 3 GPU(s) for them")
        assert "OCLSCI_SHARE_GPUS=1" in str(error.value) and "\n" not in str(error.value)
        assert error.value.exit_code == 1
    gpus = [(1, 0), (1, 1), (4, 0)]
    for rank in range(7):
        chosen = select_device(None, local_rank=rank, local_ranks=7, platforms=platforms,
                               environ={"OCLSCI_SHARE_GPUS": "1"})
        assert chosen[:2] == gpus[rank % 3] and chosen[2].endswith(", shared")


def test_slurm_visible_devices_decide_the_gpus_of_a_rank():
    """Slurm's GRES variables: ranks sharing a list take its GPUs in order; a driver that
    shows every GPU anyway gets the GPU's own number."""
    two = [FakePlatform("AMD Accelerated Parallel Processing",
                        [FakeDevice("gfx90a", "AMD", GPU) for _ in range(2)])]
    env = {"ROCR_VISIBLE_DEVICES": "0,1", "CUDA_VISIBLE_DEVICES": "5,6", "SLURMD_NODENAME": "n2"}
    assert select_device(None, local_rank=1, local_ranks=2, platforms=two, environ=env) == \
        (0, 1, "node-local rank 1 on n2: GPU 1 of 2 (ROCR_VISIBLE_DEVICES=0,1: GPU 1)")
    # --gpus-per-task=1: one GPU visible to each rank, the first of its own list.
    assert select_device(None, local_rank=0, local_ranks=1, platforms=two[:1],
                         environ={"CUDA_VISIBLE_DEVICES": "1"})[:2] == (0, 1)
    with pytest.raises(GpuBindingError, match=r"2 ranks .* 1 GPU\(s\) for them "
                                              r"\(CUDA_VISIBLE_DEVICES=1\)"):
        select_device(None, local_rank=1, local_ranks=2, platforms=two,
                      environ={"CUDA_VISIBLE_DEVICES": "1"})
    # No OpenCL GPU (PoCL under fake GRES devices): the binding is still checked and reported.
    cpu = [FakePlatform("Portable Computing Language", [FakeDevice("pthread")])]
    assert select_device(None, local_rank=1, local_ranks=2, platforms=cpu,
                         environ={"GPU_DEVICE_ORDINAL": "0,1", "SLURMD_NODENAME": "n3"}) == \
        (0, 0, "first device; no OpenCL GPU for node-local rank 1 on n3: GPU 1 of 2 "
               "(GPU_DEVICE_ORDINAL=0,1: GPU 1)")
    with pytest.raises(GpuBindingError):
        select_device(None, local_rank=0, local_ranks=2, platforms=cpu,
                      environ={"CUDA_VISIBLE_DEVICES": "0"})
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}) == (None, ())
    assert bind_gpu(0, 0, ranks=3, environ={}) is None


def test_without_gpu_the_first_device_of_any_kind():
    platforms = [FakePlatform("Oclgrind", [FakeDevice("Oclgrind Simulator")]),
                 FakePlatform("Portable Computing Language", [FakeDevice("pthread")])]
    assert select_device(None, platforms=platforms, environ={}) == (0, 0, "first device")
    assert select_device(None, local_rank=3, platforms=platforms, environ={}) == \
        (0, 0, "first device")


def test_no_device_anywhere_is_no_platform_error_with_pip_advice():
    with pytest.raises(NoPlatformError) as error:
        select_device(None, platforms=[FakePlatform("Empty")], environ={})
    assert "pip install 'oclsci[pocl]'" in str(error.value)
    assert error.value.exit_code == EXIT_NO_PLATFORM == 69


def test_node_local_rank_order_of_trust():
    assert node_local_rank({}) is None
    assert node_local_rank({name: "5" for name in LOCAL_RANK_VARIABLES}) == 5
    assert node_local_rank({"OCLSCI_LOCAL_RANK": "1", "SLURM_LOCALID": "2"}) == 1
    assert node_local_rank({"OCLSCI_LOCAL_RANK": " ", "SLURM_LOCALID": "2"}) == 2
    assert node_local_rank({"PMI_LOCAL_RANK": "-1", "MV2_COMM_WORLD_LOCAL_RANK": "4"}) == 4


# -- the same answers as PyOpenCL's own parsers, on random platforms -------------------------

NAME_WORDS = ["intel", "NVIDIA", "cuda", "Portable", "pocl", "Oclgrind", "AMD", "gfx90a",
              "A100", "0", "1", "2", "12", "opencl", "Graphics", "cpu"]
names = st.lists(st.sampled_from(NAME_WORDS), min_size=1, max_size=3).map(" ".join)
fake_devices = st.lists(st.builds(FakeDevice, names, names), min_size=0, max_size=3)
fake_platforms = st.lists(st.builds(FakePlatform, names, fake_devices, names), min_size=1,
                          max_size=4)
answers = st.one_of(st.just(""), st.integers(-2, 5).map(str),
                    st.sampled_from(NAME_WORDS).map(lambda w: w.swapcase()),
                    st.sampled_from(NAME_WORDS))


def _pyopencl_ctx_choice(spec, platforms):
    """(platform, device) indices PyOpenCL's create_some_context picks, or None if it fails."""
    with mock.patch.object(cl, "get_platforms", lambda: platforms):
        try:
            chosen = cl.choose_devices(interactive=False, answers=spec.split(":"))
        except (RuntimeError, cl.Error):
            return None
    for p, platform in enumerate(platforms):
        for d, device in enumerate(platform.devices):
            if device is chosen[0]:
                return p, d
    raise AssertionError("PyOpenCL chose an unknown device")


def _pyopencl_test_choice(spec, platforms):
    with mock.patch.object(cl, "get_platforms", lambda: platforms):
        try:
            entries = pyopencl.tools.get_test_platforms_and_devices(spec)
        except (RuntimeError, IndexError):
            return None
    platform, devices = entries[0]
    if not devices:
        return None
    return platforms.index(platform), platform.devices.index(devices[0])


@settings(max_examples=300, deadline=None)
@given(fake_platforms, answers, st.one_of(st.none(), answers))
def test_ctx_spec_agrees_with_pyopencl(platforms, platform_answer, device_answer):
    spec = platform_answer if device_answer is None else f"{platform_answer}:{device_answer}"
    expected = _pyopencl_ctx_choice(spec, platforms)
    if expected is None:
        with pytest.raises(DeviceError):
            parse_ctx_spec(spec, platforms)
    else:
        assert parse_ctx_spec(spec, platforms) == expected


@settings(max_examples=300, deadline=None)
@given(fake_platforms, answers, st.one_of(st.none(), answers))
def test_test_spec_agrees_with_pyopencl(platforms, platform_answer, device_answer):
    spec = platform_answer if device_answer is None else f"{platform_answer}:{device_answer}"
    expected = _pyopencl_test_choice(spec, platforms)
    if expected is None:
        with pytest.raises(DeviceError):
            parse_test_spec(spec, platforms)
    else:
        assert parse_test_spec(spec, platforms) == expected


def test_oclsci_is_more_lenient_than_pyopencl_only_with_spaces_and_device_lists():
    """Where oclsci and PyOpenCL part ways, on purpose: oclsci ignores spaces around names
    (PyOpenCL finds no match) and refuses several devices in PYOPENCL_CTX (one device per
    process; PyOpenCL makes a context on all of them)."""
    platforms = platforms_like_a_workstation()
    for spec in (" nvidia", "nvidia: 80gb", "cuda "):
        assert _pyopencl_ctx_choice(spec, platforms) is None
    assert parse_ctx_spec(" nvidia", platforms) == (1, 0)
    assert parse_ctx_spec("nvidia: 80gb", platforms) == (1, 1)
    assert parse_ctx_spec("cuda ", platforms) == (1, 0)
    assert _pyopencl_ctx_choice("nvidia:0,1", platforms) == (1, 0)
    with pytest.raises(DeviceError, match="names several devices"):
        parse_ctx_spec("nvidia:0,1", platforms)


@settings(max_examples=100, deadline=None)
@given(fake_platforms, st.data())
def test_every_listed_spec_selects_its_device(platforms, data):
    specs = available_specs(platforms)
    if not specs:
        return
    spec = data.draw(st.sampled_from(specs)).split(" ")[0]
    p, d = map(int, spec.split(":"))
    assert select_device(spec, platforms=platforms, environ={})[:2] == (p, d)
    assert select_device(None, platforms=platforms, environ={"PYOPENCL_CTX": spec})[:2] == (p, d)
    assert select_device(None, platforms=platforms, environ={"PYOPENCL_TEST": spec})[:2] == (p, d)


# -- for real: PoCL and Oclgrind side by side --------------------------------------------------

# Runs selections in one process that sees both platforms: argv[1] is a JSON list of
# [SPEC or null, {environment variables}]; prints the chosen device of each.
SELECT = """
import json, os, sys
from oclsci.runtime.device import create_context
answers = []
for spec, variables in json.loads(sys.argv[1]):
    for name in ("PYOPENCL_CTX", "PYOPENCL_TEST"):
        os.environ.pop(name, None)
    os.environ.update(variables)
    c = create_context(spec, reuse=False)
    answers.append({"spec": c.spec, "platform": c.platform.name, "device": c.name,
                    "chosen_by": c.chosen_by})
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def two_platforms(tmp_path_factory):
    """The environment of a process seeing Oclgrind and the platforms already installed."""
    reason = og.missing_reason()
    if reason:
        pytest.skip(reason)
    env = og.oclgrind_environ(og.make_vendors_dir(tmp_path_factory.mktemp("vendors")),
                              checks=False)
    listing = subprocess.run([sys.executable, "-c", "import json, pyopencl as cl; print(json."
                              "dumps([[p.name, [d.name for d in p.get_devices()]] for p in "
                              "cl.get_platforms()]))"], env=env, capture_output=True, text=True,
                             timeout=120, check=True)
    platforms = json.loads(listing.stdout)
    names = [name for name, _ in platforms]
    if not any("Portable" in name for name in names):
        pytest.skip("PoCL is not installed: pip install 'oclsci[pocl]'")
    return env, platforms


def _index(platforms, word):
    return next(i for i, (name, _) in enumerate(platforms) if word in name)


def _select_many(env, queries):
    result = subprocess.run([sys.executable, "-c", SELECT, json.dumps(queries)], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _select(env, spec=None, **variables):
    return _select_many(env, [[spec, variables]])[0]


def test_both_platforms_are_seen(two_platforms):
    _, platforms = two_platforms
    names = [name for name, _ in platforms]
    assert sum("Oclgrind" in name for name in names) == 1
    assert sum("Portable" in name for name in names) == 1


def test_names_and_indices_pick_the_right_platform(two_platforms):
    env, platforms = two_platforms
    queries, expected = [], []
    for target, word in (("Oclgrind", "oclgrind"), ("Portable", "portable")):
        p = _index(platforms, target)
        other = _index(platforms, "Portable" if target == "Oclgrind" else "Oclgrind")
        for spec in (word, word.upper(), word[:4].title() + ":0", f"{p}:0", str(p), f"{p}:"):
            # --device wins over PYOPENCL_CTX and PYOPENCL_TEST naming the other platform.
            queries.append([spec, {"PYOPENCL_CTX": f"{other}:0", "PYOPENCL_TEST": str(other)}])
            expected.append((f"{p}:0", target, f"--device {spec}"))
            queries.append([None, {"PYOPENCL_CTX": spec}])
            expected.append((f"{p}:0", target, "PYOPENCL_CTX"))
            # PYOPENCL_TEST wins over PYOPENCL_CTX naming the other platform.
            queries.append([None, {"PYOPENCL_TEST": spec, "PYOPENCL_CTX": f"{other}:0"}])
            expected.append((f"{p}:0", target, "PYOPENCL_TEST"))
    answers = _select_many(env, queries)
    for query, want, got in zip(queries, expected, answers, strict=True):
        assert (got["spec"], got["chosen_by"]) == (want[0], want[2]), (query, got)
        assert want[1] in got["platform"], (query, got)


def test_oclgrind_claims_every_device_type(two_platforms):
    """Oclgrind reports CL_DEVICE_TYPE_ALL (GPU+CPU+ACCELERATOR), which the default meets."""
    env, platforms = two_platforms
    result = run_cli("devices", "--json", env=env)
    types = {entry["platform"]: entry["type"] for entry in json.loads(result.stdout)}
    assert "GPU" in types["Oclgrind"] and "CPU" in types["Oclgrind"]


def test_default_prefers_a_real_device_to_the_simulator(two_platforms):
    env, platforms = two_platforms
    chosen = _select(env)
    assert "Portable" in chosen["platform"], chosen


def test_default_is_reported_with_how_it_was_chosen(two_platforms):
    env, platforms = two_platforms
    chosen = _select(env)
    assert chosen["chosen_by"] in ("first GPU", "first device")
    assert chosen["platform"] == platforms[int(chosen["spec"].split(":")[0])][0]


def test_devices_command_lists_both_platforms(two_platforms):
    env, platforms = two_platforms
    result = run_cli("devices", "--json", env=env)
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    expected = [(f"{p}:{d}", name, device) for p, (name, devices) in enumerate(platforms)
                for d, device in enumerate(devices)]
    assert [(e["spec"], e["platform"], e["name"]) for e in listed] == expected
    table = run_cli("devices", env=env)
    assert table.returncode == 0, table.stderr
    for p, (name, _) in enumerate(platforms):
        assert f"platform {p}: {name}" in table.stdout
    assert "Oclgrind Simulator" in table.stdout


def test_jacobi_runs_on_the_device_named(two_platforms, tmp_path):
    env, platforms = two_platforms
    np.save(tmp_path / "b.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    for word in ("oclgrind", "portable"):
        out = tmp_path / f"x-{word}.npy"
        result = run_cli("jacobi", "b.npy", "-n", "3", "--kernel", "seed", "--device", word,
                         "-o", out.name, env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        p = _index(platforms, {"oclgrind": "Oclgrind", "portable": "Portable"}[word])
        banner = result.stderr.splitlines()[0]
        assert banner.startswith(f"oclsci: device {p}:0 "), banner
        assert "chosen by --device" in banner
    np.testing.assert_array_equal(np.load(tmp_path / "x-oclgrind.npy"),
                                  np.load(tmp_path / "x-portable.npy"))


def test_bad_spec_lists_both_platforms(two_platforms):
    env, platforms = two_platforms
    result = run_cli("jacobi", "-n", "1", "--device", "nvidia", env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclsci: error:"), result.stderr
    for p, (_, devices) in enumerate(platforms):
        assert f"{p}:0 ({devices[0]})" in lines[0]


# -- no platform at all ---------------------------------------------------------------------

# The pyopencl wheel's ICD loader reads the folder named by OCL_ICD_VENDORS *and*
# $PYOPENCL_HOME/.libs (where pip's PoCL lives), and pyopencl sets PYOPENCL_HOME when it is
# imported; the loader reads it only at the first platform query, so pointing it at an empty
# folder right after the import hides PoCL. Then oclsci's command line runs as `-m oclsci`.
NO_PLATFORM = """
import os, runpy, sys
import pyopencl
os.environ["PYOPENCL_HOME"] = os.environ["OCL_ICD_VENDORS"]
sys.argv = ["oclsci"] + sys.argv[1:]
runpy.run_module("oclsci", run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.parametrize("args", [["devices"], ["devices", "--json"],
                                  ["jacobi", "-n", "1", "-o", "x.npy"],
                                  ["jacobi", "-n", "1", "--device", "0:0"]])
def test_no_platform_exits_69_with_pip_advice(tmp_path, args):
    empty = tmp_path / "vendors"
    empty.mkdir()
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty))
    for name in ("PYOPENCL_CTX", "PYOPENCL_TEST"):
        env.pop(name, None)
    probe = subprocess.run([sys.executable, "-c", "import os, pyopencl as cl; os.environ["
                            "'PYOPENCL_HOME'] = os.environ['OCL_ICD_VENDORS']\ntry:\n"
                            " print(len(cl.get_platforms()))\nexcept cl.Error:\n print(0)"],
                           env=env, capture_output=True, text=True, timeout=120)
    if probe.stdout.strip() != "0":
        pytest.skip(f"platforms are registered outside OCL_ICD_VENDORS here ({probe.stdout!r})")
    result = subprocess.run([sys.executable, "-c", NO_PLATFORM, *args], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == EXIT_NO_PLATFORM, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"oclsci: error: {NO_PLATFORM_HELP}"], result.stderr
    assert "pip install 'oclsci[pocl]'" in lines[0]
    assert result.stdout == "" and not (tmp_path / "x.npy").exists()
