"""Checks of the Guix files in guix/ that can run without Guix.

A real Guix evaluates the files in guix/check.sh (run by CI; tests/tools/test_guix_check.py
tests it with planted defects).  These tests are the quick static part:

* every guix/*.scm file reads (all its forms) with Debian's ``guile-3.0``, and with
  the small S-expression reader below;
* every package name used by the manifests and by the package definition exists in
  the package list of Guix's main channel at the pinned commit
  (``guix/package-names.txt``), with a negative test proving the checker catches
  a misspelled name;
* the variants are laid out as docs/guix.md says (one OpenCL implementation each);
* guix/oclsci.scm declares the version of pyproject.toml, a git-filtered checkout
  as source, builds without the test suite or PoCL, and takes NumPy from pyopencl;
* no file names python-numpy or openmpi by specification (the newest of several:
  colliding NumPys, an Open MPI other than mpi4py's);
* guix/channels.scm pins a 40-hex-digit commit with the channel introduction;
* guix/nvidia-icd.sh writes the ICD file for a (fake) host NVIDIA driver.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, tool_missing

ROOT = REPO_ROOT
GUIX_DIR = ROOT / "guix"
SCM_FILES = sorted(GUIX_DIR.glob("*.scm"))

# Base variants: exactly one of them is used, each with its OpenCL implementation.
BASE_VARIANTS = {
    "manifest.scm": {"pocl"},
    "manifest-amd.scm": {"rocm-opencl-runtime"},
    "manifest-nvidia.scm": set(),  # the driver comes from the host
}
# Add-ons, combined with a base variant by repeating -m.
ADD_ONS = {
    "manifest-mpi.scm": {"python-mpi4py"},  # + the openmpi it is built against
    "manifest-dev.scm": {"python-pytest", "python-pytest-xdist", "python-hypothesis"},
}
# Packages that install an ICD in etc/OpenCL/vendors.
ICD_PACKAGES = {"pocl", "rocm-opencl-runtime"}
# What oclsci needs at run time (pyproject.toml's dependencies), Guix names.
RUNTIME = {
    "python",
    "python-pyopencl",
    "python-numpy",
    "python-mako",
    "python-click",
    "python-pillow",
}

# The channel introduction of Guix's main channel (fixed since 2020).
GUIX_INTRODUCTION_COMMIT = "9edb3f66fd807b096b48283debdcddccfea34bad"
GUIX_SIGNER = "BBB02DDF2CEAF6A80D1DE643A2A06DF2A33A54FA"
GUIX_URLS = {
    "https://git.guix.gnu.org/guix.git",
    "https://git.savannah.gnu.org/git/guix.git",
    "https://codeberg.org/guix/guix.git",
}


# --------------------------------------------------------------------------
# A small reader for the Scheme subset used in guix/*.scm
# --------------------------------------------------------------------------


class Sym(str):
    """A Scheme symbol."""

    def __repr__(self) -> str:
        return f"Sym({str(self)!r})"


class Str(str):
    """A Scheme string literal."""

    def __repr__(self) -> str:
        return f"Str({str(self)!r})"


class Keyword(str):
    """A Guile keyword such as #:phases."""


class Char(str):
    """A character literal such as #\\a."""


class SchemeSyntaxError(ValueError):
    pass


_DELIMITERS = set("()[]\";'`,") | set(" \t\n\r\f\v")
_PREFIXES = {
    "'": "quote",
    "`": "quasiquote",
    ",": "unquote",
    ",@": "unquote-splicing",
    "#~": "gexp",
    "#$": "ungexp",
    "#$@": "ungexp-splicing",
    "#+": "ungexp-native",
    "#+@": "ungexp-native-splicing",
}
_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "0": "\0", "\\": "\\", '"': '"'}


def read_scheme(text: str) -> list:
    """Read all forms of ``text``; return them as nested Python lists.

    Handles comments (``;``, ``#| |#``, ``#;``, ``#! !#``), strings, characters,
    keywords, booleans, vectors, quote/quasiquote/unquote and Guix's gexp
    syntax (``#~``, ``#$``, ``#$@``, ``#+``).  Raises SchemeSyntaxError on
    unbalanced parentheses or unterminated strings and comments.
    """
    pos = 0
    n = len(text)

    def line_of(p: int) -> int:
        return text.count("\n", 0, p) + 1

    def skip_atmosphere() -> None:
        nonlocal pos
        while pos < n:
            c = text[pos]
            if c.isspace():
                pos += 1
            elif c == ";":
                end = text.find("\n", pos)
                pos = n if end < 0 else end + 1
            elif text.startswith("#|", pos):
                depth, start = 1, pos
                pos += 2
                while depth:
                    if pos >= n:
                        raise SchemeSyntaxError(f"unterminated #| comment at line {line_of(start)}")
                    if text.startswith("|#", pos):
                        depth, pos = depth - 1, pos + 2
                    elif text.startswith("#|", pos):
                        depth, pos = depth + 1, pos + 2
                    else:
                        pos += 1
            elif text.startswith("#!", pos) and (pos + 2 >= n or text[pos + 2] in " \t\n\r"):
                end = text.find("!#", pos + 2)
                if end < 0:
                    raise SchemeSyntaxError(f"unterminated #! comment at line {line_of(pos)}")
                pos = end + 2
            elif text.startswith("#;", pos):
                pos += 2
                read_form()  # datum comment: read and drop
            else:
                return

    def read_token() -> str:
        nonlocal pos
        start = pos
        while pos < n and text[pos] not in _DELIMITERS:
            pos += 1
        return text[start:pos]

    def read_form():
        nonlocal pos
        skip_atmosphere()
        if pos >= n:
            raise SchemeSyntaxError("unexpected end of file")
        c = text[pos]
        start = pos
        if c in "([":
            close = ")" if c == "(" else "]"
            pos += 1
            items = []
            while True:
                skip_atmosphere()
                if pos >= n:
                    raise SchemeSyntaxError(f"unclosed {c!r} opened at line {line_of(start)}")
                if text[pos] in ")]":
                    if text[pos] != close:
                        raise SchemeSyntaxError(f"mismatched {text[pos]!r} at line {line_of(pos)}")
                    pos += 1
                    return items
                items.append(read_form())
        if c in ")]":
            raise SchemeSyntaxError(f"unexpected {c!r} at line {line_of(pos)}")
        if c == '"':
            pos += 1
            out = []
            while True:
                if pos >= n:
                    raise SchemeSyntaxError(f"unterminated string at line {line_of(start)}")
                ch = text[pos]
                if ch == '"':
                    pos += 1
                    return Str("".join(out))
                if ch == "\\":
                    pos += 1
                    if pos >= n:
                        raise SchemeSyntaxError(f"unterminated string at line {line_of(start)}")
                    esc = text[pos]
                    if esc == "\n":  # line continuation
                        pos += 1
                        while pos < n and text[pos] in " \t":
                            pos += 1
                        continue
                    out.append(_STRING_ESCAPES.get(esc, esc))
                    pos += 1
                    continue
                out.append(ch)
                pos += 1
        for prefix in ("#$@", "#+@", ",@", "#~", "#$", "#+", "'", "`", ","):
            if text.startswith(prefix, pos):
                pos += len(prefix)
                return [Sym(_PREFIXES[prefix]), read_form()]
        if c == "#":
            if text.startswith("#(", pos):
                pos += 1
                return [Sym("vector"), *read_form()]
            if text.startswith("#\\", pos):
                pos += 2
                if pos >= n:
                    raise SchemeSyntaxError("unterminated character literal")
                first = text[pos]
                pos += 1
                rest = read_token() if first not in _DELIMITERS or first.isalpha() else ""
                return Char(first + rest)
            if text.startswith("#:", pos):
                pos += 2
                return Keyword(read_token())
            token = read_token()
            if token in ("#t", "#true"):
                return True
            if token in ("#f", "#false"):
                return False
            raise SchemeSyntaxError(f"unknown # syntax {token!r} at line {line_of(start)}")
        token = read_token()
        if not token:
            raise SchemeSyntaxError(f"unexpected {c!r} at line {line_of(pos)}")
        try:
            return int(token)
        except ValueError:
            pass
        try:
            return float(token)
        except ValueError:
            return Sym(token)

    forms = []
    while True:
        skip_atmosphere()
        if pos >= n:
            return forms
        forms.append(read_form())


def read_scheme_file(path: Path) -> list:
    return read_scheme(path.read_text(encoding="utf-8"))


def walk(form):
    """Yield every list (sub-form) of ``form``, depth first."""
    if isinstance(form, list):
        yield form
        for item in form:
            yield from walk(item)


def head(form) -> str | None:
    return form[0] if isinstance(form, list) and form and isinstance(form[0], Sym) else None


def strings_in(form):
    """All string literals anywhere inside ``form``."""
    if isinstance(form, Str):
        yield str(form)
    elif isinstance(form, list):
        for item in form:
            yield from strings_in(item)


# --------------------------------------------------------------------------
# Package names used by the files
# --------------------------------------------------------------------------

# Procedures whose string arguments are package specifications.
SPEC_PROCEDURES = {
    "specifications->manifest",
    "specifications->packages",
    "specification->package",
    "specification->package+output",
}
# Package record fields that list packages.
INPUT_FIELDS = {"inputs", "native-inputs", "propagated-inputs"}
# Symbols that may appear in an input list without naming a package.
NOT_PACKAGES = {
    "list",
    "append",
    "cons",
    "cons*",
    "map",
    "quote",
    "quasiquote",
    "unquote",
    "unquote-splicing",
    "specification->package",
    "specification->package+output",
    "modify-inputs",
    "prepend",
    "delete",
    "replace",
    "package-inputs",
    "package-native-inputs",
    "package-propagated-inputs",
    "if",
    "and",
    "or",
    "supported-package?",
    "%current-system",
    "%current-target-system",
    "this-package-input",
    "this-package-native-input",
    "string-prefix?",
    "let",
    "propagated-input",
}
# Guix variable names whose package name differs (the common case is equality).
VARIABLE_TO_PACKAGE = {
    "python-wrapper": "python",
    "python-minimal-wrapper": "python-minimal",
    "hwloc-2": "hwloc",
    "openmpi-4": "openmpi",
    "openmpi-5": "openmpi",
}


def spec_to_name(spec: str) -> str:
    """'python-numpy@2.3' -> 'python-numpy'; 'hwloc:lib' -> 'hwloc'."""
    return re.split(r"[@:]", spec, maxsplit=1)[0]


def variable_to_name(variable: str, known: set[str] | None = None) -> str:
    if variable in VARIABLE_TO_PACKAGE:
        return VARIABLE_TO_PACKAGE[variable]
    if known is not None and variable not in known:
        # Versioned variables such as clang-toolchain-18 name package clang-toolchain.
        stripped = re.sub(r"-\d+(\.\d+)*$", "", variable)
        if stripped in known:
            return stripped
    return variable


def _input_symbols(form):
    """Variable names in an input list: (list a b), `((\"x\" ,x)), (list `(,x \"lib\"))."""
    if isinstance(form, Sym):
        if form not in NOT_PACKAGES and not form.startswith("%"):
            yield str(form)
        return
    if not isinstance(form, list) or not form:
        return
    h = head(form)
    if h in SPEC_PROCEDURES or h in ("this-package-input", "this-package-native-input"):
        return  # strings handled elsewhere
    if h == "propagated-input":
        return  # (propagated-input PACKAGE "NAME"): NAME handled elsewhere
    if h == "map" and len(form) >= 2 and form[1] in SPEC_PROCEDURES:
        return
    if h in ("quote", "quasiquote"):
        # Inside a quasiquote only unquoted parts are variables.
        for sub in walk(form[1]):
            if head(sub) == "unquote" and isinstance(sub[1], Sym):
                yield str(sub[1])
        return
    for item in form[1:] if h else form:
        yield from _input_symbols(item)


def package_names(forms, known: set[str] | None = None) -> set[str]:
    """Names of the Guix packages that ``forms`` (a read .scm file) refers to.

    * strings given to specifications->manifest, specification->package, and
      ``(map specification->package '(...))``;
    * variable names in the inputs, native-inputs and propagated-inputs fields of
      ``package`` forms, mapped to package names.
    """
    names: set[str] = set()
    for form in forms:
        for sub in walk(form):
            h = head(sub)
            if h in SPEC_PROCEDURES:
                names.update(spec_to_name(s) for s in strings_in(sub[1:]))
            elif h == "propagated-input" and len(sub) == 3 and isinstance(sub[2], Str):
                names.add(str(sub[2]))  # guix/oclsci.scm: a package that another propagates
            elif h == "map" and len(sub) >= 3 and sub[1] in SPEC_PROCEDURES:
                names.update(spec_to_name(s) for s in strings_in(sub[2:]))
            elif h in INPUT_FIELDS and len(sub) == 2:
                names.update(variable_to_name(v, known) for v in _input_symbols(sub[1]))
    return names


def missing_names(names, known: set[str]) -> list[str]:
    """The names (sorted) that are not package names of the Guix channel."""
    return sorted(set(names) - known)


def package_list_file() -> Path | None:
    candidates = (
        GUIX_DIR / "package-names.txt",
        ROOT.parent / "shared" / "guix" / "package-names.txt",
    )
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def load_package_list(path: Path) -> set[str]:
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.add(line)
    return names


@pytest.fixture(scope="module")
def known_packages() -> set[str]:
    path = package_list_file()
    if path is None:
        pytest.skip(
            "no Guix package list: guix/package-names.txt "
            "(or ../shared/guix/package-names.txt) is missing"
        )
    names = load_package_list(path)
    assert len(names) > 10000, f"{path} looks truncated ({len(names)} names)"
    return names


def scm(name: str) -> list:
    path = GUIX_DIR / name
    assert path.is_file(), f"{path} is missing"
    return read_scheme_file(path)


# --------------------------------------------------------------------------
# Reading the files
# --------------------------------------------------------------------------


def test_scm_files_exist():
    names = {p.name for p in SCM_FILES}
    expected = {"channels.scm", "oclsci.scm", *BASE_VARIANTS, *ADD_ONS}
    assert expected <= names, f"missing: {sorted(expected - names)}"


def test_no_guix_scm_at_top_level():
    # The package lives in guix/oclsci.scm (`guix shell -f guix/oclsci.scm`).
    assert not (ROOT / "guix.scm").exists()
    assert not (ROOT / "manifest.scm").exists()


GUILE_READ_ALL = r"""
;; Guix's (guix gexp) module adds the #~ #$ #$@ #+ reader syntax; Guix itself is
;; not installed here, so register equivalent reader extensions, then read all
;; forms of the file given on the command line.
(define (ungexp-reader plain splicing)
  (lambda (chr port)
    (if (eqv? (peek-char port) #\@)
        (begin (read-char port) (list splicing (read port)))
        (list plain (read port)))))
(read-hash-extend #\~ (lambda (chr port) (list 'gexp (read port))))
(read-hash-extend #\$ (ungexp-reader 'ungexp 'ungexp-splicing))
(read-hash-extend #\+ (ungexp-reader 'ungexp-native 'ungexp-native-splicing))
(define file (cadr (command-line)))
(call-with-input-file file
  (lambda (port)
    (let loop ((count 0))
      (let ((form (read port)))
        (if (eof-object? form)
            (begin (display count) (newline))
            (loop (+ count 1)))))))
"""


def guile_executable() -> str | None:
    return shutil.which("guile-3.0") or shutil.which("guile")


@pytest.mark.parametrize("path", SCM_FILES, ids=lambda p: p.name)
def test_guile_reads_scm(path, tmp_path):
    guile = guile_executable()
    if guile is None:
        tool_missing("guile-3.0 is not installed (apt-get install guile-3.0)")
    script = tmp_path / "read-all.scm"
    script.write_text(GUILE_READ_ALL)
    proc = subprocess.run(
        [guile, "--no-auto-compile", "-s", str(script), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GUILE_AUTO_COMPILE": "0"},
    )
    assert proc.returncode == 0, f"guile could not read {path.name}:\n{proc.stderr}"
    count = int(proc.stdout.strip().splitlines()[-1])
    assert count == len(read_scheme_file(path)), "guile and the Python reader disagree"
    assert count >= 1


def test_guile_reader_rejects_broken_file(tmp_path):
    """The Guile check is real: an unbalanced file fails."""
    guile = guile_executable()
    if guile is None:
        tool_missing("guile-3.0 is not installed (apt-get install guile-3.0)")
    script = tmp_path / "read-all.scm"
    script.write_text(GUILE_READ_ALL)
    broken = tmp_path / "broken.scm"
    broken.write_text('(specifications->manifest \'("python" "pocl")\n')
    proc = subprocess.run(
        [guile, "--no-auto-compile", "-s", str(script), str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0


@pytest.mark.parametrize("path", SCM_FILES, ids=lambda p: p.name)
def test_python_reader_reads_scm(path):
    forms = read_scheme_file(path)
    assert forms


def test_python_reader():
    forms = read_scheme(
        ';; comment\n#| block #| nested |# |#\n#;(ignored "x")\n'
        '(a "s\\"t" #:kw #t #\\( #~(f #$x #$@y #+z) \'(b) `(,c ,@d) [e] #(1 2))'
    )
    assert forms == [
        [
            Sym("a"),
            Str('s"t'),
            Keyword("kw"),
            True,
            Char("("),
            [
                Sym("gexp"),
                [
                    Sym("f"),
                    [Sym("ungexp"), Sym("x")],
                    [Sym("ungexp-splicing"), Sym("y")],
                    [Sym("ungexp-native"), Sym("z")],
                ],
            ],
            [Sym("quote"), [Sym("b")]],
            [Sym("quasiquote"), [[Sym("unquote"), Sym("c")], [Sym("unquote-splicing"), Sym("d")]]],
            [Sym("e")],
            [Sym("vector"), 1, 2],
        ]
    ]
    types = [type(x) for x in forms[0][:5]]
    assert types == [Sym, Str, Keyword, bool, Char]
    for bad in ("(a (b)", "(a))", '(a "b)', "(a]", "#| open"):
        with pytest.raises(SchemeSyntaxError):
            read_scheme(bad)


# --------------------------------------------------------------------------
# Package names
# --------------------------------------------------------------------------


def test_extraction_of_names():
    manifest = read_scheme(
        """(use-modules (gnu packages))
           (concatenate-manifests
             (list (specifications->manifest '("python" "python-numpy@2.3" "hwloc:lib"))
                   (packages->manifest (list (specification->package "pocl")))))"""
    )
    assert package_names(manifest) == {"python", "python-numpy", "hwloc", "pocl"}
    package = read_scheme(
        """(package (name "x") (version "1")
             (native-inputs (list python-hatchling `(,hwloc-2 "lib") clang-toolchain-18))
             (inputs `(("ocl-icd" ,ocl-icd)))
             (propagated-inputs (map specification->package '("python-mako"))))"""
    )
    known = {"python-hatchling", "hwloc", "clang-toolchain", "ocl-icd", "python-mako"}
    assert package_names(package, known) == known


def test_checker_rejects_made_up_name(known_packages):
    """A misspelled name must be reported (the checks below are not vacuous)."""
    made_up = "python-pyopencll"
    assert made_up not in known_packages
    assert missing_names({"python-pyopencl", made_up}, known_packages) == [made_up]
    # End to end: a manifest with a typo fails the same check as the real files.
    forms = read_scheme(f'(specifications->manifest \'("python-numpy" "{made_up}" "pocl"))')
    assert missing_names(package_names(forms, known_packages), known_packages) == [made_up]
    forms = read_scheme('(package (name "x") (inputs (list python-numpy rocm-opencl-runtme)))')
    names = package_names(forms, known_packages)
    assert missing_names(names, known_packages) == ["rocm-opencl-runtme"]


def test_checker_without_package_list():
    """The checker itself works on a given list even where the real list is absent."""
    assert missing_names({"pocl", "pocll"}, {"pocl", "python"}) == ["pocll"]


@pytest.mark.parametrize("name", [*BASE_VARIANTS, *ADD_ONS, "oclsci.scm"], ids=lambda n: n)
def test_package_names_exist(name, known_packages):
    names = package_names(scm(name), known_packages)
    assert names, f"no package names found in guix/{name}"
    missing = missing_names(names, known_packages)
    assert not missing, f"guix/{name} uses names that are not in Guix's package list: {missing}"


def test_package_list_matches_pin():
    """guix/package-names.txt must be the list of the pinned commit."""
    path = GUIX_DIR / "package-names.txt"
    if not path.is_file():
        pytest.skip("guix/package-names.txt is not in the repository")
    header = "\n".join(line for line in path.read_text().splitlines()[:5] if line.startswith("#"))
    assert channel_fields()["commit"] in header, "package-names.txt is for another Guix commit"


# --------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BASE_VARIANTS), ids=lambda n: n)
def test_base_variant_contents(name, known_packages):
    forms = scm(name)
    names = package_names(forms, known_packages)
    assert names & ICD_PACKAGES == BASE_VARIANTS[name], (
        f"guix/{name} must carry exactly {sorted(BASE_VARIANTS[name]) or 'no'} OpenCL ICD"
    )
    # The `oclsci' command: the package of guix/oclsci.scm is loaded, and what it needs at
    # run time is its own propagated inputs (one NumPy), plus the `python' variable.
    loads = [s for sub in walk(forms) if head(sub) == "load" for s in strings_in(sub)]
    assert any(s.endswith("oclsci.scm") for s in loads), f"guix/{name} does not load oclsci.scm"
    assert [Sym("package-propagated-inputs"), Sym("%oclsci")] in list(walk(forms))
    assert [Sym("list"), Sym("%oclsci"), Sym("python")] in list(walk(forms))


def test_numpy_and_openmpi_not_by_name():
    """"python-numpy" and "openmpi" name the newest of several packages: a NumPy that
    collides with python-pyopencl's, an Open MPI other than python-mpi4py's."""
    for path in SCM_FILES:
        specs = {
            spec_to_name(s)
            for form in read_scheme_file(path)
            for sub in walk(form)
            if head(sub) in SPEC_PROCEDURES or (head(sub) == "map" and sub[1] in SPEC_PROCEDURES)
            for s in strings_in(sub)
        }
        assert not specs & {"python-numpy", "openmpi"}, f"guix/{path.name}: {specs}"
    forms = scm("manifest-mpi.scm")
    assert [Sym("package-inputs"), Sym("python-mpi4py")] in list(walk(forms))
    assert Str("openmpi") in [x for sub in walk(forms) for x in sub]


@pytest.mark.parametrize("name", list(ADD_ONS), ids=lambda n: n)
def test_add_on_contents(name, known_packages):
    names = package_names(scm(name), known_packages)
    assert ADD_ONS[name] <= names
    assert not names & ICD_PACKAGES, f"add-on guix/{name} must not bring an OpenCL implementation"


# --------------------------------------------------------------------------
# The package
# --------------------------------------------------------------------------


def pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)["project"]["version"]
    # Python 3.10: no tomllib; find `version` in the [project] table.
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    assert section, "no [project] table in pyproject.toml"
    match = re.search(r'^version\s*=\s*["\']([^"\']+)["\']', section.group(1), re.M)
    assert match, "no version in [project]"
    return match.group(1)


def package_form(forms) -> list:
    packages = [sub for form in forms for sub in walk(form) if head(sub) == "package"]
    assert len(packages) == 1, "guix/oclsci.scm must define exactly one package"
    return packages[0]


def field(package: list, name: str):
    for item in package[1:]:
        if head(item) == name:
            return item[1] if len(item) == 2 else item[1:]
    raise AssertionError(f"package has no {name} field")


def keyword_argument(arguments, keyword: str):
    """The value after #:KEYWORD in an arguments list such as (list #:k v ...)."""
    items = list(arguments)
    if head(items) in ("list", "quasiquote", "quote"):
        items = items[1] if head(items) != "list" else items[1:]
    for i, item in enumerate(items[:-1]):
        if isinstance(item, Keyword) and item == keyword:
            value = items[i + 1]
            # Unwrap #~(...) and '(...) to the expression inside.
            while head(value) in ("gexp", "quote", "quasiquote"):
                value = value[1]
            return value
    raise AssertionError(f"no #:{keyword} argument")


def definitions(forms) -> dict:
    return {
        str(f[1]): f[2]
        for f in forms
        if head(f) in ("define", "define-public") and len(f) == 3 and isinstance(f[1], Sym)
    }


def test_package_version_matches_pyproject():
    forms = scm("oclsci.scm")
    version = field(package_form(forms), "version")
    if isinstance(version, Sym):  # (version %oclsci-version)
        version = definitions(forms).get(str(version))
    assert isinstance(version, Str), "version: a string literal, or a variable bound to one"
    assert version == pyproject_version()


def test_package_definition():
    forms = scm("oclsci.scm")
    pkg = package_form(forms)
    assert field(pkg, "name") == "oclsci"
    assert field(pkg, "build-system") == "pyproject-build-system"
    # Source: the checkout, filtered by git.
    source = field(pkg, "source")
    assert head(source) == "local-file"
    literals = [s for s in source if isinstance(s, Str)]
    assert ".." in literals, "local-file must name the repository root"
    assert Keyword("recursive?") in source and Keyword("select?") in source
    assert any(head(sub) == "git-predicate" for f in forms for sub in walk(f))
    # The last form is the package, for `guix shell -f' / `guix build -f'.
    bound_to_pkg = [name for name, value in definitions(forms).items() if value is pkg]
    assert bound_to_pkg and forms[-1] == Sym(bound_to_pkg[0]) and isinstance(forms[-1], Sym)
    # Build and test inputs.
    native = package_names([field(pkg, "native-inputs")])
    assert native == {"python-hatchling"}  # no pocl (nor LLVM) in any variant's closure
    propagated = package_names([field(pkg, "propagated-inputs")])
    assert RUNTIME - {"python"} <= propagated
    # The package leaves the choice of OpenCL implementation to the user.
    assert not propagated & ICD_PACKAGES


def test_package_builds_without_tests():
    """The suite needs an OpenCL device: it runs in CI and under manifest-dev.scm, not in
    every build of the package (each job's profile rebuilds it when the checkout changes)."""
    pkg = package_form(scm("oclsci.scm"))
    assert keyword_argument(field(pkg, "arguments"), "tests?") is False
    assert isinstance(field(pkg, "home-page"), (Str, bool))


# --------------------------------------------------------------------------
# The channel pin
# --------------------------------------------------------------------------


def channel_fields() -> dict:
    forms = scm("channels.scm")
    channels = [sub for f in forms for sub in walk(f) if head(sub) == "channel"]
    guix = [c for c in channels if [Sym("name"), [Sym("quote"), Sym("guix")]] in c]
    assert len(guix) == 1, "guix/channels.scm must pin the `guix' channel once"
    fields = {str(item[0]): item[1:] for item in guix[0][1:] if head(item)}
    intro = fields["introduction"][0]
    assert head(intro) == "make-channel-introduction"
    fingerprint = [sub for sub in walk(intro) if head(sub) == "openpgp-fingerprint"][0][1]
    return {
        "url": fields["url"][0],
        "branch": fields.get("branch", [None])[0],
        "commit": fields["commit"][0],
        "intro_commit": intro[1],
        "fingerprint": fingerprint,
    }


def test_channel_pin():
    pin = channel_fields()
    assert re.fullmatch(r"[0-9a-f]{40}", pin["commit"]), pin["commit"]
    assert pin["url"] in GUIX_URLS
    assert pin["intro_commit"] == GUIX_INTRODUCTION_COMMIT
    assert pin["fingerprint"].replace(" ", "") == GUIX_SIGNER


def test_channel_pin_matches_shared_facts():
    readme = ROOT.parent / "shared" / "guix" / "README.md"
    if not readme.is_file():
        pytest.skip("../shared/guix/README.md is not available on this machine")
    assert channel_fields()["commit"] in readme.read_text()


# --------------------------------------------------------------------------
# NVIDIA helper and documentation
# --------------------------------------------------------------------------


def test_nvidia_icd_script(tmp_path):
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no POSIX shell")
    host = tmp_path / "host-lib64"
    host.mkdir()
    libs = ("libnvidia-opencl.so.1", "libcuda.so.1", "libnvidia-ptxjitcompiler.so.1", "libc.so.6")
    for lib in libs:
        (host / lib).write_bytes(b"")
    out = tmp_path / "icd"
    env = {**os.environ, "NVIDIA_LIBDIR": str(host)}
    proc = subprocess.run(
        [sh, str(GUIX_DIR / "nvidia-icd.sh"), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    icd = (out / "vendors" / "nvidia.icd").read_text().strip()
    assert icd == str(host / "libnvidia-opencl.so.1")
    linked = sorted(p.name for p in (out / "lib").iterdir())
    assert linked == ["libcuda.so.1", "libnvidia-opencl.so.1", "libnvidia-ptxjitcompiler.so.1"]
    exports = dict(re.findall(r"^export (\w+)='([^']*)'$", proc.stdout, re.M))
    assert exports == {"OCL_ICD_VENDORS": str(out / "vendors"), "LD_LIBRARY_PATH": str(out / "lib")}
    # Without a driver it fails loudly.
    env["NVIDIA_LIBDIR"] = str(tmp_path / "nothing-here")
    proc = subprocess.run(
        [sh, str(GUIX_DIR / "nvidia-icd.sh"), str(tmp_path / "icd2")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0 and "libnvidia-opencl.so.1" in proc.stderr


def test_docs_cover_the_files():
    doc = ROOT / "docs" / "guix.md"
    assert doc.is_file(), "docs/guix.md is missing"
    text = doc.read_text(encoding="utf-8")
    for path in SCM_FILES:
        assert f"guix/{path.name}" in text, f"docs/guix.md does not mention guix/{path.name}"
    assert "guix/nvidia-icd.sh" in text
    assert channel_fields()["commit"] in text
    assert "time-machine -C guix/channels.scm" in text
    assert "guix describe -f channels" in text
