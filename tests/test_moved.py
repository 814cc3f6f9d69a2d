"""The module names of oclsci 0.1 still import, warn, and are the new modules themselves."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from oclsci._moved import MOVED

PACKAGE = Path(__file__).resolve().parent.parent / "oclsci"


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_old_name_warns_and_gives_the_new_module(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_from_import_of_an_old_name_still_works():
    sys.modules.pop("oclsci.jacobi_reference", None)
    with pytest.warns(DeprecationWarning):
        from oclsci.jacobi_reference import jacobi_numpy
    from oclsci.jacobi.reference import jacobi_numpy as current

    assert jacobi_numpy is current


def test_the_package_itself_uses_no_old_name():
    pattern = re.compile(r"^\s*(from|import)\s+(" + "|".join(map(re.escape, MOVED)) + r")\b",
                         re.M)
    offenders = [f"{path.relative_to(PACKAGE.parent)}: {match.group(0).strip()}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path.name != "_moved.py"
                 for match in pattern.finditer(path.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_unknown_modules_are_not_claimed():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("oclsci.no_such_module")
