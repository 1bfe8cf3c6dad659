"""A minimal read-only snapshot of a live cluster as a Scenario, for explain's fallback.

Stand-in until `simulate --from-cluster`'s live_snapshot lands: the same conversions as the
informers (apiobjects/), GET only. Owners and PDBs are not read, so default topology spreading
and preemption's PDB accounting see none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert import (
    namespace_from_api,
    node_from_api,
    pod_from_api_or_malformed,
    struct_from_dict,
)
from policy_scheduler.kube.client import ApiError, request
from policy_scheduler.kube.informer import NAMESPACES, NODES, PODS
from policy_scheduler.policy import constants as c
from policy_scheduler.simulate.scenario import Scenario

POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"  # as the pod informer


async def _items(
    api: Any, path: str, query: dict[str, str | int | bool] | None = None, optional: bool = False
) -> list[Any]:
    status, body = await request(api, "GET", path, query=query)
    if status == 404 and optional:
        return []
    if not 200 <= status < 300:
        raise ApiError.from_response(status, body)
    items: list[Any] = msgspec.json.decode(body).get("items") or []
    return items


async def snapshot_from_cluster(api: Any, namespaces: Sequence[str] = ()) -> Scenario:
    """Nodes, every bound pod, the pending pods of `namespaces` (all when empty), namespaces, and our CRs."""
    scenario = Scenario()
    for item in await _items(api, NODES):
        scenario.nodes.append(node_from_api(struct_from_dict(item, structs.Node, "Node")))
    wanted = set(namespaces)
    for item in await _items(api, PODS, {"fieldSelector": POD_FIELD_SELECTOR}):
        pod = pod_from_api_or_malformed(struct_from_dict(item, structs.Pod, "Pod"))
        if pod.node_name or not wanted or pod.namespace in wanted:
            scenario.pods.append(pod)
    for item in await _items(api, NAMESPACES):
        ns = namespace_from_api(struct_from_dict(item, structs.Namespace, "Namespace"))
        scenario.namespaces[ns.name] = ns
    base = f"/apis/{c.GROUP}/{c.VERSION}/"
    scenario.profiles = await _items(api, base + c.SCHEDULING_PROFILE_PLURAL, optional=True)
    scenario.eviction_policies = await _items(api, base + c.EVICTION_POLICY_PLURAL, optional=True)
    return scenario
