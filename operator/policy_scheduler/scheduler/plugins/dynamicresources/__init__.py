from policy_scheduler.scheduler.plugins.dynamicresources.plugin import DynamicResources

__all__ = ["DynamicResources"]
