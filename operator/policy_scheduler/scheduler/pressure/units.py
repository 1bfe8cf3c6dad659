"""Amounts of a signal's resource as people read them."""

from __future__ import annotations

from policy_scheduler.scheduler.pressure.signals import EPHEMERAL_STORAGE, MEMORY, RESOURCE_OF

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def amount(value: int | None, signal: str) -> str:
    """Bytes in the largest binary unit that shows them exactly with at most one decimal
    (2.5Gi, 1524Mi), else in bytes; counts as they are; "-" without data."""
    if value is None:
        return "-"
    if RESOURCE_OF.get(signal) not in (MEMORY, EPHEMERAL_STORAGE):
        return str(value)
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    for suffix, unit in _BINARY:
        if magnitude >= unit and (magnitude * 10) % unit == 0:
            tenths = magnitude * 10 // unit
            text = str(tenths // 10) if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}"
            return f"{sign}{text}{suffix}"
    return f"{sign}{magnitude}"
