"""Oclgrind as a second OpenCL platform for the tests, and a runner of kernels under it.

Oclgrind (https://github.com/jrprice/Oclgrind) simulates an OpenCL device and reports what real
devices do silently: out-of-bounds reads and writes, data races between work-items, reads of
uninitialised memory, barrier divergence and OpenCL API misuse. This package

* registers Oclgrind's ICD beside the platforms already installed, in a folder named by
  ``OCL_ICD_VENDORS`` (:mod:`~oclgrind.install`: :func:`make_vendors_dir`,
  :func:`oclgrind_environ`);
* describes every kernel launch that oclsci can make as small JSON *cases*
  (:mod:`~oclgrind.cases`, :func:`all_cases`): each Jacobi kernel over its corner cases and
  defaults (:mod:`~oclgrind.jacobi`), the residual reduction, Mandelbrot, every elementwise
  operation, Lomb-Scargle;
* runs cases in subprocesses (the ICD loader reads the environment once, when pyopencl first
  loads) and splits Oclgrind's stderr into per-case reports (:mod:`~oclgrind.driver`,
  :func:`run_cases`); the subprocess is the package run as a script (:mod:`~oclgrind.runner`:
  ``python tests/oclgrind JOB.json``, with :mod:`~oclgrind.jacobi_checks` and
  :mod:`~oclgrind.checks` running each kind of case). See docs/testing.md.
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
from oclgrind.jacobi import (
    config_label,
    fits_oclgrind,
    jacobi_cases,
    jacobi_corner_cases,
    jacobi_spaces,
    make_id,
    simulated_work,
)

__all__ = ["all_cases", "canary_cases", "CaseOutcome", "RunResult", "reports_in", "run_cases",
           "CHECK_ENVIRONMENT", "find_oclgrind_icd", "make_vendors_dir", "missing_reason",
           "oclgrind_environ", "make_id", "config_label", "fits_oclgrind", "jacobi_cases",
           "jacobi_corner_cases", "jacobi_spaces", "simulated_work"]
