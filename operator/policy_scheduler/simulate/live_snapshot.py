"""A read-only snapshot of a live cluster as a Scenario, for `simulate --from-cluster`.

Every collection is read with paginated GET (limit/continue) through the operator's client and
retry policy, decoded and converted exactly as the operator's informers do (apiobjects/), and
put into the same Scenario the YAML reader fills: one path into the scheduling core. Nothing
here can write: the only request it makes is GET.

A kind the scheduler learns to use later is one more Collection in `collections()` and one
more Scenario field.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert import pod_from_api_or_malformed, pod_from_decode_failure
from policy_scheduler.apiobjects.convert_cluster import (
    namespace_from_api,
    node_from_api,
    pdb_from_api,
    priority_class_from_api,
)
from policy_scheduler.apiobjects.decode import DecodeFailure, decode_list
from policy_scheduler.apiobjects.workloads import PodGroupObject, WorkloadObject, workload_from_api
from policy_scheduler.apiobjects.workloads import pod_group_from_api as workload_pod_group_from_api
from policy_scheduler.kube.informer import OWNER_RESOURCES, object_key
from policy_scheduler.kube.paths import (
    DRA_API,
    NAMESPACES,
    NODES,
    PDBS,
    POD_FIELD_SELECTOR,
    PODS,
    PRIORITY_CLASSES,
    WORKLOAD_API_PODGROUPS,
    WORKLOAD_API_WORKLOADS,
)
from policy_scheduler.kube.retry import Answer, RetryPolicy, with_retries
from policy_scheduler.kube.server_version import VERSION_PATH, git_version
from policy_scheduler.kube.storage_informers import STORAGE_RESOURCES
from policy_scheduler.policy import constants as c
from policy_scheduler.simulate.scenario import Scenario

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

PAGE_SIZE = 500
RETRY = RetryPolicy(initial=0.5, cap=5.0, max_attempts=5)

# GET path, query -> Answer: the only capability the snapshot is given.
Get = Callable[[str, dict[str, str | int | bool]], Awaitable[Answer]]


class SnapshotError(Exception):
    """The cluster could not be read (the message says which collection and why)."""


@dataclass(frozen=True, slots=True)
class Collection:
    """One API collection and where its converted objects go in the Scenario."""

    path: str
    item_type: Any
    convert: Callable[[Any], Any]  # decoded struct -> what the Scenario holds
    add: Callable[[Scenario, Any], None]
    field_selector: str = ""
    optional: bool = False  # absent API (404: e.g. our CRDs not installed) reads as empty
    on_failure: Callable[[DecodeFailure], Any] | None = None  # a stand-in for an undecodable item


@dataclass(slots=True)
class SnapshotStats:
    counts: dict[str, int] = field(default_factory=dict)  # path -> objects read
    unreadable: list[str] = field(default_factory=list)  # "path: object: why", skipped
    missing: list[str] = field(default_factory=list)  # optional collections the server lacks


def _add_pod(scenario: Scenario, pod: Any) -> None:
    scenario.pods.append(pod)


def _add_node(scenario: Scenario, node: Any) -> None:
    scenario.nodes.append(node)


def _add_priority_class(scenario: Scenario, pc: Any) -> None:
    scenario.priority_classes[pc.name] = pc


def _add_namespace(scenario: Scenario, ns: Any) -> None:
    scenario.namespaces[ns.name] = ns


def _add_pdb(scenario: Scenario, pdb: Any) -> None:
    scenario.pdbs.append(pdb)


def _add_owner(scenario: Scenario, owner: Any) -> None:
    scenario.owners.append(owner)


def _add_storage(scenario: Scenario, obj: Any) -> None:
    scenario.storage.append(obj)


def _add_profile(scenario: Scenario, obj: Any) -> None:
    scenario.profiles.append(obj)


def _add_eviction_policy(scenario: Scenario, obj: Any) -> None:
    scenario.eviction_policies.append(obj)


def _add_mirror(scenario: Scenario, obj: Any) -> None:
    scenario.priority_class_mirrors.append(obj)


def _dra_kind(kind: str) -> Callable[[Any], Any]:
    """List items carry no kind; simulate/dra.py tells DRA objects apart by it."""

    def convert(item: Any) -> Any:
        return {**item, "kind": kind}

    return convert


def _add_dra(scenario: Scenario, obj: Any) -> None:
    scenario.dra.append(obj)


def _add_workload_group(scenario: Scenario, obj: Any) -> None:
    scenario.workload_groups.append(obj)


def _add_workload(scenario: Scenario, obj: Any) -> None:
    scenario.workload_groups.extend(obj.groups)


def _cr_path(plural: str) -> str:
    return f"/apis/{c.GROUP}/{c.VERSION}/{plural}"


def _same(item: Any) -> Any:
    return item


def collections() -> list[Collection]:
    """What the scheduler consults, converted as the informers convert it."""
    core = [
        Collection(
            PODS,
            structs.Pod,
            pod_from_api_or_malformed,
            _add_pod,
            POD_FIELD_SELECTOR,
            on_failure=pod_from_decode_failure,
        ),
        Collection(NODES, structs.Node, node_from_api, _add_node),
        Collection(NAMESPACES, structs.Namespace, namespace_from_api, _add_namespace),
        Collection(PDBS, structs.PodDisruptionBudget, pdb_from_api, _add_pdb),
        Collection(PRIORITY_CLASSES, structs.PriorityClass, priority_class_from_api, _add_priority_class),
    ]
    owners = [
        Collection(path, item_type, convert, _add_owner) for path, item_type, convert in OWNER_RESOURCES
    ]
    storage = [
        Collection(path, item_type, convert, _add_storage) for path, item_type, convert in STORAGE_RESOURCES
    ]
    # Our CRs stay plain dicts, status included (the last accepted spec lives there).
    raw = dict[str, Any]
    policy = [
        Collection(_cr_path(c.SCHEDULING_PROFILE_PLURAL), raw, _same, _add_profile, optional=True),
        Collection(_cr_path(c.EVICTION_POLICY_PLURAL), raw, _same, _add_eviction_policy, optional=True),
        Collection(_cr_path(c.PRIORITY_CLASS_MIRROR_PLURAL), raw, _same, _add_mirror, optional=True),
    ]
    # DRA objects stay plain dicts too (simulate/dra.py decodes them); absent API reads as empty.
    dra = [
        Collection(f"{DRA_API}/{plural}", raw, _dra_kind(kind), _add_dra, optional=True)
        for plural, kind in (
            ("deviceclasses", "DeviceClass"),
            ("resourceslices", "ResourceSlice"),
            ("devicetaintrules", "DeviceTaintRule"),
            ("resourceclaims", "ResourceClaim"),
            ("resourceclaimtemplates", "ResourceClaimTemplate"),
        )
    ]
    # The Workload API (GangScheduling): whichever version the server serves, if any.
    workload_api = [
        *(
            Collection(path, PodGroupObject, workload_pod_group_from_api, _add_workload_group, optional=True)
            for path in WORKLOAD_API_PODGROUPS
        ),
        Collection(WORKLOAD_API_WORKLOADS, WorkloadObject, workload_from_api, _add_workload, optional=True),
    ]
    return [*core, *owners, *storage, *policy, *dra, *workload_api]


def _meta_key(item: Any) -> str:
    if isinstance(item, dict):
        meta = item.get("metadata") or {}
        ns, name = meta.get("namespace"), meta.get("name", "?")
        return f"{ns}/{name}" if ns else str(name)
    return object_key(item.metadata)


async def _list(get: Get, col: Collection, stats: SnapshotStats) -> tuple[list[Any], list[DecodeFailure]]:
    items: list[Any] = []
    failures: list[DecodeFailure] = []
    token = ""
    while True:
        query: dict[str, str | int | bool] = {"limit": PAGE_SIZE}
        if col.field_selector:
            query["fieldSelector"] = col.field_selector
        if token:
            query["continue"] = token
        answer = await get(col.path, query)
        if answer.status == 410 and token:
            items, failures, token = [], [], ""  # the continue token expired: list again
            continue
        if answer.status == 404 and col.optional:
            stats.missing.append(col.path)
            return [], []
        if answer.status != 200:
            body = answer.body[:300].decode("utf-8", "replace")
            raise SnapshotError(f"GET {col.path}: HTTP {answer.status}: {body}")
        page = decode_list(answer.body, col.item_type)
        items.extend(page.items)
        failures.extend(page.failures)
        token = page.continue_token
        if not token:
            return items, failures


async def read_snapshot(
    get: Get, *, namespaces: Sequence[str] = (), sources: Iterable[Collection] | None = None
) -> tuple[Scenario, SnapshotStats]:
    """The cluster as a Scenario. `namespaces`: pending pods of other namespaces are left out
    (pods bound anywhere still occupy their nodes)."""
    scenario = Scenario()
    stats = SnapshotStats()
    cols = list(sources if sources is not None else collections())
    # Collections are read side by side; their objects are added in a fixed order.
    version, *listed = await asyncio.gather(get(VERSION_PATH, {}), *(_list(get, col, stats) for col in cols))
    scenario.server_version = git_version(version.body) if 200 <= version.status < 300 else None
    for col, (items, failures) in zip(cols, listed, strict=True):
        for item in items:
            try:
                col.add(scenario, col.convert(item))
            except ValueError as exc:  # ConversionError: the informer would skip it too
                stats.unreadable.append(f"{col.path}: {_meta_key(item)}: {exc}")
        for failure in failures:
            stand_in = col.on_failure(failure) if col.on_failure else None
            if stand_in is None:
                stats.unreadable.append(failure.describe(col.path))
            else:
                col.add(scenario, stand_in)
        stats.counts[col.path] = len(items) + len(failures)
    if namespaces:
        wanted = set(namespaces)
        scenario.pods = [p for p in scenario.pods if p.node_name or p.namespace in wanted]
    # The operator met the pods in the order they were created; the queue keeps it among equals.
    scenario.pods.sort(key=lambda p: (p.creation_timestamp, p.namespace, p.name))
    return scenario, stats


def api_get(api: ApiClient) -> Get:
    """GET through the operator's client, retried as every API call is (kube/retry.py)."""
    from policy_scheduler.kube.client import CONNECTION_ERRORS, call

    async def get(path: str, query: dict[str, str | int | bool]) -> Answer:
        return await with_retries(
            lambda: call(api, "GET", path, query=query),
            RETRY,
            connection_errors=CONNECTION_ERRORS,
            what=f"GET {path}",
        )

    return get
