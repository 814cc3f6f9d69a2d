"""Every kernel oclsci ships, run under the Oclgrind simulator: any report fails the test.

Oclgrind checks what real devices do not: out-of-bounds accesses, data races (missing
barriers), reads of uninitialised memory, barrier divergence, OpenCL API misuse. The cases
(tests/oclgrind/: ``all_cases``) are every workload's corner cases (``oclsci/<workload>/
corners.py``, named by its record in ``oclsci.WORKLOADS``: each kernel over its corner
parameters on tiny problems, against NumPy), the generic reduction and canaries; they run in
subprocesses that see Oclgrind through ``OCL_ICD_VENDORS`` (see docs/testing.md).
"""

from __future__ import annotations

import json
import subprocess
import sys

import oclgrind as og
import pytest
from conftest import tool_missing

from oclsci.jacobi.kernels import KERNELS
from oclsci.runtime import programs

pytestmark = [
    pytest.mark.oclgrind,
    pytest.mark.slow,
]


@pytest.fixture(autouse=True)
def _oclgrind_installed():
    """The suite needs Oclgrind (tool_missing: a skip, a failure in CI)."""
    reason = og.missing_reason()
    if reason:
        tool_missing(reason)

CASES = og.all_cases()
CANARIES = og.canary_cases()
CASE_IDS = [case["id"] for case in CASES]

# Cases that fail because of a known bug in a kernel owned by someone else: id prefix ->
# reason. They are strict xfails, so fixing the kernel turns them red until removed here.
KNOWN_BUGS: dict[str, str] = {}


def _known_bug(case_id: str) -> str | None:
    return next((reason for prefix, reason in KNOWN_BUGS.items()
                 if case_id.startswith(prefix)), None)


def _params(ids: list[str]) -> list:
    return [pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=_known_bug(i)))
            if _known_bug(i) else i for i in ids]


@pytest.fixture(scope="module")
def oclgrind_run(request):
    """Run, once, the cases of the tests selected in this module (all by default)."""
    selected = set()
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec is not None:
            selected.add(callspec.params.get("case_id"))
    wanted = [case for case in CASES + CANARIES
              if case["id"] in selected or not selected - {None}]
    return og.run_cases(wanted)


def test_runner_starts_cleanly(oclgrind_run):
    assert not oclgrind_run.setup_reports, "\n".join(oclgrind_run.setup_reports)


@pytest.mark.parametrize("case_id", _params(CASE_IDS))
def test_kernel_is_clean_under_oclgrind(oclgrind_run, case_id):
    outcome = oclgrind_run.outcomes[case_id]
    if outcome.unsupported and outcome.clean:
        pytest.skip(f"oclsci refuses this configuration: {outcome.unsupported}")
    assert outcome.clean, outcome.explain()


@pytest.mark.parametrize("case_id", [case["id"] for case in CANARIES])
def test_broken_kernel_is_reported(oclgrind_run, case_id):
    """The safety net itself: a deliberately broken kernel must give the expected report."""
    outcome = oclgrind_run.outcomes[case_id]
    expected = next(case["expect"] for case in CANARIES if case["id"] == case_id)
    assert outcome.ran, outcome.explain()
    assert any(expected in report for report in outcome.reports), outcome.explain()


def test_every_shipped_kernel_ran_under_oclgrind(oclgrind_run):
    if len(oclgrind_run.outcomes) < len(CASES):
        pytest.skip("only some cases selected")
    missing = set(programs.template_names()) - oclgrind_run.templates
    assert not missing, (
        f"kernel templates never built under Oclgrind: {sorted(missing)}; add cases for them "
        "to the workload's corners.py (see docs/testing.md, 'Adding a kernel to the safety "
        "net')")


def test_every_jacobi_kernel_has_a_parameter_space():
    missing = [name for name, configs in og.jacobi_corner_cases().items() if not configs]
    assert not missing, (f"Jacobi kernels without Oclgrind corner cases: {missing}; give "
                         "their specs corner_cases (oclsci/jacobi/specs/)")


def test_every_corner_configuration_is_valid_for_oclgrind():
    """A corner case that the solver refuses would silently test nothing."""
    bad = [(name, params, local) for name, configs in og.jacobi_corner_cases().items()
           for params, local in configs if not og.fits_oclgrind(name, params, local)]
    assert not bad, f"invalid corner cases: {bad}"


def test_every_jacobi_parameter_is_varied():
    """Each parameter of each kernel takes at least two values among the checked configs."""
    spaces = og.jacobi_spaces()
    dull = []
    for name, spec in KERNELS.items():
        for param in spec.params:
            values = {params.get(param.name, param.default) for params, _ in spaces[name]}
            if len(values) < 2:
                dull.append(f"{name}.{param.name} (only {sorted(map(str, values))})")
    assert not dull, (f"parameters never varied under Oclgrind: {dull}; extend the corner "
                      "cases of their specs")


def test_case_ids_are_unique():
    ids = [case["id"] for case in CASES + CANARIES]
    assert len(ids) == len(set(ids))


def test_vendors_folder_shows_oclgrind_beside_the_other_platforms(tmp_path):
    """The ICD folder adds Oclgrind and keeps every platform seen without it, once each."""
    script = ("import json, pyopencl as cl; print(json.dumps([p.name for p in "
              "cl.get_platforms()]))")
    before = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                       text=True, check=True, timeout=120).stdout)
    env = og.oclgrind_environ(og.make_vendors_dir(tmp_path / "vendors"), checks=False)
    after = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                      text=True, check=True, timeout=120, env=env).stdout)
    assert sorted(after) == sorted(before + ["Oclgrind"])
