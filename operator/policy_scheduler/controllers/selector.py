"""The --profile-selector flag: which SchedulingProfiles this operator serves (label selector).

Supports the equality-based syntax of `kubectl -l`: `k=v`, `k==v`, `k!=v`, `k`, `!k`, joined by
commas. Useful to run two operators side by side (canary, sharding, isolated tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Matcher = Callable[[Mapping[str, str]], bool]


def parse_selector(text: str) -> Matcher:
    checks: list[Matcher] = []
    for raw in filter(None, (part.strip() for part in text.split(","))):
        checks.append(_requirement(raw))
    return lambda labels: all(check(labels) for check in checks)


def _requirement(raw: str) -> Matcher:
    if "!=" in raw:
        key, value = (s.strip() for s in raw.split("!=", 1))
        return lambda labels: labels.get(key) != value
    if "=" in raw:
        key, value = (s.strip() for s in raw.replace("==", "=").split("=", 1))
        return lambda labels: labels.get(key) == value
    if raw.startswith("!"):
        key = raw[1:].strip()
        return lambda labels: key not in labels
    return lambda labels: raw in labels
