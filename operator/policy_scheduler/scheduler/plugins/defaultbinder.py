"""DefaultBinder: writes the binding through the handle's Binder."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import AlreadyBound, BindPlugin, NotLeading
from policy_scheduler.scheduler.framework.status import SUCCESS, Status, error
from policy_scheduler.scheduler.model import Pod


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        binder = self.handle.binder
        if binder is None:
            return error("no binder configured")
        try:
            await binder.bind(pod, node_name)
        except (AlreadyBound, NotLeading):
            raise  # not failures: the binding cycle settles them
        except Exception as exc:  # fwk.AsStatus(err): any API failure becomes an Error status
            return error(str(exc))
        return SUCCESS
