"""Device manager on the real platforms: listing, selection by SPEC and PYOPENCL_CTX, timing."""

from __future__ import annotations

import json

import numpy as np
import pyopencl as cl
import pytest
from conftest import run_cli

from oclsci.runtime import node_local_rank
from oclsci.runtime.device import create_context
from oclsci.runtime.selection import list_devices

FIELDS = {"spec", "platform", "name", "type", "vendor", "driver_version", "opencl_version",
          "compute_units", "global_mem_bytes", "local_mem_bytes", "max_work_group_size", "fp64"}


def test_devices_json_lists_every_device_with_its_facts():
    result = run_cli("devices", "--json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)

    def steady(entries: list[dict]) -> list[dict]:  # PoCL sizes global memory by free memory
        return [{k: v for k, v in entry.items() if k != "global_mem_bytes"} for entry in entries]

    assert steady(listed) == steady(list_devices())
    import oclsci

    assert steady(oclsci.list_devices()) == steady(listed)  # the package's lazy name
    expected = [f"{p}:{d}" for p, platform in enumerate(cl.get_platforms())
                for d, _ in enumerate(platform.get_devices())]
    assert [entry["spec"] for entry in listed] == expected
    for entry in listed:
        assert set(entry) == FIELDS
        assert entry["compute_units"] >= 1 and entry["global_mem_bytes"] > 0


def test_devices_table_names_pocl_cpu():
    result = run_cli("devices")
    assert result.returncode == 0
    if not any("Portable Computing Language" in p.name for p in cl.get_platforms()):
        pytest.skip("PoCL is not installed")
    assert "Portable Computing Language" in result.stdout and "CPU" in result.stdout


@pytest.mark.parametrize("how", [{"env": {"PYOPENCL_CTX": "0:0"}}, {"args": ["--device", "0"]},
                                 {"args": ["--device", "portable"]}])
def test_pocl_selected_by_ctx_index_and_name(how, tmp_path):
    if "Portable" not in cl.get_platforms()[0].name:
        pytest.skip("platform 0 is not PoCL here")
    np.save(tmp_path / "b.npy", np.ones((3, 3), dtype=np.float32))
    result = run_cli("jacobi", str(tmp_path / "b.npy"), "-n", "2", *how.get("args", []),
                     extra_env=how.get("env"))
    assert result.returncode == 0, result.stderr
    banner = result.stderr.strip().splitlines()[0]
    assert banner.startswith("oclsci: device 0:0 ") and "Portable Computing Language" in banner


def test_quiet_prints_no_device_line(tmp_path):
    np.save(tmp_path / "b.npy", np.ones((3, 3), dtype=np.float32))
    result = run_cli("jacobi", str(tmp_path / "b.npy"), "-n", "2", "--quiet")
    assert result.returncode == 0 and result.stderr == "" and result.stdout == ""


@pytest.mark.parametrize("spec", ["nvidia", "7", "0:9", "0:0:0", "0:0,0"])
def test_bad_spec_is_one_line_listing_available_specs(spec):
    result = run_cli("jacobi", "-n", "1", "--device", spec)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "available: 0:0" in lines[0] and repr(spec) in lines[0]


def test_bad_pyopencl_ctx_is_one_line():
    result = run_cli("jacobi", "-n", "1", extra_env={"PYOPENCL_CTX": "no-such-platform"})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no platform matches 'no-such-platform'" in result.stderr


def test_node_local_rank_variables():
    assert node_local_rank({}) is None
    assert node_local_rank({"SLURM_LOCALID": "3"}) == 3
    assert node_local_rank({"OMPI_COMM_WORLD_LOCAL_RANK": "1"}) == 1
    assert node_local_rank({"MPI_LOCALRANKID": "2", "SLURM_LOCALID": "x"}) == 2


def test_stopwatch_measures_device_time(any_compute):
    queue = any_compute.queue
    host = np.ones(1 << 20, dtype=np.float32)
    buffer = cl.Buffer(any_compute.context, cl.mem_flags.READ_WRITE, host.nbytes)
    watch = any_compute.stopwatch()
    for _ in range(3):
        watch.record(cl.enqueue_copy(queue, buffer, host, is_blocking=False))
    seconds = watch.stop()
    assert 0 < seconds <= watch.wall_seconds * 1.5 + 1e-3
    assert watch.source in ("OpenCL events", "host clock")


def test_contexts_are_reused_per_device():
    assert create_context("0:0") is create_context("0:0")


def test_a_queue_of_its_own_shares_the_context(any_compute):
    """``with_own_queue``: another in-order queue on the same context, device, programs and
    copy queue; work on it, ordered by an event, reaches the other queue's buffers."""
    other = any_compute.with_own_queue()
    assert other.queue is not any_compute.queue and other.context is any_compute.context
    assert other.copy_queue is any_compute.copy_queue
    assert other.program_cache is any_compute.program_cache
    assert other.profiling == any_compute.profiling
    host = np.arange(1024, dtype=np.float32)
    buffer = cl.Buffer(any_compute.context, cl.mem_flags.READ_WRITE, host.nbytes)
    written = cl.enqueue_copy(other.queue, buffer, host, is_blocking=False)
    other.queue.flush()
    back = np.empty_like(host)
    cl.enqueue_copy(any_compute.queue, back, buffer, wait_for=[written])
    assert np.array_equal(back, host)
