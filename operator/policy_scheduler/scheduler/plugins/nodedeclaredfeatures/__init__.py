from policy_scheduler.scheduler.plugins.nodedeclaredfeatures.plugin import NodeDeclaredFeatures

__all__ = ["NodeDeclaredFeatures"]
