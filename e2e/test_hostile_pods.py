"""Issue 11, hostile pods on the real API server (shapes from policy_scheduler.bench.hostile).

Each pod the API server stores is bound or reported Unschedulable naming its cause; the API
server refuses the malformed quantities itself (naming the field). The operator stays alive
and a plain pod created after them all is bound.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures_operator import OperatorProcess
from kubectl import Kubectl, condition, namespace, profile
from policy_scheduler.bench.hostile import LONG_KEY, LONG_VALUE, SHAPES, Shape, pod_json
from polling import wait_until

NS = "hostile"  # pod_json's namespace
SCHEDULER = "e2e-hostile-scheduler"
# The shapes that do not depend on the in-memory cluster's node names.
E2E_SHAPES = [
    s
    for s in SHAPES
    if s.name
    in {
        "cpu 1e1000",
        "memory 99999999999999999999Ei",
        "cpu -1",
        "cpu abc",
        "5000 tolerations",
        "labels at their limits",
        "unknown extended resource",
        "500 containers, 4000 ports",
        "1000 host ports",
    }
]


def _for_api(obj: dict[str, Any]) -> dict[str, Any]:
    """A shape's pod as a user would create it: our scheduler, no uid or status."""
    obj["spec"]["schedulerName"] = SCHEDULER
    obj["spec"]["terminationGracePeriodSeconds"] = 0
    obj["metadata"].pop("uid", None)
    obj.pop("status", None)
    return obj


def _outcome(kubectl: Kubectl, name: str) -> Callable[[], tuple[str, str] | None]:
    def check() -> tuple[str, str] | None:
        obj = kubectl.get("pod", name, NS)
        if obj["spec"].get("nodeName"):
            return "bound", str(obj["spec"]["nodeName"])
        scheduled = condition(obj, "PodScheduled") or {}
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            return "Unschedulable", str(scheduled.get("message"))
        return None

    return check


@pytest.fixture
def labelled_node(kubectl: Kubectl) -> Iterator[str]:
    nodes = [
        n
        for n in kubectl.items("nodes")
        if not n["spec"].get("taints") and not n["spec"].get("unschedulable")
    ]
    node = str(sorted(n["metadata"]["name"] for n in nodes)[0])
    kubectl.run("label", "node", node, f"{LONG_KEY}={LONG_VALUE}", "--overwrite")
    kubectl.apply(namespace(NS), profile("e2e-hostile", SCHEDULER))
    try:
        yield node
    finally:
        kubectl.run("label", "node", node, f"{LONG_KEY}-")
        kubectl.delete("namespace", NS)
        kubectl.delete("schedulingprofile", "e2e-hostile")


def test_hostile_pods_on_the_api_server(
    operator_process: OperatorProcess, kubectl: Kubectl, labelled_node: str
) -> None:
    created: list[tuple[Shape, str]] = []
    refused: list[str] = []
    for shape in E2E_SHAPES:
        obj = _for_api(shape.make(0))
        result = kubectl.run("create", "-f", "-", stdin=json.dumps(obj), check=False)
        if result.returncode != 0:
            assert not shape.bound, f"{shape.name}: refused: {result.stderr}"
            # The API server's own words: the field for -1, only the format for "abc" (its decoder).
            assert re.search(r"resources\.requests|quantities must match", result.stderr), result.stderr
            refused.append(shape.name)
            continue
        created.append((shape, obj["metadata"]["name"]))
    kubectl.create(_for_api(pod_json("plain")))

    for shape, name in created:
        outcome, detail = wait_until(
            f"{shape.name}: bound or Unschedulable", _outcome(kubectl, name), timeout=60
        )
        if shape.bound:
            assert outcome == "bound", f"{shape.name}: {detail}"
        else:
            assert outcome == "Unschedulable", f"{shape.name}: bound to {detail}"
            assert shape.message in detail, f"{shape.name}: {detail}"
        if shape.name == "labels at their limits":
            assert detail == labelled_node
    plain = wait_until("the plain pod bound", _outcome(kubectl, "plain"), timeout=60)
    assert plain[0] == "bound"
    assert operator_process.proc.poll() is None
    assert operator_process.get("/livez", token=None)[0] == 200
    print(f"HOSTILE-E2E: refused by the API server: {refused}; stored: {[s.name for s, _ in created]}")
