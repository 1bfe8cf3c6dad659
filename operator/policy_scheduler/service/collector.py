"""The cyclic garbage collector around start-up.

Importing the operator and decoding the first lists of a big cluster create millions of objects
that live as long as the process. With the collector on, they are scanned again and again while
they are being created. So the start-up turns the collector off before its imports (`pause`)
and back on once the informers have synced (`resume`), freezing everything made so far out of
its generations: later collections then never rescan it. If the first sync never comes (API
server unreachable), a deadline resumes it anyway, so a long outage cannot pile up cyclic
garbage.

From then on the youngest generation is collected after YOUNG_THRESHOLD new objects instead of
Python's 700: scheduling makes many short-lived objects and almost no cycles, and objects that
die by reference count before a collection are never scanned, so a larger young generation
scans fewer (docs/benchmarks.md has the figures).
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

# Longer than any sane first sync; after it the collector runs whether or not the lists are in.
RESUME_DEADLINE = 120.0
YOUNG_THRESHOLD = 20_000  # new objects between young collections (Python's default is 700)


class StartupCollector:
    """Automatic collection off from `pause` to `resume`; only undoes its own pause (a collector
    turned off by someone else stays off)."""

    def __init__(self) -> None:
        self.paused = False

    def pause(self) -> None:
        if gc.isenabled():
            gc.disable()
            self.paused = True

    def resume(self, why: str = "informers synced") -> None:
        """Freeze what start-up made and collect from now on (the young generation less often).

        No collection first: at 5000 nodes one takes a quarter of a second on the way to the
        first bind and finds only a few hundred cyclic leftovers of start-up, which stay, frozen."""
        if not self.paused:
            return
        self.paused = False
        gc.freeze()
        young, middle, old = gc.get_threshold()
        gc.set_threshold(max(YOUNG_THRESHOLD, young), middle, old)
        gc.enable()
        log.info("collector resumed", extra={"why": why})
        if log.isEnabledFor(logging.DEBUG):  # the count walks every frozen object
            log.debug("objects frozen at start-up", extra={"objects": gc.get_freeze_count()})
