from policy_scheduler.scheduler.plugins.coscheduling.args import CoschedulingArgs
from policy_scheduler.scheduler.plugins.coscheduling.plugin import Coscheduling

__all__ = ["Coscheduling", "CoschedulingArgs"]
