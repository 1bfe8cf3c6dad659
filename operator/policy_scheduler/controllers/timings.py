"""The controllers' timings (ours: no upstream counterpart)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MirrorTimings:
    """The PriorityClassMirror controller's."""

    resync: float = 30.0  # every mirror is reconciled at least this often
    status: float = 5.0  # a mirror's status (pod counts) is refreshed this often
    tick: float = 1.0  # how often the controller loop looks for due work


DEFAULT_MIRROR_TIMINGS = MirrorTimings()
