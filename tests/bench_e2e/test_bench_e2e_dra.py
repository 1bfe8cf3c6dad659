"""The end-to-end benchmark's DRA workload (scheduler_perf's SchedulingWithResourceClaimTemplate)."""

from __future__ import annotations

from policy_scheduler.bench_e2e import dra
from policy_scheduler.bench_e2e.contenders import KUBE, NOOP
from policy_scheduler.bench_e2e.suite import not_applicable
from policy_scheduler.bench_e2e.workloads import catalogue

WORKLOAD = "SchedulingWithResourceClaimTemplate"


def test_a_slice_per_node_a_class_for_the_run_and_one_template() -> None:
    nodes = ["n0", "n1", "n2"]
    objects = dra.objects("bench-3-x", nodes)
    slices = [o for o in objects if o["kind"] == "ResourceSlice"]
    assert [s["spec"]["nodeName"] for s in slices] == nodes
    assert all(len(s["spec"]["devices"]) == dra.FREE_DEVICES_PER_NODE for s in slices)
    assert {s["spec"]["driver"] for s in slices} == {dra.driver("bench-3-x")}
    [cls] = [o for o in objects if o["kind"] == "DeviceClass"]
    assert dra.driver("bench-3-x") in cls["spec"]["selectors"][0]["cel"]["expression"]
    [template] = [o for o in objects if o["kind"] == "ResourceClaimTemplate"]
    assert dra.collection(template) == "/apis/resource.k8s.io/v1/namespaces/bench-3-x/resourceclaimtemplates"
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["deviceClassName"] == cls["metadata"]["name"]


def test_measured_pods_use_a_claim_from_the_template_and_are_capped_by_devices() -> None:
    w = catalogue()[WORKLOAD]
    assert w.claims
    pod = w.measured("pod-0", "ns", "sched")
    assert pod["spec"]["resourceClaims"] == [{"name": dra.CLAIM, "resourceClaimTemplateName": dra.TEMPLATE}]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": dra.CLAIM}]
    assert w.max_measured(100) == 100 * dra.FREE_DEVICES_PER_NODE


def test_the_noop_binder_is_not_applicable() -> None:
    w = catalogue()[WORKLOAD]
    assert not_applicable(w, NOOP).startswith("n/a")
    assert not_applicable(w, KUBE) == ""
    assert not_applicable(catalogue()["SchedulingBasic"], NOOP) == ""
