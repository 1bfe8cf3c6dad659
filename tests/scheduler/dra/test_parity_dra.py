"""The parity harness's DRA scenarios: what they generate and that our side reads them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policy_scheduler.apiobjects.dra import store_from_manifests
from policy_scheduler.parity.dra_scenarios import DRA_PRIORITY, extended_resource, wants_dra
from policy_scheduler.parity.generator import Scenario, generate
from policy_scheduler.parity.ours import evaluate
from policy_scheduler.parity.profiles import kube_scheduler_config, resolved_profiles
from policy_scheduler.scheduler.versioning.features import Features, default_features
from policy_scheduler.scheduler.versioning.version import SUPPORTED_VERSIONS, KubernetesVersion

SEEDS = range(200)


def _dra_scenarios() -> list[Scenario]:
    return [generate(seed, "t-") for seed in SEEDS if wants_dra(seed)]


def _kinds(s: Scenario) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in s.dra:
        out.setdefault(obj["kind"], []).append(obj)
    return out


def test_some_scenarios_have_dra_and_others_are_unchanged() -> None:
    dra = _dra_scenarios()
    assert 40 < len(dra) < 120
    plain = next(seed for seed in SEEDS if not wants_dra(seed))
    assert generate(plain).dra == []
    assert generate(dra[0].seed, "t-") == dra[0]  # deterministic


def test_every_request_shape_is_generated() -> None:
    claims = [c for s in _dra_scenarios() for c in _kinds(s)["ResourceClaim"]]
    requests = [r for c in claims for r in c["spec"]["devices"]["requests"]]
    assert any(r.get("exactly", {}).get("allocationMode") == "All" for r in requests)
    assert any(r.get("exactly", {}).get("count", 1) > 1 for r in requests)
    assert any("firstAvailable" in r for r in requests)
    assert any(c["spec"]["devices"].get("constraints") for c in claims)
    assert any(r.get("exactly", {}).get("deviceClassName", "").endswith("fabric") for r in requests)


def test_slices_are_node_local_and_network_attached() -> None:
    s = _dra_scenarios()[0]
    slices = _kinds(s)["ResourceSlice"]
    nodes = {n["metadata"]["name"] for n in s.nodes}
    assert [x for x in slices if x["spec"].get("allNodes")]
    assert all(x["spec"]["nodeName"] in nodes for x in slices if "nodeName" in x["spec"])


def test_shared_claims_and_priority() -> None:
    shared = 0
    for s in _dra_scenarios():
        users: dict[tuple[str, str], int] = {}
        for pod in s.pending:
            for ref in pod["spec"].get("resourceClaims", []):
                key = (pod["metadata"]["namespace"], ref["resourceClaimName"])
                users[key] = users.get(key, 0) + 1
                assert pod["spec"]["priorityClassName"] == DRA_PRIORITY
        shared += sum(1 for n in users.values() if n == 2)
        claims = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in _kinds(s)["ResourceClaim"]}
        assert set(users) == claims
    assert shared > 0


def test_renamed_scenarios_rename_dra_objects() -> None:
    s = _dra_scenarios()[0]
    other = s.renamed("u-")
    assert all("t-" not in str(obj) for obj in other.dra)
    assert len(other.dra) == len(s.dra)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_profiles_run_dynamic_resources_on_both_sides(version: KubernetesVersion) -> None:
    config = kube_scheduler_config("/dev/null")
    assert all("multiPoint" not in p.get("plugins", {}) for p in config["profiles"])
    for profile in resolved_profiles(Features(version)).values():
        assert "DynamicResources" in {ref.name for ref in profile.points["filter"]}


def test_our_side_allocates_from_the_scenario_objects() -> None:
    """Every claim shape is decoded and judged: some DRA pods bind, some cannot allocate."""
    profiles = resolved_profiles(default_features())
    outcomes: set[str] = set()
    for s in _dra_scenarios()[:30]:
        store = store_from_manifests(s.dra)
        assert len(store.claims()) == len(_kinds(s)["ResourceClaim"])
        labels: dict[str, dict[str, str]] = {ns["metadata"]["name"]: {} for ns in s.namespaces}
        for pod in s.pending:
            if "resourceClaims" not in pod["spec"]:
                continue
            api_pod = copy.deepcopy(pod)
            api_pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"]
            decision = evaluate(profiles[s.scheduler_name], s.nodes, [], api_pod, labels, (), s.dra)
            assert decision.outcome != "error", decision.message
            outcomes.add(decision.outcome)
            if decision.outcome == "unschedulable" and "cannot allocate all claims" in decision.message:
                outcomes.add("claims")
    assert {"bound", "claims"} <= outcomes


def test_partitions_taints_and_tolerations_are_generated() -> None:
    scenarios = _dra_scenarios()
    slices = [x for s in scenarios for x in _kinds(s)["ResourceSlice"]]
    with_counters = 0
    for s in scenarios:
        mine = _kinds(s)["ResourceSlice"]
        for c in [x for x in mine if x["spec"].get("sharedCounters")]:
            # each counter slice shares its pool with one slice of partitions
            with_counters += 1
            pool = c["spec"]["pool"]
            assert pool["resourceSliceCount"] == 2
            [parts] = [x for x in mine if x is not c and x["spec"]["pool"]["name"] == pool["name"]]
            assert all(d["consumesCounters"][0]["counterSet"] == "gpu-0" for d in parts["spec"]["devices"])
    assert with_counters
    devices = [d for x in slices for d in x["spec"].get("devices") or ()]
    assert any(d.get("taints") for d in devices)
    claims = [c for s in scenarios for c in _kinds(s)["ResourceClaim"]]
    requests = [r["exactly"] for c in claims for r in c["spec"]["devices"]["requests"] if "exactly" in r]
    assert any(r["deviceClassName"].endswith("partition") for r in requests)
    assert any(r.get("tolerations") for r in requests)
    assert any(d.get("allowMultipleAllocations") for d in devices)
    assert any(r["deviceClassName"].endswith("shared-nic") and "capacity" in r for r in requests)


def _extended_pods(s: Scenario) -> list[dict[str, Any]]:
    name = extended_resource(s.prefix)
    return [
        p for p in s.pending if name in p["spec"]["containers"][0].get("resources", {}).get("requests", {})
    ]


def test_extended_resource_pods_are_generated_on_their_own_stream() -> None:
    scenarios = _dra_scenarios()
    asks = [p for s in scenarios for p in _extended_pods(s)]
    assert len(asks) > 10
    for s in scenarios:
        [served] = [c for c in _kinds(s)["DeviceClass"] if "extendedResourceName" in c["spec"]]
        assert served["spec"]["extendedResourceName"] == extended_resource(s.prefix)
        for pod in _extended_pods(s):
            assert "resourceClaims" not in pod["spec"]  # pods with claims are left alone
            assert pod["spec"]["priorityClassName"] == DRA_PRIORITY  # never a victim
            resources = pod["spec"]["containers"][0]["resources"]
            assert (
                resources["requests"][extended_resource(s.prefix)]
                == resources["limits"][extended_resource(s.prefix)]
            )
    counts = {
        p["spec"]["containers"][0]["resources"]["requests"][extended_resource(s.prefix)]
        for s in scenarios
        for p in _extended_pods(s)
    }
    assert counts == {"1", "2", "9"}


def test_our_side_serves_extended_resources_from_the_scenario_devices() -> None:
    """Extended-resource pods bind where the class's GPUs are, or cannot allocate (9 GPUs)."""
    profiles = resolved_profiles(default_features())
    outcomes: set[str] = set()
    for s in _dra_scenarios()[:30]:
        labels: dict[str, dict[str, str]] = {ns["metadata"]["name"]: {} for ns in s.namespaces}
        for pod in _extended_pods(s):
            api_pod = copy.deepcopy(pod)
            api_pod["metadata"]["uid"] = "uid-" + pod["metadata"]["name"]
            decision = evaluate(profiles[s.scheduler_name], s.nodes, [], api_pod, labels, (), s.dra)
            assert decision.outcome != "error", decision.message
            if decision.outcome == "unschedulable" and "cannot allocate all claims" in decision.message:
                outcomes.add("claims")
            outcomes.add(decision.outcome)
    assert {"bound", "claims"} <= outcomes
