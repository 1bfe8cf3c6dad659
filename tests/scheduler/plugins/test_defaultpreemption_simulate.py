"""End to end in memory: a scenario YAML through `simulate`, where preemption evicts at once."""

from __future__ import annotations

from pathlib import Path

from policy_scheduler.simulate.profiles import resolve_scenario_profiles
from policy_scheduler.simulate.run import PodOutcome, simulate
from policy_scheduler.simulate.scenario import load_scenario

CLUSTER = (
    """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 50
---
apiVersion: v1
kind: Node
metadata: {name: node-a}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
"""
    + "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{app: {app}}}}}
spec:
  nodeName: {node}
  priorityClassName: {pc}
  containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
status:
  phase: Running
  startTime: "2024-01-01T00:00:0{start}Z"
"""
        for name, node, pc, app, start in (
            ("web-1", "node-a", "low", "web", 1),
            ("web-2", "node-a", "low", "web", 2),
            ("batch-1", "node-b", "batch", "batch", 3),
            ("batch-2", "node-b", "batch", "batch", 4),
        )
    )
    + """---
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: default}
spec:
  priorityClassName: high
  containers: [{name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""
)

BATCH_PDB = """---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: batch, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: batch}}
status:
  disruptionsAllowed: 0
  currentHealthy: 2
  desiredHealthy: 2
  expectedPods: 2
"""


def _run(tmp_path: Path, text: str) -> dict[str, PodOutcome]:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    scenario = load_scenario([path])
    outcomes = simulate(scenario, resolve_scenario_profiles(scenario), seed=1)
    return {o.name: o for o in outcomes}


def test_preemptor_evicts_the_lowest_priority_newest_pod(tmp_path: Path) -> None:
    out = _run(tmp_path, CLUSTER)
    # node-b's victims have the lowest priority; of its two batch pods the later started goes.
    assert out["urgent"].node == "node-b"
    assert out["urgent"].preempted == ["default/batch-2"]
    assert out["batch-2"].node is None
    assert out["batch-2"].message == "preempted by default/urgent"
    assert {n: out[n].node for n in ("web-1", "web-2", "batch-1")} == {
        "web-1": "node-a",
        "web-2": "node-a",
        "batch-1": "node-b",
    }


def test_budget_enforced_by_default_moves_preemption_elsewhere(tmp_path: Path) -> None:
    out = _run(tmp_path, CLUSTER + BATCH_PDB)
    # Evicting a batch pod would break its PDB: node-a's newer web pod goes instead.
    assert out["urgent"].node == "node-a"
    assert out["urgent"].preempted == ["default/web-2"]
    assert out["batch-1"].node == "node-b"
    assert out["batch-2"].node == "node-b"
