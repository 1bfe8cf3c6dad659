"""Go's time.Duration formatting, for messages upstream writes with %v."""

from __future__ import annotations


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
