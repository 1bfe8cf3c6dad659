"""Decoding API objects into the scheduler model: field mappings, defaults and errors."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.apiobjects import convert, convert_cluster, structs
from policy_scheduler.apiobjects.cluster_objects import PodConditionInfo
from policy_scheduler.apiobjects.decode import DecodeFailure, decode_list, decode_watch_event
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.resources import canonical
from policy_scheduler.scheduler.storage.volumes import IMAGE, Volume

T0 = "2024-05-01T12:00:00Z"
T0_EPOCH = 1714564800.0


def pod_json(spec: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "u1", "resourceVersion": "7"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **(spec or {})},
    }
    body.update(top)
    return body


def decode_pod(body: dict[str, Any]) -> model.Pod:
    return convert.pod_from_api(msgspec.json.decode(json.dumps(body).encode(), type=structs.Pod))


SEL = {
    "matchLabels": {"b": "2", "a": "1"},
    "matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}],
}
MODEL_SEL = model.LabelSelector(
    match_labels=(("a", "1"), ("b", "2")), match_expressions=(model.Requirement("k", "In", ("x",)),)
)

# (case, spec fields, top-level fields, attribute, expected)
POD_FIELDS: list[tuple[str, dict[str, Any], dict[str, Any], str, Any]] = [
    ("name", {}, {}, "name", "web-1"),
    ("namespace", {}, {}, "namespace", "default"),
    ("uid", {}, {}, "uid", "u1"),
    ("resource version", {}, {}, "resource_version", "7"),
    ("scheduler default", {}, {}, "scheduler_name", "default-scheduler"),
    ("scheduler", {"schedulerName": "policy"}, {}, "scheduler_name", "policy"),
    ("priority default", {}, {}, "priority", 0),
    ("priority", {"priority": 1000}, {}, "priority", 1000),
    ("priority class", {"priorityClassName": "high"}, {}, "priority_class_name", "high"),
    ("preemption default", {}, {}, "preemption_policy", "PreemptLowerPriority"),
    ("preemption never", {"preemptionPolicy": "Never"}, {}, "preemption_policy", "Never"),
    ("node name", {"nodeName": "n1"}, {}, "node_name", "n1"),
    ("grace default", {}, {}, "termination_grace_period_seconds", None),
    ("grace", {"terminationGracePeriodSeconds": 5}, {}, "termination_grace_period_seconds", 5),
    ("node selector", {"nodeSelector": {"disk": "ssd"}}, {}, "node_selector", {"disk": "ssd"}),
    (
        "tolerations",
        {
            "tolerations": [
                {"key": "a", "value": "b", "effect": "NoSchedule"},
                {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            ]
        },
        {},
        "tolerations",
        (
            model.Toleration("a", "Equal", "b", "NoSchedule"),
            model.Toleration("", "Exists", "", "NoExecute", 30),
        ),
    ),
    (
        "spread constraints",
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 2,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": SEL,
                    "minDomains": 3,
                    "nodeAffinityPolicy": "Ignore",
                    "nodeTaintsPolicy": "Honor",
                    "matchLabelKeys": ["pod-template-hash"],
                }
            ]
        },
        {},
        "topology_spread_constraints",
        (
            model.TopologySpreadConstraint(
                2, "zone", "DoNotSchedule", MODEL_SEL, 3, "Ignore", "Honor", ("pod-template-hash",)
            ),
        ),
    ),
    (
        "spread minimal",
        {
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}
            ]
        },
        {},
        "topology_spread_constraints",
        (model.TopologySpreadConstraint(1, "z", "ScheduleAnyway"),),
    ),
    ("gates", {"schedulingGates": [{"name": "g1"}, {"name": "g2"}]}, {}, "scheduling_gates", ("g1", "g2")),
    (
        "overhead",
        {"overhead": {"cpu": "250m", "memory": "1Ki"}},
        {},
        "overhead",
        {"cpu": 250, "memory": 1024},
    ),
    ("no pod-level resources", {}, {}, "pod_requests", None),
    (
        "pod-level requests",
        {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        {},
        "pod_requests",
        {"cpu": 1000, "memory": 1 << 30},
    ),
    (
        "pod-level requests default to limits",
        {
            "resources": {
                "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"},
                "requests": {"cpu": "1"},
            }
        },
        {},
        "pod_requests",
        {"cpu": 1000, "memory": 1 << 30},
    ),
    ("host network", {"hostNetwork": True}, {}, "host_network", True),
    ("host users unset", {}, {}, "host_users", None),
    ("host users", {"hostUsers": False}, {}, "host_users", False),
    (
        "restart rules",
        {
            "containers": [
                {
                    "name": "c",
                    "restartPolicyRules": [
                        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
                    ],
                }
            ]
        },
        {},
        "containers",
        (model.Container("c", restart_rule_actions=("RestartAllContainers",)),),
    ),
    (
        "bind mount options",
        {
            "initContainers": [
                {
                    "name": "i",
                    "volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["nosuid"]}],
                }
            ]
        },
        {},
        "init_containers",
        (model.Container("i", bind_mount_options=True),),
    ),
    (
        "image volume",
        {"volumes": [{"name": "models", "image": {"reference": "registry.example/models:v1"}}]},
        {},
        "volumes",
        (Volume("models", IMAGE, source_id="registry.example/models:v1"),),
    ),
    ("phase default", {}, {}, "phase", "Pending"),
    ("phase", {}, {"status": {"phase": "Running"}}, "phase", "Running"),
    ("nominated", {}, {"status": {"nominatedNodeName": "n2"}}, "nominated_node_name", "n2"),
    ("start time", {}, {"status": {"startTime": T0}}, "start_time", T0_EPOCH),
    ("no start time", {}, {}, "start_time", None),
]


@pytest.mark.parametrize(
    ("case", "spec", "top", "attr", "expected"), POD_FIELDS, ids=[c[0] for c in POD_FIELDS]
)
def test_pod_field(case: str, spec: dict[str, Any], top: dict[str, Any], attr: str, expected: Any) -> None:
    assert getattr(decode_pod(pod_json(spec, **top)), attr) == expected


METADATA_FIELDS: list[tuple[str, dict[str, Any], str, Any]] = [
    ("labels", {"labels": {"app": "web"}}, "labels", {"app": "web"}),
    ("no labels", {}, "labels", {}),
    ("annotations", {"annotations": {"a": "b"}}, "annotations", {"a": "b"}),
    ("creation", {"creationTimestamp": T0}, "creation_timestamp", T0_EPOCH),
    ("null creation", {"creationTimestamp": None}, "creation_timestamp", 0.0),
    ("deletion", {"deletionTimestamp": "2024-05-01T12:00:01Z"}, "deletion_timestamp", T0_EPOCH + 1),
    (
        "owners",
        {
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "rs",
                    "uid": "r1",
                    "controller": True,
                },
                {"kind": "Foo", "name": "f"},
            ]
        },
        "owner_references",
        (model.OwnerReference("ReplicaSet", "rs", "r1", True), model.OwnerReference("Foo", "f", "", False)),
    ),
    ("namespace default", {"namespace": ""}, "namespace", "default"),
]


@pytest.mark.parametrize(
    ("case", "meta", "attr", "expected"), METADATA_FIELDS, ids=[c[0] for c in METADATA_FIELDS]
)
def test_pod_metadata_field(case: str, meta: dict[str, Any], attr: str, expected: Any) -> None:
    body = pod_json()
    body["metadata"].update(meta)
    assert getattr(decode_pod(body), attr) == expected


def test_terminating() -> None:
    body = pod_json()
    body["metadata"]["deletionTimestamp"] = T0
    assert decode_pod(body).terminating


# (case, container json, expected model.Container)
CONTAINERS: list[tuple[str, dict[str, Any], model.Container]] = [
    ("bare", {"name": "a"}, model.Container("a")),
    ("image", {"name": "a", "image": "busybox:1"}, model.Container("a", "busybox:1")),
    (
        "requests",
        {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "example.com/dev": "2"}}},
        model.Container("a", requests={"cpu": 100, "memory": 64 << 20, "example.com/dev": 2}),
    ),
    (
        "requests default to limits",
        {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1G"}, "requests": {"cpu": "500m"}}},
        model.Container("a", requests={"cpu": 500, "memory": 10**9}),
    ),
    (
        "ports",
        {
            "name": "a",
            "ports": [
                {"containerPort": 80},
                {"containerPort": 53, "hostPort": 5353, "protocol": "UDP", "hostIP": "10.0.0.1"},
            ],
        },
        model.Container(
            "a", ports=(model.ContainerPort(80), model.ContainerPort(53, 5353, "UDP", "10.0.0.1"))
        ),
    ),
    ("sidecar", {"name": "a", "restartPolicy": "Always"}, model.Container("a", restart_policy="Always")),
]


@pytest.mark.parametrize(("case", "container", "expected"), CONTAINERS, ids=[c[0] for c in CONTAINERS])
def test_container(case: str, container: dict[str, Any], expected: model.Container) -> None:
    pod = decode_pod(pod_json({"containers": [container], "initContainers": [container]}))
    assert pod.containers == (expected,)
    assert pod.init_containers == (expected,)


def test_sidecar_requests_accounted() -> None:
    pod = decode_pod(
        pod_json(
            {
                "initContainers": [
                    {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
                    {"name": "init", "resources": {"requests": {"cpu": "1"}}},
                ],
                "containers": [{"name": "main", "resources": {"requests": {"cpu": "300m"}}}],
            }
        )
    )
    assert pod.init_containers[0].restart_policy == "Always"
    # main 300m + sidecar 200m; the init container runs beside the sidecar: max(500m, 1200m).
    assert pod.requests["cpu"] == 1200


def test_pod_level_resources_win_over_containers() -> None:
    pod = decode_pod(
        pod_json(
            {
                "resources": {"requests": {"cpu": "2"}},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Mi"}}}],
            }
        )
    )
    assert pod.requests == {"cpu": 2000, "memory": 1 << 20}


def test_node_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
                        "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}],
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}
            ],
        }
    }
    pod = decode_pod(pod_json({"affinity": affinity}))
    assert pod.affinity == model.Affinity(
        node_affinity=model.NodeAffinity(
            required=(
                model.NodeSelectorTerm(
                    (model.Requirement("zone", "In", ("a", "b")),),
                    (model.Requirement("metadata.name", "NotIn", ("n1",)),),
                ),
            ),
            preferred=(
                model.PreferredSchedulingTerm(
                    5, model.NodeSelectorTerm((model.Requirement("gpu", "Exists"),))
                ),
            ),
        )
    )


@pytest.mark.parametrize(
    ("required", "expected"),
    [({}, None), ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}, ())],
    ids=["absent means none", "empty terms match nothing"],
)
def test_node_affinity_required_absent_vs_empty(required: dict[str, Any], expected: Any) -> None:
    pod = decode_pod(pod_json({"affinity": {"nodeAffinity": required}}))
    assert pod.affinity is not None
    assert pod.affinity.node_affinity is not None
    assert pod.affinity.node_affinity.required == expected


def test_pod_affinity_and_anti_affinity() -> None:
    term = {
        "labelSelector": SEL,
        "namespaces": ["a", "b"],
        "topologyKey": "zone",
        "namespaceSelector": {},
        "matchLabelKeys": ["v"],
        "mismatchLabelKeys": ["t"],
    }
    model_term = model.PodAffinityTerm("zone", MODEL_SEL, ("a", "b"), model.LabelSelector(), ("v",), ("t",))
    spec = {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}],
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "host"}]},
        }
    }
    pod = decode_pod(pod_json(spec))
    assert pod.affinity is not None
    assert pod.affinity.pod_affinity == model.PodAffinity(
        required=(model_term,), preferred=(model.WeightedPodAffinityTerm(10, model_term),)
    )
    assert pod.affinity.pod_anti_affinity == model.PodAffinity(required=(model.PodAffinityTerm("host"),))
    assert pod.affinity.node_affinity is None


# --- nodes -------------------------------------------------------------------------------------

NODE = {
    "metadata": {"name": "n1", "uid": "nu", "labels": {"zone": "a"}, "resourceVersion": "3"},
    "spec": {
        "unschedulable": True,
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": T0}],
    },
    "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "allocatable": {"cpu": "7800m", "memory": "30Gi", "pods": "110", "ephemeral-storage": "100G"},
        "images": [{"names": ["nginx@sha256:x", "nginx:1"], "sizeBytes": 1000}],
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def test_node_fields() -> None:
    node = convert_cluster.node_from_dict(NODE)
    assert node == model.Node(
        name="n1",
        uid="nu",
        labels={"zone": "a"},
        taints=(model.Taint("k", "v", "NoSchedule"),),
        unschedulable=True,
        allocatable={"cpu": 7800, "memory": 30 << 30, "pods": 110, "ephemeral-storage": 100 * 10**9},
        images=(model.ContainerImage(("nginx@sha256:x", "nginx:1"), 1000),),
        resource_version="3",
        memory_capacity=32 << 30,  # status.capacity.memory: what memory.available is out of
    )


def test_node_allocatable_defaults_to_capacity() -> None:
    node = convert_cluster.node_from_dict({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}})
    assert node.allocatable == {"cpu": 2000}
    assert not node.unschedulable
    assert node.taints == ()


def test_node_invalid_quantity() -> None:
    with pytest.raises(ConversionError, match=r'^Node n: status.allocatable.cpu: invalid quantity "x"$'):
        convert_cluster.node_from_dict({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "x"}}})


# --- other objects -------------------------------------------------------------------------------


def test_priority_class() -> None:
    pc = convert_cluster.priority_class_from_dict(
        {"metadata": {"name": "high", "resourceVersion": "2"}, "value": 1000, "globalDefault": True}
    )
    assert (pc.name, pc.value, pc.global_default, pc.preemption_policy) == (
        "high",
        1000,
        True,
        "PreemptLowerPriority",
    )
    never = convert_cluster.priority_class_from_dict(
        {"metadata": {"name": "n"}, "value": 1, "preemptionPolicy": "Never"}
    )
    assert never.preemption_policy == "Never"


@pytest.mark.parametrize(
    ("spec", "selector", "min_available", "max_unavailable"),
    [
        ({"selector": SEL, "minAvailable": 2}, MODEL_SEL, 2, None),
        ({"selector": {}, "maxUnavailable": "25%"}, model.LabelSelector(), None, "25%"),
        ({}, None, None, None),
    ],
    ids=["int min", "percent max, empty selector", "no selector"],
)
def test_pdb(spec: dict[str, Any], selector: Any, min_available: Any, max_unavailable: Any) -> None:
    pdb = convert_cluster.pdb_from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "pu"},
            "spec": spec,
            "status": {
                "disruptionsAllowed": 1,
                "currentHealthy": 3,
                "desiredHealthy": 2,
                "expectedPods": 3,
                "disruptedPods": {"web-0": T0},
            },
        }
    )
    assert pdb.key == "ns/p"
    assert pdb.selector == selector
    assert (pdb.min_available, pdb.max_unavailable) == (min_available, max_unavailable)
    assert (pdb.disruptions_allowed, pdb.current_healthy, pdb.desired_healthy, pdb.expected_pods) == (
        1,
        3,
        2,
        3,
    )
    assert pdb.disrupted_pods == frozenset({"web-0"})


def test_namespace() -> None:
    ns = convert_cluster.namespace_from_dict(
        {"metadata": {"name": "team", "labels": {"tier": "gold"}}, "status": {"phase": "Active"}}
    )
    assert (ns.name, ns.labels, ns.phase) == ("team", {"tier": "gold"}, "Active")


def test_pod_scheduled_condition() -> None:
    p = msgspec.convert(
        pod_json(
            status={
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "m",
                        "lastTransitionTime": T0,
                    },
                ]
            }
        ),
        structs.Pod,
    )
    assert convert.pod_scheduled_condition(p) == PodConditionInfo(
        "PodScheduled", "False", "Unschedulable", "m", T0_EPOCH
    )
    assert convert.pod_scheduled_condition(msgspec.convert(pod_json(), structs.Pod)) is None


def test_a_pending_pods_model_carries_its_podscheduled_verdict_and_a_bound_one_does_not() -> None:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    ready = {"type": "Ready", "status": "False"}
    pending = convert.pod_from_dict(pod_json(status={"conditions": [ready, condition]}))
    assert pending.scheduled_condition == ("False", "Unschedulable", "m")
    assert convert.pod_from_dict(pod_json(status={"conditions": [ready]})).scheduled_condition is None
    bound = pod_json({"nodeName": "n1"}, status={"conditions": [{**condition, "status": "True"}]})
    assert convert.pod_from_dict(bound).scheduled_condition is None
    # The status writer's business only: a model differing in it alone is the same pod.
    assert pending == convert.pod_from_dict(pod_json())


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]},
            'Pod default/web-1: spec.containers[0].resources.requests.cpu: invalid quantity "abc"',
        ),
        (
            {"initContainers": [{"name": "i", "resources": {"limits": {"memory": "1Qi"}}}]},
            'Pod default/web-1: spec.initContainers[0].resources.limits.memory: invalid quantity "1Qi"',
        ),
        ({"overhead": {"cpu": "--1"}}, 'Pod default/web-1: spec.overhead.cpu: invalid quantity "--1"'),
        (
            {"resources": {"requests": {"memory": "lots"}}},
            'Pod default/web-1: spec.resources.requests.memory: invalid quantity "lots"',
        ),
    ],
    ids=["container request", "init limit", "overhead", "pod level"],
)
def test_invalid_quantity(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConversionError) as info:
        decode_pod(pod_json(spec))
    assert str(info.value) == message
    struct = msgspec.convert(pod_json(spec), structs.Pod)
    malformed = convert.pod_from_api_or_malformed(struct)
    assert malformed.malformed == message
    assert (malformed.name, malformed.uid) == ("web-1", "u1")


def test_malformed_pod_keeps_everything_else() -> None:
    spec = {
        "schedulerName": "policy",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "x", "memory": "1Mi"}}}],
    }
    pod = convert.pod_from_api_or_malformed(msgspec.convert(pod_json(spec), structs.Pod))
    assert pod.scheduler_name == "policy"
    assert pod.containers[0].requests == {"memory": 1 << 20}
    assert pod.malformed is not None
    assert "cpu" in pod.malformed
    assert convert.pod_from_api_or_malformed(msgspec.convert(pod_json(), structs.Pod)).malformed is None


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            {"spec": {"priority": "high"}},
            "Pod default/web-1: spec.priority: Expected `int | null`, got `str`",
        ),
        (
            {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}},
            "Pod default/web-1: spec.containers[0].ports[0].containerPort: Expected `int`, got `str`",
        ),
        (
            {"metadata": {"name": "web-1", "labels": ["a"]}},
            "Pod default/web-1: metadata.labels: Expected `object | null`, got `array`",
        ),
        (
            {"spec": {"containers": [{"resources": {"requests": {"cpu": True}}}]}},
            "Pod default/web-1: spec.containers[0].resources.requests",
        ),
    ],
    ids=["priority", "port", "labels", "bool quantity"],
)
def test_bad_types_from_dict(patch: dict[str, Any], message: str) -> None:
    body = pod_json()
    for key, value in patch.items():
        body[key] = {**body[key], **value}
    with pytest.raises(ConversionError) as info:
        convert.pod_from_dict(body)
    assert str(info.value).startswith(message)


def test_from_dict_rejects_non_mapping() -> None:
    with pytest.raises(ConversionError, match="expected a mapping"):
        convert.pod_from_dict(["not", "a", "pod"])  # type: ignore[arg-type]


def test_from_dict_yaml_scalars() -> None:
    # YAML gives numbers and datetime objects where JSON has strings.
    body = pod_json({"containers": [{"name": "c", "resources": {"requests": {"cpu": 0.5, "memory": 1024}}}]})
    body["metadata"]["creationTimestamp"] = datetime(2024, 5, 1, 12, 0, 0)  # naive = UTC
    pod = convert.pod_from_dict(body)
    assert pod.containers[0].requests == {"cpu": 500, "memory": 1024}
    assert pod.creation_timestamp == T0_EPOCH


# --- list bodies and watch lines -------------------------------------------------------------------


def test_decode_list_body() -> None:
    items = [pod_json(), {**pod_json(), "metadata": {"name": "web-2", "namespace": "ns"}}]
    body = json.dumps(
        {"kind": "PodList", "metadata": {"resourceVersion": "99", "continue": "tok"}, "items": items}
    ).encode()
    result = decode_list(body, structs.Pod)
    assert result.resource_version == "99"
    assert result.continue_token == "tok"
    assert [convert.pod_from_api(p).key for p in result.items] == ["default/web-1", "ns/web-2"]
    assert result.failures == []


def test_decode_list_without_items() -> None:
    result = decode_list(b'{"metadata":{"resourceVersion":"1"},"items":null}', structs.Node)
    assert (result.items, result.resource_version, result.continue_token) == ([], "1", "")


def test_decode_list_isolates_bad_item() -> None:
    bad = pod_json({"priority": "x", "schedulerName": "policy", "nodeName": ""})
    bad["metadata"]["name"] = "bad"
    body = json.dumps({"metadata": {"resourceVersion": "5"}, "items": [pod_json(), bad]}).encode()
    result = decode_list(body, structs.Pod)
    assert [p.metadata.name for p in result.items] == ["web-1"]
    [failure] = result.failures
    assert failure.metadata.name == "bad"
    assert failure.scheduler_name == "policy"
    pod = convert.pod_from_decode_failure(failure)
    assert pod.key == "default/bad"
    assert pod.scheduler_name == "policy"
    assert pod.malformed == "Pod default/bad: spec.priority: Expected `int | null`, got `str`"


def test_decode_watch_event() -> None:
    line = json.dumps({"type": "MODIFIED", "object": pod_json()}).encode()
    event = decode_watch_event(line, structs.Pod)
    assert isinstance(event, structs.WatchEvent)
    assert event.type == "MODIFIED"
    assert convert.pod_from_api(event.object).name == "web-1"


def test_decode_watch_bookmark() -> None:
    line = b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12345"}}}'
    event = decode_watch_event(line, structs.Pod)
    assert isinstance(event, structs.WatchEvent)
    assert (event.type, event.object.metadata.resource_version) == ("BOOKMARK", "12345")


def test_decode_watch_error_event() -> None:
    line = (
        b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",'
        b'"message":"too old resource version: 1 (5)","reason":"Expired","code":410}}'
    )
    status = decode_watch_event(line, structs.Pod)
    assert isinstance(status, structs.Status)
    assert (status.code, status.reason) == (410, "Expired")


def test_decode_watch_bad_object() -> None:
    line = json.dumps({"type": "ADDED", "object": pod_json({"containers": 3})}).encode()
    failure = decode_watch_event(line, structs.Pod)
    assert isinstance(failure, DecodeFailure)
    assert failure.event_type == "ADDED"
    assert convert.pod_from_decode_failure(failure).malformed == (
        "Pod default/web-1: spec.containers: Expected `array | null`, got `int`"
    )


def test_decode_watch_garbage_raises() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_watch_event(b"not json", structs.Pod)


def test_unknown_fields_ignored() -> None:
    body = pod_json({"dnsPolicy": "ClusterFirst", "volumes": [{"name": "v", "emptyDir": {}}]})
    body["status"] = {"podIPs": [{"ip": "10.0.0.1"}], "qosClass": "BestEffort"}
    assert decode_pod(body).name == "web-1"


# --- quantities ---------------------------------------------------------------------------------

SUFFIXES = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(SUFFIXES)))
def test_quantity_memory_round_trip(number: int, suffix: str) -> None:
    pod = decode_pod(pod_json({"overhead": {"memory": f"{number}{suffix}"}}))
    assert pod.overhead["memory"] == number * SUFFIXES[suffix]


@given(st.integers(min_value=0, max_value=10**7))
def test_quantity_cpu_millis_round_trip(millis: int) -> None:
    # "1500m" and "1.5" are the same CPU; whole cores and millicores both land on millicores.
    text = f"{millis}m"
    decimal = f"{millis // 1000}.{millis % 1000:03d}"
    assert canonical("cpu", text) == millis
    pod = decode_pod(pod_json({"overhead": {"cpu": text, "example.com/x": decimal}}))
    assert pod.overhead["cpu"] == millis
    assert canonical("cpu", decimal) == millis


@given(st.decimals(min_value=0, max_value=10**6, places=6, allow_nan=False, allow_infinity=False))
def test_quantity_rounds_up(value: Any) -> None:
    # Fractions of a base unit (or of a millicore) round up, never down, as Quantity.Value does.
    text = format(value, "f")
    cpu = canonical("cpu", text)
    assert cpu >= value * 1000 > cpu - 1
    mem = canonical("memory", text)
    assert mem >= value > mem - 1
