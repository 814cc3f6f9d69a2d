"""Oclgrind as a second OpenCL platform for the tests, and a runner of kernels under it.

Oclgrind (https://github.com/jrprice/Oclgrind) simulates an OpenCL device and reports what real
devices do silently: out-of-bounds reads and writes, data races between work-items, reads of
uninitialised memory, barrier divergence and OpenCL API misuse. This package

* registers Oclgrind's ICD beside the platforms already installed, in a folder named by
  ``OCL_ICD_VENDORS`` (:mod:`~oclgrind.install`: :func:`make_vendors_dir`,
  :func:`oclgrind_environ`);
* gathers every kernel launch that oclsci can make as small JSON *cases*
  (:mod:`~oclgrind.cases`, :func:`all_cases`): each workload's corner cases (its
  ``oclsci/<workload>/corners.py``, named by its record in ``oclsci.WORKLOADS``; see
  :mod:`oclsci.corners`) as far as Oclgrind runs them (for Jacobi, the configurations that fit
  its device, within a budget of simulated work: :mod:`~oclgrind.jacobi`), the runtime's
  generic reduction and the canaries;
* runs cases in subprocesses (the ICD loader reads the environment once, when pyopencl first
  loads) and splits Oclgrind's stderr into per-case reports (:mod:`~oclgrind.driver`,
  :func:`run_cases`); the subprocess is the package run as a script (:mod:`~oclgrind.runner`:
  ``python tests/oclgrind JOB.json``, with :mod:`~oclgrind.checks` running each case). See
  docs/testing.md.
"""

from oclgrind.cases import all_cases, canary_cases
from oclgrind.driver import CaseOutcome, RunResult, reports_in, run_cases
from oclgrind.install import (
    CHECK_ENVIRONMENT,
    find_oclgrind_icd,
    make_vendors_dir,
    missing_reason,
    oclgrind_environ,
)
from oclgrind.jacobi import fits_oclgrind, jacobi_corner_cases, jacobi_spaces, simulated_work
from oclsci.corners import case_id as make_id
from oclsci.jacobi.corners import config_label

__all__ = ["all_cases", "canary_cases", "CaseOutcome", "RunResult", "reports_in", "run_cases",
           "CHECK_ENVIRONMENT", "find_oclgrind_icd", "make_vendors_dir", "missing_reason",
           "oclgrind_environ", "make_id", "config_label", "fits_oclgrind",
           "jacobi_corner_cases", "jacobi_spaces", "simulated_work"]
