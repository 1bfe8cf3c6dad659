"""PodTopologySpread: spread pods across topology domains (kube-scheduler v1.35.4)."""

from policy_scheduler.scheduler.plugins.podtopologyspread.common import default_selector
from policy_scheduler.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread", "default_selector"]
