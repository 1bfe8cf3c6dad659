"""Opportunistic batching (KEP-5598, Beta and on by default in v1.35): framework/runtime/batch.go.

Consecutive pods with the same signature reuse the previous cycle's ranking: when the node the
previous pod took no longer fits the next one, the next best node of that ranking is the hint,
and a hint that passes the filters is taken without filtering or scoring anything else.
Pods that a plugin cannot sign (inter-pod affinity, topology spread, including the default
constraints of the default profile) never batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from policy_scheduler.scheduler.model import Pod, Toleration
from policy_scheduler.scheduler.storage.volumes import OTHER, Volume

MAX_BATCH_AGE = 0.5  # seconds (maxBatchAge)
RESOURCES_SIGNER = "Resources"  # fwk.ResourcesSignerName: Fit and BalancedAllocation share it
TOLERATIONS_SIGNER = "Tolerations"  # TaintToleration and NodeUnschedulable share it
VOLUMES_SIGNER = "Volumes"  # the storage plugins share it

Signature = Mapping[str, object]


def tolerations_signature(pod: Pod) -> tuple[Toleration, ...]:
    """fwk.TolerationsSigner: the tolerations sorted by key, then value."""
    return tuple(sorted(pod.tolerations, key=lambda t: (t.key, t.value)))


def volumes_signature(pod: Pod) -> tuple[Volume, ...]:
    """fwk.VolumesSigner: the volumes that matter for scheduling. ConfigMap and Secret volumes
    (and every other source the storage plugins ignore) decode as OTHER and are left out."""
    return tuple(v for v in pod.volumes if v.kind != OTHER)


@dataclass(slots=True)
class _State:
    signature: Signature
    ranked: list[str]  # the remaining nodes, best last (popped from the end)
    created: float


class OpportunisticBatch:
    """One profile's batch state: the last cycle and the ranking it left behind."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.state: _State | None = None
        self.last_cycle = -1
        self.last_chosen = ""
        self.batched_pods = 0  # pods placed on a hint (tests and metrics)

    def node_hint(
        self, signature: Signature | None, cycle: int, last_chosen_rejects: Callable[[str], bool]
    ) -> str:
        """GetNodeHint: the next node of the previous ranking, or "" when it cannot be used.
        `last_chosen_rejects(name)` runs the Filter plugins on that node (False if it is gone)."""
        state = self.state
        if state is None or not state.ranked:
            return ""
        compatible = (
            cycle == self.last_cycle + 1  # no other pod (of any profile) was scheduled in between
            and signature is not None
            and signature == state.signature
            and self.clock() <= state.created + MAX_BATCH_AGE
            # Only if the last pod's node cannot take this one is the next node of the ranking
            # the best; otherwise that node would need rescoring.
            and last_chosen_rejects(self.last_chosen)
        )
        if not compatible:
            self.state = None
            return ""
        return state.ranked.pop()

    def store(
        self, signature: Signature | None, hint: str, chosen: str, others: Sequence[str] | None, cycle: int
    ) -> None:
        """StoreScheduleResults: `others` are the feasible nodes other than `chosen`, best first."""
        self.last_cycle = cycle
        self.last_chosen = chosen
        if hint and hint == chosen:
            self.batched_pods += 1  # the ranking stays, one node shorter
            return
        if signature is not None and others:
            self.state = _State(signature, list(reversed(others)), self.clock())
        else:
            self.state = None
