"""`simulate --from-cluster` without a cluster: the snapshot read through a fake GET, the policy
in force (last accepted spec, missing EvictionPolicy), --apply overrides, victim verdicts, --diff."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from policy_scheduler.apiobjects.convert import pod_from_dict
from policy_scheduler.apiobjects.convert_cluster import pdb_from_dict
from policy_scheduler.app.cli import main
from policy_scheduler.kube.paths import PODS
from policy_scheduler.kube.retry import Answer
from policy_scheduler.scheduler.plugins.defaultpreemption import EvictionPolicyConfig
from policy_scheduler.scheduler.versioning.semantics import command_semantics
from policy_scheduler.scheduler.versioning.version import V1_37
from policy_scheduler.simulate import live_snapshot, whatif
from policy_scheduler.simulate.diff import changes_json, changes_table, diff_outcomes
from policy_scheduler.simulate.live_snapshot import SnapshotError, read_snapshot
from policy_scheduler.simulate.overrides import (
    NEW_OBJECT_CREATED,
    OverrideError,
    Overrides,
    load_overrides,
    with_overrides,
)
from policy_scheduler.simulate.policy_in_force import policy_in_force
from policy_scheduler.simulate.run import PodOutcome
from policy_scheduler.simulate.scenario import Scenario
from policy_scheduler.simulate.verdicts import (
    ALLOWED,
    BLOCKED_BY_BUDGET,
    DELETED_DESPITE_BUDGET,
    DRY_RUN,
    NOT_ATTEMPTED,
    after_evictions,
    victim_verdicts,
)
from tests.no_api import NO_API

API = "scheduling.policy-scheduler.io/v1alpha1"
CR = f"/apis/{API}"


# ---- a fake API server: collections by path, paginated like the real one -------------------------


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(
    name: str,
    cpu: str,
    *,
    node_name: str = "",
    scheduler: str = "s",
    priority: int = 0,
    labels: Mapping[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    ns: str = "default",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}", "creationTimestamp": created}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**meta, "labels": dict(labels or {})},
        "spec": spec,
    }


def pdb(name: str, app: str, allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        },
    }


def profile(name: str, scheduler: str = "s", **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "uid": f"uid-{name}", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"}
    return {
        "apiVersion": API,
        "kind": "SchedulingProfile",
        "metadata": meta,
        "spec": {"schedulerName": scheduler, **spec},
    }


def eviction_policy(name: str, **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "uid": f"uid-{name}", "generation": 1}
    return {"apiVersion": API, "kind": "EvictionPolicy", "metadata": meta, "spec": spec}


PATHS = {
    "Pod": PODS,
    "Node": "/api/v1/nodes",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",
    "SchedulingProfile": f"{CR}/schedulingprofiles",
    "EvictionPolicy": f"{CR}/evictionpolicies",
}


class FakeApi:
    """GET only; `page` items a page; a continue token may be expired once (410)."""

    def __init__(
        self,
        *objects: dict[str, Any],
        page: int = 2,
        crds: bool = True,
        expire_once: bool = False,
        version: str | None = "v1.35.4",
    ):
        self.version = version  # the API server's gitVersion; None: /version fails
        self.collections: dict[str, list[dict[str, Any]]] = {}
        for obj in objects:
            self.collections.setdefault(PATHS[obj["kind"]], []).append(obj)
        self.page = page
        self.crds = crds
        self.expire_once = expire_once
        self.requests: list[tuple[str, dict[str, Any]]] = []

    async def get(self, path: str, query: dict[str, str | int | bool]) -> Answer:
        self.requests.append((path, dict(query)))
        if path == "/version":
            if self.version is None:
                return Answer(503, b'{"kind":"Status","code":503}')
            return Answer(200, msgspec.json.encode({"major": "1", "gitVersion": self.version}))
        if path.startswith(CR) and not self.crds:
            return Answer(404, b'{"kind":"Status","code":404}')
        items = self.collections.get(path, [])
        token = str(query.get("continue", ""))
        if token and self.expire_once:
            self.expire_once = False
            return Answer(410, b'{"kind":"Status","code":410}')
        start = int(token or 0)
        limit = int(query["limit"])
        size = min(limit, self.page)
        rest = str(start + size) if start + size < len(items) else ""
        body = {
            "kind": "List",
            "metadata": {"resourceVersion": "9", "continue": rest},
            "items": items[start : start + size],
        }
        return Answer(200, msgspec.json.encode(body))


def snapshot(api: FakeApi, namespaces: tuple[str, ...] = ()) -> Scenario:
    scenario, _ = asyncio.run(read_snapshot(api.get, namespaces=namespaces))
    return scenario


# ---- snapshot ---------------------------------------------------------------------------------------


def test_snapshot_pages_through_every_collection_and_converts_as_the_informers() -> None:
    api = FakeApi(
        node("n1"),
        *(pod(f"p{i}", "1", created=f"2026-01-01T00:00:0{9 - i}Z") for i in range(5)),
        profile("prof"),
        page=2,
        expire_once=True,
    )
    scenario = snapshot(api)
    assert scenario.server_version == "v1.35.4"  # the release the operator follows
    # Created last first: the queue meets them in creation order, as the operator did.
    assert [p.name for p in scenario.pods] == ["p4", "p3", "p2", "p1", "p0"]
    assert scenario.pods[0].requests["cpu"] == 1000
    assert [n.name for n in scenario.nodes] == ["n1"]
    assert [p["metadata"]["name"] for p in scenario.profiles] == ["prof"]
    pod_queries = [q for path, q in api.requests if path == PODS]
    assert all(q["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed" for q in pod_queries)
    # 3 pages, plus the page that met an expired token, plus the first page of the relist.
    assert len(pod_queries) == 5


def test_snapshot_without_our_crds_reads_them_as_empty_but_core_failures_are_errors() -> None:
    scenario, stats = asyncio.run(read_snapshot(FakeApi(node("n1"), crds=False).get))
    assert scenario.profiles == []
    assert f"{CR}/schedulingprofiles" in stats.missing

    async def forbidden(path: str, query: dict[str, Any]) -> Answer:
        return Answer(403, b"nodes is forbidden")

    with pytest.raises(SnapshotError, match="HTTP 403"):
        asyncio.run(read_snapshot(forbidden))


def test_namespace_keeps_bound_pods_everywhere_but_pending_pods_of_its_own() -> None:
    api = FakeApi(
        node("n1"),
        pod("bound", "1", node_name="n1", ns="other"),
        pod("mine", "1", ns="team"),
        pod("theirs", "1", ns="other"),
    )
    assert {p.name for p in snapshot(api, ("team",)).pods} == {"bound", "mine"}


def test_api_get_sends_only_get(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeApi(node("n1"), pod("p", "1"), profile("prof"))
    methods: list[str] = []

    async def call(api: object, method: str, path: str, **kw: Any) -> Answer:
        methods.append(method)
        return await fake.get(path, dict(kw["query"]))

    monkeypatch.setattr("policy_scheduler.kube.client.call", call)
    asyncio.run(read_snapshot(live_snapshot.api_get(NO_API)))
    assert methods
    assert set(methods) == {"GET"}


# ---- policy in force ----------------------------------------------------------------------------------


def test_invalid_generation_serves_the_last_accepted_spec() -> None:
    obj = profile("prof", podMaxBackoffSeconds=-1)
    obj["metadata"]["generation"] = 3
    obj["status"] = {"lastAcceptedGeneration": 2, "lastAcceptedSpec": {"schedulerName": "old-name"}}
    result = policy_in_force([obj], [])
    assert result.scheduler_names == {"old-name"}
    assert any("generation 3 was rejected; generation 2 stays in force" in n for n in result.notes)


def test_profile_whose_eviction_policy_is_missing_preempts_nothing() -> None:
    result = policy_in_force([profile("prof", evictionPolicyName="gone")], [])
    config = result.policy_for("s")
    assert config is not None
    assert config.unavailable_reason is not None
    assert any("preempts nothing" in n for n in result.notes)
    present = policy_in_force([profile("prof", evictionPolicyName="p")], [eviction_policy("p", dryRun=True)])
    config = present.policy_for("s")
    assert config is not None
    assert config.dry_run
    assert config.unavailable_reason is None


def test_profile_selector_leaves_out_profiles_the_operator_ignores() -> None:
    labelled = profile("isolated")
    labelled["metadata"]["labels"] = {"shard": "b"}
    assert policy_in_force([labelled], [], "shard=a").profiles == []


# ---- overrides -------------------------------------------------------------------------------------------


def write(tmp_path: Path, *objects: dict[str, Any]) -> str:
    path = tmp_path / "apply.yaml"
    path.write_text(yaml.safe_dump_all([{k: v for k, v in o.items()} for o in objects]))
    return str(path)


def test_apply_replaces_the_same_named_object_as_kubectl_apply_would(tmp_path: Path) -> None:
    old = profile("prof", evictionPolicyName="p")
    old["metadata"]["generation"] = 4
    old["status"] = {"lastAcceptedGeneration": 4, "lastAcceptedSpec": old["spec"]}
    scenario = Scenario(profiles=[old], eviction_policies=[eviction_policy("p")])
    new = {
        "apiVersion": API,
        "kind": "SchedulingProfile",
        "metadata": {"name": "prof"},
        "spec": {"schedulerName": "t"},
    }
    added = {
        "apiVersion": API,
        "kind": "SchedulingProfile",
        "metadata": {"name": "more"},
        "spec": {"schedulerName": "u"},
    }
    overrides = load_overrides([write(tmp_path, new, added)])
    changed = with_overrides(scenario, overrides)
    [replaced, created] = changed.profiles
    assert replaced["spec"] == {"schedulerName": "t"}
    assert replaced["metadata"]["uid"] == "uid-prof"
    assert replaced["metadata"]["generation"] == 5
    assert replaced["status"] == old["status"]
    assert created["metadata"]["creationTimestamp"] == NEW_OBJECT_CREATED
    assert scenario.profiles == [old], "the snapshot itself is left alone"
    assert policy_in_force(changed.profiles, changed.eviction_policies).scheduler_names == {"t", "u"}


def test_invalid_apply_names_file_object_and_field(tmp_path: Path) -> None:
    bad = {
        "apiVersion": API,
        "kind": "SchedulingProfile",
        "metadata": {"name": "bad"},
        "spec": {"schedulerName": "s", "podMaxBackoffSeconds": -1},
    }
    path = write(tmp_path, bad)
    with pytest.raises(OverrideError) as info:
        load_overrides([path])
    assert any(
        line.startswith(f"{path}:SchedulingProfile/bad:spec.podMaxBackoffSeconds:")
        for line in info.value.lines
    )


def test_apply_may_name_an_eviction_policy_the_cluster_has(tmp_path: Path) -> None:
    obj = {
        "apiVersion": API,
        "kind": "SchedulingProfile",
        "metadata": {"name": "p"},
        "spec": {"schedulerName": "s", "evictionPolicyName": "live"},
    }
    path = write(tmp_path, obj)
    with pytest.raises(OverrideError, match="evictionPolicyName"):
        load_overrides([path])
    assert len(load_overrides([path], known_policies=["live"]).objects) == 1
    assert with_overrides(Scenario(), Overrides()).profiles == []


# ---- victim verdicts -------------------------------------------------------------------------------------


def test_enforce_stops_at_the_first_victim_a_budget_refuses() -> None:
    victims = [
        pod_from_dict(pod(n, "1", node_name="n1", labels={"app": a}))
        for n, a in [("a", "x"), ("b", "y"), ("c", "x")]
    ]
    budgets = [pdb_from_dict(pdb("y", "y", 0))]
    enforce = victim_verdicts(EvictionPolicyConfig(), victims, budgets)
    assert [v for _, v in enforce] == [ALLOWED, BLOCKED_BY_BUDGET, NOT_ATTEMPTED]
    best = victim_verdicts(EvictionPolicyConfig(budget_mode="BestEffort"), victims, budgets)
    assert [v for _, v in best] == [ALLOWED, DELETED_DESPITE_BUDGET, ALLOWED]
    assert {v for _, v in victim_verdicts(EvictionPolicyConfig(dry_run=True), victims, budgets)} == {DRY_RUN}


def test_evictions_use_up_budgets() -> None:
    budget = pdb_from_dict(pdb("x", "x", 1))
    [after] = after_evictions([budget], [pod_from_dict(pod("a", "1", labels={"app": "x"}))])
    assert after.disruptions_allowed == 0
    assert "a" in after.disrupted_pods
    second = pod_from_dict(pod("b", "1", labels={"app": "x"}))
    assert victim_verdicts(EvictionPolicyConfig(), [second], [after])[0][1] == BLOCKED_BY_BUDGET


# ---- diff ---------------------------------------------------------------------------------------------------


def test_diff_lists_only_pods_whose_outcome_changes() -> None:
    before = [
        PodOutcome("d", "vip", message="0/1 nodes are available"),
        PodOutcome("d", "low", node="n1"),
        PodOutcome("d", "stuck", message="Insufficient cpu"),
    ]
    after = [
        PodOutcome("d", "vip", node="n1", preempted=["d/low"], victims={"d/low": ALLOWED}),
        PodOutcome("d", "low", message="preempted by d/vip"),
        PodOutcome("d", "stuck", message="Insufficient cpu (another reason)"),
    ]
    changes = diff_outcomes(before, after)
    assert [c.name for c in changes] == ["vip", "low"]
    data = changes_json(changes, before, after)["changes"]
    assert data[0]["after"] == {
        "node": "n1",
        "nominatedNode": None,
        "preempted": False,
        "message": None,
        "preempts": ["d/low"],
        "victims": [{"pod": "d/low", "verdict": ALLOWED}],
    }
    assert data[1]["before"]["preempted"] is False
    assert data[1]["after"]["preempted"] is True
    table = changes_table(changes, before, after).splitlines()
    assert table[1].split()[:4] == ["d", "vip", "<pending>", "n1"]
    assert table[2].split()[:4] == ["d", "low", "n1", "preempted"]


# ---- the command, on a fake cluster ------------------------------------------------------------------------


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []

    async def take(kubeconfig: str | None, namespaces: Any) -> Any:
        return await read_snapshot(FakeApi(*objects).get, namespaces=namespaces)

    monkeypatch.setattr(whatif, "take_snapshot", take)
    return objects


def test_from_cluster_reports_pending_pods_of_served_schedulers_and_victims(
    cluster: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster += [
        node("n1"),
        pod("low", "3", node_name="n1", labels={"app": "low"}),
        pod("other", "1", node_name="n1"),
        pod("vip", "3", priority=1000),
        pod("foreign", "1", scheduler="default-scheduler"),
        eviction_policy("enforce"),
        profile("prof", evictionPolicyName="enforce"),
    ]
    assert main(["simulate", "--from-cluster", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "note: deciding as kube-scheduler v1.35 does (API server v1.35.4)" in err
    pods = {p["name"]: p for p in json.loads(out)["pods"]}
    assert set(pods) == {"vip", "low"}, "only our pending pods and their victims"
    assert pods["vip"]["node"] == "n1"
    assert pods["vip"]["victims"] == [{"pod": "default/low", "verdict": ALLOWED}]
    assert err.splitlines()[-1].startswith("summary: 1 scheduled, 0 pending, 1 preempted")

    cluster.append(pdb("low", "low", 0))
    assert main(["simulate", "--from-cluster", "-o", "json"]) == 0
    vip = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}["vip"]
    assert vip["node"] is None
    assert "would violate a PodDisruptionBudget" in vip["message"]
    assert vip["victims"] == [{"pod": "default/low", "verdict": BLOCKED_BY_BUDGET}]

    changed = write(
        tmp_path,
        {
            "apiVersion": API,
            "kind": "EvictionPolicy",
            "metadata": {"name": "enforce"},
            "spec": {"budgetMode": "BestEffort"},
        },
    )
    assert main(["simulate", "--from-cluster", "--apply", changed, "--diff", "-o", "json"]) == 0
    changes = {c["name"]: c for c in json.loads(capsys.readouterr().out)["changes"]}
    assert set(changes) == {"vip", "low"}
    assert changes["vip"]["after"]["victims"] == [{"pod": "default/low", "verdict": DELETED_DESPITE_BUDGET}]


def test_from_cluster_bad_apply_exits_2(
    cluster: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.append(node("n1"))
    bad = write(
        tmp_path,
        {
            "apiVersion": API,
            "kind": "EvictionPolicy",
            "metadata": {"name": "e"},
            "spec": {"budgetMode": "Sometimes"},
        },
    )
    assert main(["simulate", "--from-cluster", "--apply", bad]) == 2
    assert f"{bad}:EvictionPolicy/e:spec.budgetMode:" in capsys.readouterr().err


def test_apply_and_diff_need_from_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--diff"]) == 2
    assert "--from-cluster" in capsys.readouterr().err


def test_snapshot_of_an_unreadable_version_follows_the_newest_release() -> None:
    scenario = snapshot(FakeApi(node("n1"), version=None))
    assert scenario.server_version is None
    semantics = command_semantics(None, scenario.server_version, from_cluster=True)
    assert (semantics.features.version, semantics.reason) == (V1_37, "ServerVersionUnknown")
