"""One retry policy for every API call: exponential backoff with full jitter and a cap,
`Retry-After` honoured on 429 and 5xx, bounded by attempts or a deadline.

Only answers that a later identical request may get past are retried: no answer at all
(status 0), 429 and 5xx. A 4xx such as 400, 403, 404, 409 or 422 is final: 404 and 409 are
outcomes the caller acts on, the others will not change by asking again.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime

log = logging.getLogger(__name__)


def retryable(status: int) -> bool:
    """No answer (0), throttled (429) or server-side trouble (5xx)."""
    return status in (0, 429) or status >= 500


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header: delay-seconds or an HTTP-date (RFC 9110).
    `now` is unix time, for the date form. None when absent or unparsable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Delays initial·factor^n capped at `cap`, each drawn uniformly from [0, that] (full
    jitter: many clients retrying after one outage spread out instead of returning together)."""

    initial: float = 0.5
    factor: float = 2.0
    cap: float = 30.0
    max_attempts: int | None = 5  # None: unbounded (then `deadline`, if any, bounds it)
    deadline: float | None = None  # seconds from the first attempt
    # A server asking for a longer wait than this ends the retries: the caller gets the answer
    # (with its retry_after) and decides, rather than one call sleeping for minutes.
    max_retry_after: float | None = None
    # The share of each delay never jittered away: 0 is full jitter; 0.5 with `initial` = 2d
    # gives client-go's wait.Backoff with Jitter 1.0, delays in [d, 2d) (the reflector's).
    min_share: float = 0.0

    def ceiling(self, retries: int) -> float:
        """The upper bound of the delay before retry number `retries` + 1."""
        return min(self.cap, self.initial * self.factor**retries)


@dataclass(slots=True)
class Backoff:
    """The delays of one RetryPolicy, for loops that retry forever and reset on success
    (informers); `with_retries` uses it for bounded calls."""

    policy: RetryPolicy = field(default_factory=RetryPolicy)
    rng: Callable[[], float] = field(default=random.random, repr=False)
    attempts: int = 0

    def next(self, retry_after: float | None = None) -> float:
        """The next delay; never shorter than a server's Retry-After."""
        share = self.policy.min_share
        delay = self.policy.ceiling(self.attempts) * (share + (1.0 - share) * self.rng())
        self.attempts += 1
        return delay if retry_after is None else max(delay, retry_after)

    def reset(self) -> None:
        self.attempts = 0


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer as the retry loop sees it."""

    status: int
    body: bytes
    retry_after: float | None = None  # seconds, from the Retry-After header


Sleep = Callable[[float], Awaitable[None]]


async def with_retries(
    call: Callable[[], Awaitable[Answer]],
    policy: RetryPolicy,
    *,
    connection_errors: tuple[type[BaseException], ...] = (),
    final: Callable[[Answer], bool] = lambda _: False,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: Callable[[], float] = random.random,
    what: str = "",
) -> Answer:
    """Call until the answer is not worth retrying, or attempts or the deadline run out; the
    last answer is returned whatever it is. A connection error counts as status 0 and is
    raised again if it is the last thing that happened. `final` marks retryable-looking answers
    that are outcomes for the caller (a 429 from a disruption budget is no throttling)."""
    backoff = Backoff(policy, rng)
    start = clock()
    attempt = 0
    while True:
        attempt += 1
        error: BaseException | None = None
        try:
            answer = await call()
        except connection_errors as exc:
            error, answer = exc, Answer(0, b"")
        if not retryable(answer.status) or final(answer):
            return answer
        # Retry-After is honoured on 429 and on 5xx alike (503 often carries it).
        delay = backoff.next(answer.retry_after)
        out_of_attempts = policy.max_attempts is not None and attempt >= policy.max_attempts
        out_of_time = policy.deadline is not None and clock() - start + delay > policy.deadline
        too_long = (
            policy.max_retry_after is not None
            and answer.retry_after is not None
            and answer.retry_after > policy.max_retry_after
        )
        if out_of_attempts or out_of_time or too_long:
            if error is not None:
                raise error
            return answer
        log.debug("retrying", extra={"call": what, "status": answer.status, "retry_in": round(delay, 2)})
        await sleep(delay)
