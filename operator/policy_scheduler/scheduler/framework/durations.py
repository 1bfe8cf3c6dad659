"""Go's time.Duration: formatting, for messages upstream writes with %v, and parsing, for
config fields and flags upstream takes as durations."""

from __future__ import annotations

import re


def go_duration(seconds: float) -> str:
    """time.Duration.String(), for messages upstream formats with %v (e.g. "50ms", "1m30s")."""
    ns = round(seconds * 1e9)
    sign, u = ("-" if ns < 0 else ""), abs(ns)

    def frac(value: int, digits: int) -> str:
        whole, rest = divmod(value, 10**digits)
        tail = str(rest).rjust(digits, "0").rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if u == 0:
        return "0s"
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{frac(u, 3)}µs"
    if u < 1_000_000_000:
        return f"{sign}{frac(u, 6)}ms"
    secs = u // 1_000_000_000
    text = frac(u % 60_000_000_000, 9) + "s"
    minutes = secs // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """time.ParseDuration (metav1.Duration's JSON form), in seconds."""
    sign, body = (-1.0, text[1:]) if text.startswith("-") else (1.0, text.removeprefix("+"))
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(body):
        m = _PART.match(body, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not body:
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total
