"""The package's shape (docs/architecture.md): no import cycle, function-level imports and
imports for type checking included, a submodule's import of its own package aside."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import numpy as np
from conftest import REPO_ROOT
from mpi_launch import launch_env

PACKAGE = REPO_ROOT / "oclsci"


def import_graph() -> dict[str, set[str]]:
    """Module -> the oclsci modules it imports anywhere in its source."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("oclsci"):
                subs = {f"{node.module}.{alias.name}" for alias in node.names} & set(modules)
                found |= subs if len(subs) == len(node.names) else subs | {node.module}
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name.startswith("oclsci")}
        graph[name] = {m for m in found if m in modules and m != name
                       and not name.startswith(m + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_oclsci_jacobi_on_one_device_loads_few_modules(tmp_path):
    """`oclsci jacobi INPUT` on one device: nothing of oclsci.mpi, the other workloads or the
    tuner, and at most 30 oclsci modules in all (42 before small modules were folded into
    their natural homes)."""
    np.save(tmp_path / "b.npy", np.ones((16, 16)))
    code = ("import sys; from oclsci.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "import json; print(json.dumps(sorted(m for m in sys.modules if m.startswith("
            "'oclsci'))))")
    out = subprocess.run([sys.executable, "-c", code, "jacobi", str(tmp_path / "b.npy"), "-n",
                          "3", "-q", "-o", str(tmp_path / "x.npy")], capture_output=True,
                         text=True, timeout=120, env=launch_env())
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not [m for m in loaded if m.startswith(("oclsci.mpi", "oclsci.mandelbrot",
                                                     "oclsci.lombscargle", "oclsci.poisson",
                                                     "oclsci.jacobi.tuner"))], loaded
    assert len(loaded) <= 30, (len(loaded), loaded)


def _names_used(path) -> set[str]:
    """Every name a module's source uses or imports (``from M import NAME``), and the modules
    it imports."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            names |= {node.module or ""} | {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def test_the_commands_leave_placement_device_and_signals_to_the_api():
    """The CLI is thin: parse, call the API, print. No command module asks for the MPI world,
    opens a device or holds a stop flag: the workload commands leave it to oclsci.driver,
    the tools (`devices`, `elementwise`, `bench`, `selftest`, `tune`) to their API; none imports
    PyOpenCL (the package's error report aside: it names OpenCL's errors)."""
    checked = set()
    for path in (PACKAGE / "cli").glob("*.py"):
        module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        names = _names_used(path)
        assert not names & {"mpi_world", "launched_world", "launched_placement"}, path
        checked.add(module)
        assert not names & {"create_context", "as_compute_context", "select_device",
                            "StopFlag", "World"}, path
        if path.name != "__init__.py":
            assert not {name for name in names if name.split(".")[0] == "pyopencl"}, path
    assert {"oclsci.cli.devices", "oclsci.cli.elementwise", "oclsci.cli.bench",
            "oclsci.cli.selftest", "oclsci.cli.jacobi", "oclsci.cli.stencil",
            "oclsci.cli.tune"} <= checked


def test_the_architecture_check_finds_a_command_that_opens_a_device(tmp_path):
    """The check above sees a device opened through an attribute, and a stop flag imported."""
    path = tmp_path / "command.py"
    path.write_text("from oclsci.runtime import device\n"
                    "from oclsci.runtime.signals import StopFlag\n"
                    "compute = device.create_context(None)\n")
    assert {"create_context", "StopFlag", "oclsci.runtime.signals"} <= _names_used(path)
