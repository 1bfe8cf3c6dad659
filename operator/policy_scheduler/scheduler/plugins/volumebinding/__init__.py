from policy_scheduler.scheduler.plugins.volumebinding.plugin import VolumeBinding

__all__ = ["VolumeBinding"]
