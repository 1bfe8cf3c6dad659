"""InterPodAffinity: required and preferred pod (anti-)affinity, batch form."""

from policy_scheduler.scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
