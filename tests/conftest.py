"""Fixtures shared by the unit tests; builders live in tests/builders.py, the clock in tests/fakeclock.py."""

from __future__ import annotations

import pytest

from tests.fakeclock import FakeClock


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
