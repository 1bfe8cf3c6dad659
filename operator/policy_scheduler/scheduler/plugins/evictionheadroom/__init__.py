"""EvictionHeadroom (ours, issue 35): prefer nodes with headroom above their eviction thresholds."""

from policy_scheduler.scheduler.plugins.evictionheadroom.args import EvictionHeadroomArgs, SignalWeight
from policy_scheduler.scheduler.plugins.evictionheadroom.plugin import NEUTRAL_SCORE, EvictionHeadroom

__all__ = ["NEUTRAL_SCORE", "EvictionHeadroom", "EvictionHeadroomArgs", "SignalWeight"]
