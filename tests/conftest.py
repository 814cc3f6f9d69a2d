"""Shared fixtures: tests run on every available OpenCL device (PoCL in CI).

Set OCLSCI_TEST_DEVICES to a comma-separated list of SPECs to choose the devices; by default
every device of every platform except Oclgrind's simulator (whose tests are marked
``oclgrind`` and pick it explicitly).
"""

from __future__ import annotations

import os

import pytest

from oclsci.errors import NoPlatformError
from oclsci.runtime.device import get_platforms


def _device_specs() -> list[str]:
    chosen = os.environ.get("OCLSCI_TEST_DEVICES")
    if chosen:
        return [spec.strip() for spec in chosen.split(",") if spec.strip()]
    try:
        platforms = get_platforms()
    except NoPlatformError:
        return []
    return [f"{p}:{d}" for p, platform in enumerate(platforms)
            if "oclgrind" not in platform.name.lower()
            for d, _ in enumerate(platform.get_devices())]


DEVICE_SPECS = _device_specs()


@pytest.fixture(params=DEVICE_SPECS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no OpenCL device: pip install 'oclsci[pocl]'"))])
def compute(request):
    """A ComputeContext for each test device in turn."""
    from oclsci.runtime.device import create_context

    return create_context(request.param)


@pytest.fixture
def any_compute():
    """A ComputeContext on the first test device (for tests that need just one device)."""
    from oclsci.runtime.device import create_context

    if not DEVICE_SPECS:
        pytest.skip("no OpenCL device: pip install 'oclsci[pocl]'")
    return create_context(DEVICE_SPECS[0])
