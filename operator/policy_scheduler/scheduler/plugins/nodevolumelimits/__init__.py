from policy_scheduler.scheduler.plugins.nodevolumelimits.csi import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
