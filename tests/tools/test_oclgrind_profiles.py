"""Every Jacobi kernel default of each GPU profile (tests/gpu_profiles.py), run under Oclgrind
with that profile's local memory and work-group limits (OCLGRIND_LOCAL_MEM_SIZE,
OCLGRIND_MAX_WGSIZE): out-of-bounds accesses, races and API misuse fail the test.

For each profile and kernel: the default, and the fallback the solver takes when the built
kernel allows fewer work-items (the profile's CL_KERNEL_WORK_GROUP_SIZE, 256 under ROCm), in
float32 and, where the profile has fp64, float64. Profiles with the same limits share a run.
"""

from __future__ import annotations

import oclgrind as og
import pytest
from conftest import tool_missing
from gpu_profiles import PROFILES, described, kernel_limit

from oclsci.jacobi import kernels
from oclsci.jacobi.kernels import KERNELS, device_candidates

pytestmark = [pytest.mark.oclgrind, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _oclgrind_installed():
    """The suite needs Oclgrind (tool_missing: a skip, a failure in CI)."""
    reason = og.missing_reason()
    if reason:
        tool_missing(reason)

# Grid shapes that select the defaults (some differ for grids over 2^20 cells; the second is
# only for kernels suited to GPUs, which these profiles describe); the cases run
# over a full launch and a remainder on a 17 x 40 grid, or for the kernels whose parameters
# fix the work-group (tiled kernels, which Oclgrind simulates slowly), on 5 x 3 (one
# work-group: its local memory, its size and its barriers are what a profile's limits change;
# tests/oclgrind/ covers larger grids).
SELECTING_SHAPES = [(266, 400), (2048, 1024)]
ON_GPUS = kernels.suited(is_cpu=False)


def _case_shape(name: str) -> tuple[int, int]:
    return (17, 40) if KERNELS[name].work_group is None else (5, 3)


def _limits(profile) -> tuple[int, int]:
    return profile.local_mem_bytes, profile.max_work_group_size


def profile_cases() -> dict[tuple[int, int], list[dict]]:
    """Cases by (local memory, max work-group), each configuration once per limits."""
    runs: dict[tuple[int, int], list[dict]] = {}
    for profile in PROFILES:
        cases = runs.setdefault(_limits(profile), [])
        compute = described(profile)
        for name in KERNELS:
            for dtype in ("float32", "float64") if profile.fp64 else ("float32",):
                for shape in SELECTING_SHAPES if name in ON_GPUS else SELECTING_SHAPES[:1]:
                    candidates = device_candidates(compute, name, dtype, shape)
                    limit = kernel_limit(profile, name)
                    chosen = [candidates[0]] + [
                        next(c for c in candidates if c.work_group_size() <= limit)]
                    for config in chosen:
                        local = list(config.local_size) if config.local_size else None
                        k = config.steps_per_launch
                        grid = _case_shape(name)
                        case_id = og.make_id(
                            "profile", f"lm{profile.local_mem_bytes // 1024}k",
                            f"wg{profile.max_work_group_size}", name,
                            og.config_label(config.params, local), dtype)
                        if any(c["id"] == case_id for c in cases):
                            continue
                        cases.append({
                            "id": case_id, "workload": "jacobi", "kind": "jacobi",
                            "kernel": name,
                            "params": dict(config.params), "local_size": local,
                            "shape": grid, "steps": k + 1, "dtype": dtype,
                            "cost": og.simulated_work(name, config.params, local, grid,
                                                      k + 1)})
    return runs


RUNS = profile_cases()
CASE_IDS = [(limits, case["id"]) for limits, cases in RUNS.items() for case in cases]


@pytest.fixture(scope="module")
def profile_runs():
    """Run every profile's cases under Oclgrind with its limits, once."""
    return {limits: og.run_cases(cases, extra_env={"OCLGRIND_LOCAL_MEM_SIZE": str(limits[0]),
                                                   "OCLGRIND_MAX_WGSIZE": str(limits[1])})
            for limits, cases in RUNS.items()}


def test_every_profile_has_cases():
    for profile in PROFILES:
        kernels = {case["kernel"] for case in RUNS[_limits(profile)]}
        assert kernels == set(KERNELS), profile.name


@pytest.mark.parametrize("limits,case_id", CASE_IDS, ids=[c for _, c in CASE_IDS])
def test_profile_default_is_clean_under_oclgrind(profile_runs, limits, case_id):
    run = profile_runs[limits]
    assert not run.setup_reports, "\n".join(run.setup_reports)
    outcome = run.outcomes[case_id]
    assert outcome.unsupported is None, outcome.unsupported
    assert outcome.clean, outcome.explain()
