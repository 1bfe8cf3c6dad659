"""The scheduling invariants every fault test ends with, checked on what the API server holds.

`violations(snapshot, ...)` returns one line per broken invariant (empty: all hold):
- every pod the test expects to be schedulable is bound, and was bound exactly once (one
  Scheduled event, no binding conflict reported as FailedScheduling);
- no node holds more than its allocatable (cpu, memory, pods and any extended resource);
- no bound pod breaks its nodeSelector, required node affinity, required pod (anti-)affinity,
  a DoNotSchedule topology spread constraint, or a NoSchedule/NoExecute taint it does not
  tolerate (nodes a test changed after binding are exempt from the node-side checks);
- preemption evicted nobody at or above its preemptor's priority, and no faster than the
  EvictionPolicy's token bucket allows.

The checks are written from the API's definitions, independently of the operator's code,
except for quantity parsing.
"""

from __future__ import annotations

import concurrent.futures
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from policy_scheduler.devcluster.kubeapi import KubeApi
from policy_scheduler.scheduler.resources import parse_quantity

Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass
class Snapshot:
    pods: list[Obj]
    nodes: dict[str, Obj]
    events: list[Obj]
    all_pods: list[Obj]  # every namespace: capacity is shared with other tests' pods


def take(api: KubeApi, namespaces: Iterable[str]) -> Snapshot:
    wanted = list(namespaces)
    all_pods = api.get("/api/v1/pods")["items"]
    nodes = {n["metadata"]["name"]: n for n in api.get("/api/v1/nodes")["items"]}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        lists = pool.map(
            lambda ns: api.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"], wanted
        )
        events = [e for items in lists for e in items]
    pods = [p for p in all_pods if p["metadata"]["namespace"] in wanted]
    return Snapshot(pods, nodes, events, all_pods)


def key(obj: Obj) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


# ---- quantities ----------------------------------------------------------------------------------


def _amount(resource: str, value: str) -> int:
    """cpu in millicores, everything else in units (rounded up as the API server does)."""
    quantity = parse_quantity(value)
    scaled = quantity * 1000 if resource == "cpu" else quantity
    return int(-(-scaled // 1))


def requests(pod: Obj) -> dict[str, int]:
    """Effective requests: containers summed, init containers' maximum, plus overhead."""
    spec = pod["spec"]
    total: Counter[str] = Counter()
    for container in spec.get("containers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] += _amount(name, value)
    for container in spec.get("initContainers") or []:
        for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total[name], _amount(name, value))
    for name, value in (spec.get("overhead") or {}).items():
        total[name] += _amount(name, value)
    total["pods"] = 1
    return dict(total)


# ---- selectors -----------------------------------------------------------------------------------


def _expression(labels: Mapping[str, str], expr: Obj) -> bool:
    k, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return k in labels and labels[k] in values
    if op == "NotIn":
        return k not in labels or labels[k] not in values
    if op == "Exists":
        return k in labels
    if op == "DoesNotExist":
        return k not in labels
    if op in ("Gt", "Lt"):
        if k not in labels:
            return False
        try:
            have, want = int(labels[k]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    raise ValueError(f"unknown operator {op}")


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False  # a nil selector selects nothing
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression(labels, e) for e in selector.get("matchExpressions") or [])


def node_fits_selection(pod: Obj, node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    spec = pod["spec"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:
        if all(_expression(labels, e) for e in term.get("matchExpressions") or []) and all(
            _expression(fields, e) for e in term.get("matchFields") or []
        ):
            return True
    return False


def _tolerates(pod: Obj, taint: Obj) -> bool:
    for t in pod["spec"].get("tolerations") or []:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taints(pod: Obj, node: Obj) -> list[str]:
    taints = list(node["spec"].get("taints") or [])
    if node["spec"].get("unschedulable"):
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    return [
        f"{t['key']}:{t['effect']}"
        for t in taints
        if t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(pod, t)
    ]


# ---- the checks ----------------------------------------------------------------------------------


def _live(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in TERMINAL


def _bound(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if p["spec"].get("nodeName") and _live(p)]


def _check_bindings(snap: Snapshot, expect_bound: Collection[str] | None, allow_conflicts: bool) -> list[str]:
    out: list[str] = []
    if expect_bound is not None:
        by_key = {key(p): p for p in snap.pods}
        missing = sorted(
            k for k in expect_bound if not (by_key.get(k) or {"spec": {}})["spec"].get("nodeName")
        )
        if missing:
            out.append(f"{len(missing)} schedulable pods not bound: {missing[:10]}")
    scheduled: Counter[str] = Counter()
    for event in snap.events:
        if event.get("reason") == "Scheduled":
            regarding = event["regarding"]
            scheduled[regarding.get("uid") or key({"metadata": regarding})] += int(
                (event.get("series") or {}).get("count", 1)
            )
    twice = {uid: n for uid, n in scheduled.items() if n > 1}
    if twice:
        out.append(f"pods bound more than once (Scheduled events): {twice}")
    conflicts = [
        e["regarding"]["name"]
        for e in snap.events
        if e.get("reason") == "FailedScheduling" and "already assigned" in (e.get("note") or "")
    ]
    if conflicts and not allow_conflicts:
        out.append(f"binding conflicts reported: {conflicts[:10]}")
    return out


def _check_capacity(snap: Snapshot) -> list[str]:
    used: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in _bound(snap.all_pods):
        used[pod["spec"]["nodeName"]].update(requests(pod))
    out: list[str] = []
    for name, total in used.items():
        node = snap.nodes.get(name)
        if node is None:
            continue  # deleted: it holds nothing any more
        allocatable = {r: _amount(r, v) for r, v in (node["status"].get("allocatable") or {}).items()}
        for resource, amount in total.items():
            if amount > allocatable.get(resource, 0):
                out.append(
                    f"node {name} over its allocatable {resource}: {amount} > {allocatable.get(resource, 0)}"
                )
    return out


def _check_node_rules(snap: Snapshot, exempt_nodes: Collection[str]) -> list[str]:
    out: list[str] = []
    for pod in _bound(snap.pods):
        node = snap.nodes.get(pod["spec"]["nodeName"])
        if node is None or node["metadata"]["name"] in exempt_nodes:
            continue
        if not node_fits_selection(pod, node):
            out.append(f"{key(pod)} on {node['metadata']['name']} breaks its node selection")
        taints = untolerated_taints(pod, node)
        if taints:
            out.append(f"{key(pod)} on {node['metadata']['name']} does not tolerate {taints}")
    return out


def _domain(snap: Snapshot, pod: Obj, topology_key: str) -> str | None:
    node = snap.nodes.get(pod["spec"]["nodeName"])
    return None if node is None else (node["metadata"].get("labels") or {}).get(topology_key)


def _term_namespaces(pod: Obj, term: Obj) -> set[str]:
    return set(term.get("namespaces") or []) or {pod["metadata"]["namespace"]}


def _check_pod_affinity(snap: Snapshot) -> list[str]:
    out: list[str] = []
    bound = [p for p in _bound(snap.all_pods) if not p["metadata"].get("deletionTimestamp")]
    for pod in _bound(snap.pods):
        affinity = pod["spec"].get("affinity") or {}
        for kind in ("podAffinity", "podAntiAffinity"):
            for term in (affinity.get(kind) or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            ) or []:
                topology_key, namespaces = term["topologyKey"], _term_namespaces(pod, term)
                mine = _domain(snap, pod, topology_key)
                matching = [
                    o
                    for o in bound
                    if key(o) != key(pod)
                    and o["metadata"]["namespace"] in namespaces
                    and selector_matches(term.get("labelSelector"), o["metadata"].get("labels") or {})
                ]
                together = [
                    o for o in matching if mine is not None and _domain(snap, o, topology_key) == mine
                ]
                if kind == "podAntiAffinity" and together:
                    out.append(
                        f"{key(pod)} shares {topology_key}={mine} with {key(together[0])} (anti-affinity)"
                    )
                self_match = selector_matches(term.get("labelSelector"), pod["metadata"].get("labels") or {})
                if kind == "podAffinity" and not together and (matching or not self_match):
                    out.append(
                        f"{key(pod)} has no pod matching its required affinity in {topology_key}={mine}"
                    )
    return out


def _check_spread(snap: Snapshot) -> list[str]:
    """Without deletions, kube-scheduler's placement rule keeps max-min within maxSkew."""
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for pod in _bound(snap.pods):
        for c in pod["spec"].get("topologySpreadConstraints") or []:
            if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
                continue
            group = (pod["metadata"]["namespace"], c["topologyKey"], repr(c.get("labelSelector")))
            if group in seen:
                continue
            seen.add(group)
            counts: Counter[str] = Counter()
            for node in snap.nodes.values():
                value = (node["metadata"].get("labels") or {}).get(c["topologyKey"])
                if value is not None and node_fits_selection(pod, node):
                    counts[value] += 0
            for other in _bound(snap.pods):
                if other["metadata"]["namespace"] == group[0] and selector_matches(
                    c.get("labelSelector"), other["metadata"].get("labels") or {}
                ):
                    domain = _domain(snap, other, c["topologyKey"])
                    if domain is not None and domain in counts:
                        counts[domain] += 1
            if counts and max(counts.values()) - min(counts.values()) > int(c["maxSkew"]):
                out.append(f"spread {group} skew over {c['maxSkew']}: {dict(counts)}")
    return out


def _time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _check_preemption(
    snap: Snapshot, priority_of: Callable[[str], int | None], rate: tuple[float, int] | None
) -> list[str]:
    """`priority_of(namespace/name)`; `rate`: (evictionsPerMinute, burst) of the policy."""
    out: list[str] = []
    preempted = [e for e in snap.events if e.get("reason") == "Preempted"]
    for event in preempted:
        victim = key({"metadata": event["regarding"]})
        related = event.get("related") or {}
        preemptor = key({"metadata": related}) if related else ""
        v, p = priority_of(victim), priority_of(preemptor)
        if v is None or p is None:
            out.append(f"preemption of {victim} by {preemptor or '?'}: priorities unknown")
        elif v >= p:
            out.append(f"{victim} (priority {v}) evicted for {preemptor} (priority {p})")
    if rate is not None:
        per_minute, burst = rate
        times = sorted(_time(e.get("eventTime") or e["metadata"]["creationTimestamp"]) for e in preempted)
        for i, start in enumerate(times):
            for j in range(i, len(times)):
                allowed = burst + per_minute * (times[j] - start) / 60.0 + 1  # +1: timestamp rounding
                if j - i + 1 > allowed:
                    out.append(f"{j - i + 1} evictions in {times[j] - start:.1f}s exceed the policy's rate")
                    return out
    return out


def violations(
    snap: Snapshot,
    *,
    expect_bound: Collection[str] | None = None,
    exempt_nodes: Collection[str] = (),
    spread: bool = True,
    priority_of: Callable[[str], int | None] | None = None,
    eviction_rate: tuple[float, int] | None = None,
    allow_conflicts: bool = False,
) -> list[str]:
    """`allow_conflicts`: a refused binding (409, reported as FailedScheduling) is expected,
    because the test binds pods itself or loses the answers to bindings that succeeded."""
    out = _check_bindings(snap, expect_bound, allow_conflicts)
    out += _check_capacity(snap)
    out += _check_node_rules(snap, exempt_nodes)
    out += _check_pod_affinity(snap)
    if spread:
        out += _check_spread(snap)
    if priority_of is not None:
        out += _check_preemption(snap, priority_of, eviction_rate)
    return out


def assert_holds(snap: Snapshot, **kwargs: Any) -> None:
    found = violations(snap, **kwargs)
    assert not found, "invariants violated:\n" + "\n".join(found[:30])
