from policy_scheduler.scheduler.plugins.gangscheduling.plugin import GangScheduling

__all__ = ["GangScheduling"]
