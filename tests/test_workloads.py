"""Every workload's record (oclsci.WORKLOADS) names modules that exist and define what the
command line, the selftest, the bench and the corner cases (the Oclgrind suite) look for in
them."""

from __future__ import annotations

import importlib
import json

from oclsci import WORKLOADS, distributed_commands, workload_commands


def test_every_record_names_what_exists():
    names = [workload.name for workload in WORKLOADS]
    assert len(names) == len(set(names))
    for workload in WORKLOADS:
        for command, module in workload.commands.items():
            assert callable(getattr(importlib.import_module(module), f"{command}_command"))
        if workload.selftest:
            assert callable(importlib.import_module(workload.selftest).selftest_checks)
        if workload.bench:
            importlib.import_module(workload.bench)
        for command, module in workload.distributed.items():
            assert command in workload.commands
            importlib.import_module(module)


def test_every_workload_has_corner_cases():
    """Each record names its corner-case module (oclsci.corners): ``corner_cases()`` giving
    JSON-able cases with an id and a cost, ``run_corner_case(compute, case)``, and
    ``prepare_corner_cases`` callable where defined."""
    ids = []
    for workload in WORKLOADS:
        assert workload.corner_cases == f"oclsci.{workload.name}.corners", workload.name
        module = importlib.import_module(workload.corner_cases)
        assert callable(module.run_corner_case)
        assert callable(getattr(module, "prepare_corner_cases", callable))
        cases = module.corner_cases()
        assert cases and json.loads(json.dumps(cases)), workload.name
        for case in cases:
            assert {"id", "kind", "cost"} <= set(case), case
        ids += [case["id"] for case in cases]
    assert len(ids) == len(set(ids))


def test_the_cheapest_corner_case_of_each_workload_passes(any_compute):
    """Corner cases run on any device, not only under Oclgrind."""
    from oclsci.corners import (
        Unsupported,
        prepare_corner_cases,
        run_corner_case,
        workload_corner_cases,
    )

    for workload in WORKLOADS:
        case = min(workload_corner_cases(workload.name), key=lambda case: case["cost"])
        prepare_corner_cases(any_compute, [case])
        try:
            run_corner_case(any_compute, case)
        except Unsupported:
            pass


def test_the_command_line_bench_and_selftest_read_the_records():
    from oclsci.bench.runner import NOT_IN_ALL
    from oclsci.bench.runner import WORKLOADS as BENCH
    from oclsci.cli import COMMANDS, DISTRIBUTED_COMMANDS

    assert workload_commands().items() <= COMMANDS.items()
    assert DISTRIBUTED_COMMANDS == distributed_commands() == {
        "jacobi", "poisson", "mandelbrot", "lombscargle", "stencil"}
    assert set(BENCH) == {w.name for w in WORKLOADS if w.bench}
    assert set(NOT_IN_ALL) == {w.name for w in WORKLOADS if w.bench and not w.bench_in_all}


def test_selftest_gathers_every_workloads_checks(any_compute):
    from oclsci.selftest import SIZES, all_checks

    names = [name for name, _ in all_checks(any_compute, quick=True)]
    for workload in WORKLOADS:
        own = workload.selftest_checks(any_compute, SIZES["quick"])
        assert own and [name for name, _ in own] == [n for n in names
                                                     if n.split()[0] == workload.name]
