"""Fixtures shared by the unit tests; builders live in tests/builders.py, the clock in tests/fakeclock.py.

POLICY_SCHEDULER_TEST_KUBERNETES_VERSION=v1.35 (or v1.36) makes the core's default release that
one for the whole run: tests that name no release then decide as it does (the regression check
of docs/parity.md runs the v1.35-era tests this way).
"""

from __future__ import annotations

import os

import pytest

from policy_scheduler.scheduler.versioning import features
from policy_scheduler.scheduler.versioning.version import parse_supported
from tests.fakeclock import FakeClock

DEFAULT_RELEASE_ENV = "POLICY_SCHEDULER_TEST_KUBERNETES_VERSION"


def pytest_configure(config: pytest.Config) -> None:
    release = os.environ.get(DEFAULT_RELEASE_ENV)
    if release:
        features.DEFAULT_VERSION = parse_supported(release)


def pytest_report_header(config: pytest.Config) -> str:
    return f"default Kubernetes release of the core: {features.DEFAULT_VERSION}"


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
