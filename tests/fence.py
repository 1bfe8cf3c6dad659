"""A fence (kube.fence.Fence) the test opens and closes: whether the replica may act as leader."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.interfaces import NotLeading


class SwitchFence:
    def __init__(self) -> None:
        self.open = True

    def may_act(self) -> bool:
        return self.open

    def check(self) -> None:
        if not self.open:
            raise NotLeading("the test closed the fence")
