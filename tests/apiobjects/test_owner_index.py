"""DefaultSelectorIndex: helper.DefaultSelector over informer-fed Services and controllers, its cache, the
informer wiring, and default spreading in `simulate`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from policy_scheduler.apiobjects import owners
from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.owners import OwnerInfo, owner_from_dict
from policy_scheduler.kube.informer import OWNER_RESOURCES, Informer
from policy_scheduler.scheduler.model import LabelSelector, OwnerReference, Pod, Requirement
from policy_scheduler.scheduler.plugins.podtopologyspread import default_selector
from policy_scheduler.simulate.profiles import resolve_scenario_profiles
from policy_scheduler.simulate.run import simulate
from policy_scheduler.simulate.scenario import ScenarioError, load_scenario
from tests.no_api import NO_API

NS = "ns"


def svc(name: str, selector: Mapping[str, str] | None, namespace: str = NS) -> OwnerInfo:
    labels = None if selector is None else tuple(sorted(selector.items()))
    return OwnerInfo(owners.SERVICE, namespace, name, labels=labels)


def rc(name: str, selector: Mapping[str, str] | None, namespace: str = NS) -> OwnerInfo:
    labels = None if selector is None else tuple(sorted(selector.items()))
    return OwnerInfo(owners.REPLICATION_CONTROLLER, namespace, name, labels=labels)


def workload(kind: str, name: str, selector: LabelSelector | None, namespace: str = NS) -> OwnerInfo:
    return OwnerInfo(kind, namespace, name, selector=selector)


def rs(name: str, selector: LabelSelector | None, namespace: str = NS) -> OwnerInfo:
    return workload(owners.REPLICA_SET, name, selector, namespace)


def ss(name: str, selector: LabelSelector | None, namespace: str = NS) -> OwnerInfo:
    return workload(owners.STATEFUL_SET, name, selector, namespace)


def sel(labels: Mapping[str, str] | None = None, *exprs: Requirement) -> LabelSelector:
    return LabelSelector(match_labels=tuple(sorted((labels or {}).items())), match_expressions=tuple(exprs))


def pod(
    labels: Mapping[str, str],
    owner: tuple[str, str] | None = None,
    *,
    controller: bool = True,
    namespace: str = NS,
    name: str = "p",
) -> Pod:
    refs = (OwnerReference(kind=owner[0], name=owner[1], controller=controller),) if owner else ()
    return Pod(name=name, namespace=namespace, labels=dict(labels), owner_references=refs)


def reference(pod_: Pod, objects: Sequence[OwnerInfo]) -> LabelSelector | None:
    """common.default_selector (the plugin's reference implementation) over the same objects."""
    services = [
        (o.namespace, None if o.labels is None else dict(o.labels)) for o in objects if o.kind == "Service"
    ]
    controllers = {
        (o.namespace, o.name): dict(o.labels or ()) for o in objects if o.kind == "ReplicationController"
    }
    by_kind: dict[str, dict[tuple[str, str], LabelSelector]] = {"ReplicaSet": {}, "StatefulSet": {}}
    for o in objects:
        if o.kind in by_kind and o.selector is not None:
            by_kind[o.kind][(o.namespace, o.name)] = o.selector
    return default_selector(pod_, services, controllers, by_kind["ReplicaSet"], by_kind["StatefulSet"])


@dataclass
class Case:
    name: str
    objects: list[OwnerInfo]
    pod: Pod
    want: LabelSelector | None


WEB = {"app": "web", "tier": "fe"}
IN = "In"

CASES = [
    Case("nothing in the cluster", [], pod(WEB), None),
    Case("a Service selecting the pod", [svc("s", {"app": "web"})], pod(WEB), sel({"app": "web"})),
    Case("a Service selecting other pods", [svc("s", {"app": "db"})], pod(WEB), None),
    Case("a Service needing a label the pod lacks", [svc("s", {"app": "web", "x": "1"})], pod(WEB), None),
    Case("a Service of another namespace", [svc("s", {"app": "web"}, namespace="other")], pod(WEB), None),
    Case("a Service with a nil selector selects nothing", [svc("s", None)], pod(WEB), None),
    Case("a Service with an empty selector adds nothing", [svc("s", {})], pod(WEB), None),
    Case(
        "a Service selecting by an empty value needs the label",
        [svc("s", {"empty": ""})],
        pod(WEB),
        None,
    ),
    Case(
        "matching Services are merged",
        [svc("a", {"app": "web"}), svc("b", {"tier": "fe"}), svc("c", {"app": "db"})],
        pod(WEB),
        sel(WEB),
    ),
    Case(
        "the controlling ReplicaSet's selector is added as requirements",
        [rs("web-1", sel({"app": "web"}, Requirement("tier", "Exists")))],
        pod(WEB, ("ReplicaSet", "web-1")),
        sel({}, Requirement("app", IN, ("web",)), Requirement("tier", "Exists")),
    ),
    Case(
        "Service and ReplicaSet together",
        [svc("s", {"tier": "fe"}), rs("web-1", sel({"app": "web"}))],
        pod(WEB, ("ReplicaSet", "web-1")),
        sel({"tier": "fe"}, Requirement("app", IN, ("web",))),
    ),
    Case(
        "the ReplicaSet is found by the controller reference, not by matching its selector",
        [rs("web-1", sel({"app": "other"})), rs("web-2", sel({"app": "web"}))],
        pod(WEB, ("ReplicaSet", "web-1")),
        sel({}, Requirement("app", IN, ("other",))),
    ),
    Case(
        "a ReplicaSet that is not the pod's controller is ignored",
        [rs("web-1", sel({"app": "web"}))],
        pod(WEB, ("ReplicaSet", "web-1"), controller=False),
        None,
    ),
    Case(
        "a controlling ReplicaSet that does not exist adds nothing",
        [svc("s", {"app": "web"})],
        pod(WEB, ("ReplicaSet", "gone")),
        sel({"app": "web"}),
    ),
    Case(
        "a ReplicaSet of another namespace is not the pod's",
        [rs("web-1", sel({"app": "web"}), namespace="other")],
        pod(WEB, ("ReplicaSet", "web-1")),
        None,
    ),
    Case(
        "a ReplicaSet with a nil selector adds nothing",
        [rs("web-1", None)],
        pod(WEB, ("ReplicaSet", "web-1")),
        None,
    ),
    Case(
        "a ReplicaSet with an empty selector adds nothing",
        [rs("web-1", sel())],
        pod(WEB, ("ReplicaSet", "web-1")),
        None,
    ),
    Case(
        "a ReplicaSet selector that does not parse adds nothing",
        [svc("s", {"app": "web"}), rs("web-1", sel({}, Requirement("tier", "In")))],  # In needs values
        pod(WEB, ("ReplicaSet", "web-1")),
        sel({"app": "web"}),
    ),
    Case(
        "a StatefulSet as controller",
        [ss("db", sel({}, Requirement("app", "In", ("db", "web"))))],
        pod(WEB, ("StatefulSet", "db")),
        sel({}, Requirement("app", IN, ("db", "web"))),
    ),
    Case(
        "a ReplicaSet and a StatefulSet of the same name are told apart by kind",
        [rs("x", sel({"app": "web"})), ss("x", sel({"tier": "fe"}))],
        pod(WEB, ("StatefulSet", "x")),
        sel({}, Requirement("tier", IN, ("fe",))),
    ),
    Case(
        "a ReplicationController's selector is merged into the Services' labels",
        [svc("s", {"app": "web"}), rc("rc", {"tier": "fe"})],
        pod(WEB, ("ReplicationController", "rc")),
        sel(WEB),
    ),
    Case(
        "a ReplicationController wins a conflict (labels.Merge)",
        [svc("s", {"app": "web"}), rc("rc", {"app": "other"})],
        pod(WEB, ("ReplicationController", "rc")),
        sel({"app": "other"}),
    ),
    Case(
        "a ReplicationController with a nil selector adds nothing",
        [rc("rc", None)],
        pod(WEB, ("ReplicationController", "rc")),
        None,
    ),
    Case(
        "other controllers (a Job) are ignored",
        [svc("s", {"app": "web"}), rs("job", sel({"app": "web"}))],
        pod(WEB, ("Job", "job")),
        sel({"app": "web"}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_default_selector(case: Case) -> None:
    index = DefaultSelectorIndex(case.objects)
    assert index.owner_selectors(case.pod) == case.want
    assert index.owner_selectors(case.pod) == case.want  # again, from the cache
    assert reference(case.pod, case.objects) == case.want  # the plugin's reference implementation


# ---- changes and the cache ---------------------------------------------------------------------------


def test_changes_are_seen_through_the_cache() -> None:
    index = DefaultSelectorIndex()
    p = pod(WEB, ("ReplicaSet", "web-1"))
    assert index.owner_selectors(p) is None
    service = svc("s", {"app": "web"})
    index.add(service)
    assert index.owner_selectors(p) == sel({"app": "web"})
    replica_set = rs("web-1", sel({"tier": "fe"}))
    index.add(replica_set)
    assert index.owner_selectors(p) == sel({"app": "web"}, Requirement("tier", IN, ("fe",)))
    narrowed = rs("web-1", sel({"tier": "fe"}, Requirement("app", "Exists")))
    index.update(replica_set, narrowed)
    assert index.owner_selectors(p) == sel(
        {"app": "web"}, Requirement("tier", IN, ("fe",)), Requirement("app", "Exists")
    )
    moved = svc("s", {"app": "db"})
    index.update(service, moved)
    assert index.owner_selectors(p) == sel({}, Requirement("tier", IN, ("fe",)), Requirement("app", "Exists"))
    index.delete(narrowed)
    index.delete(moved)
    assert index.owner_selectors(p) is None
    assert len(index) == 0


def test_a_nil_selector_update_removes_the_service() -> None:
    index = DefaultSelectorIndex([svc("s", {"app": "web"})])
    index.update(svc("s", {"app": "web"}), svc("s", None))
    assert index.owner_selectors(pod(WEB)) is None
    assert len(index) == 0


def test_status_only_updates_keep_the_cache() -> None:
    index = DefaultSelectorIndex([rs("web-1", sel({"app": "web"}))])
    p = pod(WEB, ("ReplicaSet", "web-1"))
    index.owner_selectors(p)
    assert index.cached(NS) == 1
    index.update(rs("web-1", sel({"app": "web"})), rs("web-1", sel({"app": "web"})))
    assert index.cached(NS) == 1
    index.add(svc("other-ns", {"app": "web"}, namespace="elsewhere"))  # another namespace's change
    assert index.cached(NS) == 1
    index.add(svc("s", {"app": "db"}))
    assert index.cached(NS) == 0


def test_replicas_share_one_cache_entry_and_the_cache_is_bounded() -> None:
    index = DefaultSelectorIndex([rs("web-1", sel({"app": "web"}))], max_cached=3)
    for i in range(5):
        index.owner_selectors(pod(WEB, ("ReplicaSet", "web-1"), name=f"web-1-{i}"))
    assert index.cached(NS) == 1
    for i in range(10):
        assert index.owner_selectors(pod({"app": "web", "n": str(i)}, ("ReplicaSet", "web-1"))) == sel(
            {}, Requirement("app", IN, ("web",))
        )
    assert index.cached(NS) <= 3


def test_results_are_equal_objects_for_the_plugins_caches() -> None:
    index = DefaultSelectorIndex([svc("s", {"app": "web"}), rs("web-1", sel({"app": "web"}))])
    a = index.owner_selectors(pod({**WEB, "hash": "1"}, ("ReplicaSet", "web-1")))
    b = index.owner_selectors(pod({**WEB, "hash": "2"}, ("ReplicaSet", "web-1")))
    assert a == b
    assert hash(a) == hash(b)


# ---- API objects and informers -----------------------------------------------------------------------


API_OBJECTS: list[tuple[str, dict[str, Any], OwnerInfo]] = [
    (
        "/api/v1/services",
        {
            "kind": "Service",
            "metadata": {"name": "web", "namespace": NS, "resourceVersion": "1"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "clusterIP": "10.0.0.1"},
        },
        svc("web", {"app": "web"}),
    ),
    (
        "/api/v1/services",
        {"kind": "Service", "metadata": {"name": "ext", "namespace": NS}, "spec": {"type": "ExternalName"}},
        svc("ext", None),
    ),
    (
        "/api/v1/replicationcontrollers",
        {
            "kind": "ReplicationController",
            "metadata": {"name": "rc", "namespace": NS},
            "spec": {"selector": {"a": "b"}},
        },
        rc("rc", {"a": "b"}),
    ),
    (
        "/apis/apps/v1/replicasets",
        {
            "kind": "ReplicaSet",
            "metadata": {"name": "web-1", "namespace": NS},
            "spec": {
                "replicas": 3,
                "selector": {
                    "matchLabels": {"app": "web", "pod-template-hash": "1"},
                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["be"]}],
                },
                "template": {"metadata": {"labels": {"app": "web"}}},
            },
            "status": {"replicas": 3, "readyReplicas": 1},
        },
        rs(
            "web-1",
            sel({"app": "web", "pod-template-hash": "1"}, Requirement("tier", "NotIn", ("be",))),
        ),
    ),
    (
        "/apis/apps/v1/statefulsets",
        {
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}},
        },
        ss("db", sel({"app": "db"}), namespace="default"),
    ),
]


@pytest.mark.parametrize(
    ("path", "obj", "want"), API_OBJECTS, ids=[o[1]["metadata"]["name"] for o in API_OBJECTS]
)
def test_converters(path: str, obj: dict[str, Any], want: OwnerInfo) -> None:
    [(item_type, convert)] = [(t, c) for p, t, c in OWNER_RESOURCES if p == path]
    assert convert(msgspec.json.decode(json.dumps(obj).encode(), type=item_type)) == want
    assert owner_from_dict(obj) == want


def test_owner_from_dict_errors() -> None:
    with pytest.raises(ConversionError, match=r"spec.selector"):
        owner_from_dict({"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": ["app"]}})
    with pytest.raises(ValueError, match="Deployment"):
        owner_from_dict({"kind": "Deployment", "metadata": {"name": "d"}})


def test_informers_feed_the_index() -> None:
    index = DefaultSelectorIndex()
    informers = {
        path: Informer(
            NO_API, path, item_type, convert, on_add=index.add, on_update=index.update, on_delete=index.delete
        )
        for path, item_type, convert in OWNER_RESOURCES
    }
    assert set(informers) == {
        "/api/v1/services",
        "/api/v1/replicationcontrollers",
        "/apis/apps/v1/replicasets",
        "/apis/apps/v1/statefulsets",
    }

    def event(path: str, kind: str, obj: dict[str, Any]) -> None:
        informers[path]._handle_line(json.dumps({"type": kind, "object": obj}).encode())

    service = API_OBJECTS[0][1]
    replica_set = API_OBJECTS[3][1]
    p = pod({"app": "web", "pod-template-hash": "1"}, ("ReplicaSet", "web-1"))
    event("/api/v1/services", "ADDED", service)
    event("/apis/apps/v1/replicasets", "ADDED", replica_set)
    want = sel(
        {"app": "web"},
        Requirement("app", IN, ("web",)),
        Requirement("pod-template-hash", IN, ("1",)),
        Requirement("tier", "NotIn", ("be",)),
    )
    assert index.owner_selectors(p) == want
    # A status update: same selector, the cached answer stays.
    event(
        "/apis/apps/v1/replicasets",
        "MODIFIED",
        {**replica_set, "status": {"replicas": 3, "readyReplicas": 3}},
    )
    assert index.cached(NS) > 0
    assert index.owner_selectors(p) == want
    event("/api/v1/services", "DELETED", service)
    event("/apis/apps/v1/replicasets", "DELETED", replica_set)
    assert index.owner_selectors(p) is None


# ---- simulate ----------------------------------------------------------------------------------------


def _nodes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"n{i}",
                "labels": {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"},
            },
            "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}},
        }
        for i in range(6)
    ]


SPREAD_PROFILE = {
    "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
    "kind": "SchedulingProfile",
    "metadata": {"name": "spread"},
    "spec": {
        "schedulerName": "default-scheduler",
        # Most-allocated scoring would pile every pod onto one node without the default constraints.
        "pluginConfig": [
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                        }
                    ],
                },
            },
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}
                },
            },
        ],
    },
}


def _replica(i: int, owner: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"web-{i}", "namespace": NS, "labels": {"app": "web"}}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": "u", "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


def _simulate_zones(tmp_path: Path, docs: list[dict[str, Any]]) -> dict[str, int]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([*_nodes(), SPREAD_PROFILE, *docs]))
    scenario = load_scenario([path])
    outcomes = simulate(scenario, resolve_scenario_profiles(scenario))
    zones: dict[str, int] = {}
    for o in outcomes:
        assert o.node is not None, o.message
        zone = f"z{int(o.node[1:]) % 3}"
        zones[zone] = zones.get(zone, 0) + 1
    return zones


def test_simulate_spreads_a_replica_set_by_default(tmp_path: Path) -> None:
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    zones = _simulate_zones(tmp_path, [replica_set, *(_replica(i, "web-1") for i in range(6))])
    assert zones == {"z0": 2, "z1": 2, "z2": 2}


def test_simulate_spreads_the_pods_of_a_service(tmp_path: Path) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"selector": {"app": "web"}},
    }
    zones = _simulate_zones(tmp_path, [service, *(_replica(i, None) for i in range(6))])
    assert zones == {"z0": 2, "z1": 2, "z2": 2}


def test_simulate_without_owners_does_not_spread(tmp_path: Path) -> None:
    zones = _simulate_zones(tmp_path, [_replica(i, "web-1") for i in range(6)])  # the ReplicaSet is absent
    assert max(zones.values()) == 6


def test_simulate_owner_names_are_per_namespace(tmp_path: Path) -> None:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": {"a": "b"}},
        }
        for ns in ("one", "two")
    ]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert [o.namespace for o in load_scenario([path]).owners] == ["one", "two"]
    path.write_text(yaml.safe_dump_all([docs[0], docs[0]]))
    with pytest.raises(ScenarioError, match="duplicate Service 'one/web'"):
        load_scenario([path])
