"""The kernel module: template rendering, build errors, memoisation, shipped templates."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT

from oclsci.errors import KernelBuildError
from oclsci.runtime import programs

ROOT = REPO_ROOT


@pytest.mark.parametrize("dtype, ctype", [(np.float32, "float"), (np.float64, "double")])
def test_render_typedefs_real_type_and_pragma(dtype, ctype):
    source = programs.render("jacobi/coalesced", dtype=dtype, rows_per_item=2)
    assert f"typedef {ctype} real_t;" in source
    assert ("cl_khr_fp64" in source) == (dtype == np.float64)
    assert "__kernel void jacobi_coalesced(" in source
    assert "${" not in source


def test_render_missing_parameter_names_it():
    with pytest.raises(KernelBuildError, match="jacobi/coalesced"):
        programs.render("jacobi/coalesced", dtype=np.float32)


def test_unknown_template_is_a_build_error():
    with pytest.raises(KernelBuildError, match="no_such_kernel"):
        programs.render("no_such_kernel", dtype=np.float32)


def test_every_template_is_named_after_its_kernel():
    names = programs.template_names()
    assert {"jacobi/seed", "jacobi/coalesced", "jacobi/blocked"} <= set(names)
    for name in names:
        text = (programs.template_dir() / f"{name}.cl.mako").read_text()
        assert '<%inherit file="/base.cl.mako"/>' in text
        if name == "elementwise":
            continue  # its kernels take the name the user gives (see oclsci.elementwise)
        kernel = programs.kernel_name(name)
        # The kernel named after the template, or several whose names all begin with it.
        defined = re.findall(r"__kernel\s+(?:__attribute__\(\(.*?\)\)\s+)?void\s+(\w+)\(",
                             text, re.DOTALL)
        if not defined:  # a signature the template's Python block builds ("void name(...")
            defined = re.findall(r'"void\s+(\w+)\(', text)
        assert defined and all(d == kernel or d.startswith(kernel + "_") for d in defined), \
            f"kernels/{name}.cl.mako must define kernel {kernel} (or {kernel}_*): {defined}"


def test_no_build_option_flushes_subnormals():
    """oclsci builds keep subnormal numbers, as NumPy does: never ``-cl-denorms-are-zero``
    (with it PoCL and Intel's CPU runtime flush them to zero); fast math only where a user
    asks for it (``oclsci lombscargle --fast-math``, inexact anyway). Every build option
    that oclsci's code holds as a string is one of these."""
    named: dict[str, set[str]] = {}
    for path in (ROOT / "oclsci").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and str(node.value).startswith("-cl-"):
                named.setdefault(node.value, set()).add(path.relative_to(ROOT).as_posix())
    assert set(named) <= {"-cl-fp32-correctly-rounded-divide-sqrt", "-cl-nv-verbose",
                          "-cl-fast-relaxed-math"}, named
    assert named["-cl-fast-relaxed-math"] <= {"oclsci/lombscargle/periodogram.py",
                                              "oclsci/bench/lombscargle.py"}


def test_build_error_names_kernel_options_log_and_saved_source(any_compute, tmp_path,
                                                               monkeypatch):
    broken = tmp_path / "broken_kernel.cl.mako"
    broken.write_text('<%inherit file="base.cl.mako"/>\n'
                      "__kernel void broken_kernel(__global real_t *x) { x[0] = oops; }\n")
    monkeypatch.setattr(programs, "_lookup", lambda: _lookup_with(tmp_path))
    with pytest.raises(KernelBuildError) as caught:
        programs.build_program(any_compute, "broken_kernel", ("-cl-fast-relaxed-math",),
                               dtype=np.float32)
    error = caught.value
    message = str(error)
    assert "'broken_kernel'" in message and "dtype=float32" in message
    assert "-cl-fast-relaxed-math" in message and "\n" not in message
    assert "oops" in error.build_log
    assert Path(error.source_path).read_text().count("oops") == 1
    assert error.source_path in message
    assert error.log_path in message and "oops" in Path(error.log_path).read_text()


def _lookup_with(extra_dir):
    from mako.lookup import TemplateLookup

    return TemplateLookup(directories=[str(extra_dir), str(programs.template_dir())],
                          strict_undefined=True)


def test_programs_and_kernels_are_memoised(any_compute):
    params = dict(dtype=np.float32, rows_per_item=3)
    first = programs.build_program(any_compute, "jacobi/coalesced", **params)
    builds = getattr(any_compute, "build_count", 0)
    again = programs.build_program(any_compute, "jacobi/coalesced", **params)
    assert again is first and any_compute.build_count == builds
    kernel = programs.get_kernel(any_compute, "jacobi/coalesced", **params)
    assert programs.get_kernel(any_compute, "jacobi/coalesced", **params) is kernel
    assert any_compute.build_count == builds
    other = programs.build_program(any_compute, "jacobi/coalesced", dtype=np.float32,
                                   rows_per_item=5)
    assert other is not first and any_compute.build_count == builds + 1


def test_dump_source_environment_variable(any_compute, tmp_path, monkeypatch):
    monkeypatch.setenv("OCLSCI_DUMP_SOURCE", str(tmp_path))
    programs.build_program(any_compute, "jacobi/seed", dtype=np.float32, dump_probe=1)
    dumped = list(tmp_path.glob("jacobi_seed-*.cl"))
    assert len(dumped) == 1 and "__kernel void jacobi_seed" in dumped[0].read_text()


@pytest.mark.slow
def test_wheel_ships_every_template(tmp_path):
    """A non-editable install finds its kernels: the wheel holds oclsci/kernels/*.cl.mako."""
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                             "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {result.stderr.strip().splitlines()[-1:]}")
    wheel = next(tmp_path.glob("oclsci-*.whl"))
    shipped = {Path(name).name for name in zipfile.ZipFile(wheel).namelist()
               if name.startswith("oclsci/kernels/")}
    expected = {path.name for path in (ROOT / "kernels").glob("*.cl.mako")}
    assert expected and expected <= shipped


def test_installed_package_finds_templates():
    """Whatever is imported (site-packages in CI) resolves its own templates."""
    assert (programs.template_dir() / "base.cl.mako").is_file()


# --------------------------------------------------------------------------------------------
# Compiled templates kept between processes


@pytest.fixture
def fresh_lookup(tmp_path, monkeypatch):
    """Template lookups made anew under a cache home of this test's own (and again after)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    programs._lookup.cache_clear()
    yield tmp_path / "cache" / "oclsci" / "mako"
    programs._lookup.cache_clear()


SEED = {"template": "jacobi/coalesced", "dtype": np.float32, "rows_per_item": 2}


def _render_seed() -> str:
    params = dict(SEED)
    return programs.render(params.pop("template"), **params)


def test_compiled_templates_are_kept_and_render_the_same(fresh_lookup):
    source = _render_seed()
    kept = list(fresh_lookup.rglob("*.py"))
    assert {p.name for p in kept} >= {"coalesced.cl.mako.py", "base.cl.mako.py"}, kept
    written = {path: path.stat().st_mtime_ns for path in kept}
    programs._lookup.cache_clear()  # as in a new process: read back, not compiled again
    assert _render_seed() == source
    assert {path: path.stat().st_mtime_ns for path in kept} == written


def test_a_truncated_compiled_template_is_compiled_again(fresh_lookup):
    source = _render_seed()
    [module] = fresh_lookup.rglob("coalesced.cl.mako.py")
    text = module.read_bytes()
    module.write_bytes(text[: len(text) // 2])  # as a full disk may have left it
    programs._lookup.cache_clear()
    assert _render_seed() == source  # rendered in memory, the broken module deleted
    programs._lookup.cache_clear()
    assert _render_seed() == source
    kept = module.read_bytes()  # kept whole again (its timestamp differs)
    compile(kept, str(module), "exec")
    assert kept.rstrip().endswith(b'__M_END_METADATA\n"""') and text.startswith(kept[:200])
    assert not list(fresh_lookup.rglob("*.tmp"))


def test_another_version_of_the_templates_gets_another_folder(fresh_lookup, tmp_path,
                                                              monkeypatch):
    copy = tmp_path / "kernels"
    copy.mkdir()
    for path in programs.template_dir().rglob("*.cl.mako"):
        target = copy / path.relative_to(programs.template_dir())
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    monkeypatch.setattr(programs, "template_dir", lambda: copy)
    before = programs.compiled_templates_dir()
    assert "__kernel void jacobi_coalesced(" in _render_seed()
    edited = copy / "jacobi" / "coalesced.cl.mako"
    edited.write_text(edited.read_text().replace("__kernel void", "__kernel  void", 1))
    programs._lookup.cache_clear()
    assert programs.compiled_templates_dir() != before
    assert "__kernel  void jacobi_coalesced(" in _render_seed()


def test_unwritable_cache_renders_in_memory(fresh_lookup, tmp_path, monkeypatch):
    kept = _render_seed()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    programs._lookup.cache_clear()
    assert programs.compiled_templates_dir() is None
    assert _render_seed() == kept


def test_a_failed_write_of_a_compiled_template_renders_in_memory(fresh_lookup, monkeypatch):
    from mako.lookup import TemplateLookup

    real = TemplateLookup.get_template

    def full_disk(self, uri):
        if self.module_directory:
            raise OSError(28, "No space left on device")
        return real(self, uri)

    monkeypatch.setattr(TemplateLookup, "get_template", full_disk)
    assert "__kernel void jacobi_coalesced(" in _render_seed()
