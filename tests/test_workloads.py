"""Every workload's record (oclsci.WORKLOADS) names modules that exist and define what the
command line, the selftest and the bench look for in them."""

from __future__ import annotations

import importlib

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
