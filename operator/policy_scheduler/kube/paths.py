"""API paths of the objects the adapters write, built in one place (names are quoted)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple
from urllib.parse import quote

from policy_scheduler.kube.media_types import JSON, PROTOBUF_OR_JSON
from policy_scheduler.policy.constants import (
    EVICTION_POLICY_PLURAL,
    GROUP,
    SCHEDULING_PROFILE_PLURAL,
    VERSION,
)

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
# As kube-scheduler: terminal pods hold no resources and are never scheduled.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


class FirstList(NamedTuple):
    """How an informer asks for its first list: selectors (query) and content types (Accept)."""

    selectors: Mapping[str, str]
    accept: str


# The node and pod informers' first lists: `run` asks for them early (kube.prefetch). Nodes as
# protobuf: at 5000 nodes the API server encodes that list in a quarter of JSON's time (issue 12).
FIRST_LISTS: Mapping[str, FirstList] = MappingProxyType(
    {NODES: FirstList({}, PROTOBUF_OR_JSON), PODS: FirstList({"fieldSelector": POD_FIELD_SELECTOR}, JSON)}
)
SCHEDULING_PROFILES = f"/apis/{GROUP}/{VERSION}/{SCHEDULING_PROFILE_PLURAL}"
EVICTION_POLICIES = f"/apis/{GROUP}/{VERSION}/{EVICTION_POLICY_PLURAL}"
# The policy lists `run` also asks for early, to schedule before kopf has started (kube.early_policies).
POLICY_LISTS: Mapping[str, FirstList] = MappingProxyType(
    {SCHEDULING_PROFILES: FirstList({}, JSON), EVICTION_POLICIES: FirstList({}, JSON)}
)


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
