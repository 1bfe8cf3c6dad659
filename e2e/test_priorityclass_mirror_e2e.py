"""PriorityClassMirror on the real control plane: the operator keeps the native PriorityClass in sync."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubectl import Kubectl, condition, namespace, pod
from policy_scheduler.controllers.mirror_plan import (
    MANAGED_BY_LABEL,
    ORIGIN_ANNOTATION,
)
from polling import wait_until

NS = "e2e-pcm"
API_VERSION = "scheduling.policy-scheduler.io/v1alpha1"


def mirror(name: str, value: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PriorityClassMirror",
        "metadata": {"name": name},
        "spec": {"value": value, **spec},
    }


def native(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    result = kubectl.run("get", "priorityclass", name, "-o", "json", "--ignore-not-found")
    if not result.stdout.strip():
        return None
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def native_where(
    kubectl: Kubectl, name: str, check: Callable[[dict[str, Any]], bool]
) -> Callable[[], dict[str, Any] | None]:
    """A probe for wait_until: the native class once `check` holds for it."""

    def probe() -> dict[str, Any] | None:
        obj = native(kubectl, name)
        return obj if obj is not None and check(obj) else None

    return probe


def origin(obj: dict[str, Any]) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(ORIGIN_ANNOTATION)


def synced_status(kubectl: Kubectl, name: str, **expected: Any) -> dict[str, Any] | None:
    """The mirror's status once Synced=True for its current generation and matching `expected`."""
    obj = kubectl.get("priorityclassmirror", name)
    status = obj.get("status") or {}
    synced = condition(obj, "Synced")
    if not synced or synced["status"] != "True":
        return None
    if status.get("observedGeneration") != obj["metadata"]["generation"]:
        return None
    if any(status.get(k) != v for k, v in expected.items()):
        return None
    return dict(status)


def test_create_update_recreate_and_delete(operator_process: Any, kubectl: Kubectl) -> None:
    name = "e2e-pcm-created"
    kubectl.apply(mirror(name, 1234, description="first"))
    pc = wait_until("native PriorityClass created", lambda: native(kubectl, name), timeout=30)
    assert pc["value"] == 1234
    assert pc["description"] == "first"
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    assert not pc.get("globalDefault")
    assert pc["metadata"]["labels"][MANAGED_BY_LABEL] == "policy-scheduler"
    assert pc["metadata"]["annotations"][ORIGIN_ANNOTATION] == "created"
    owner = kubectl.get("priorityclassmirror", name)
    assert [(r["kind"], r["uid"]) for r in pc["metadata"]["ownerReferences"]] == [
        ("PriorityClassMirror", owner["metadata"]["uid"])
    ]
    first_uid = pc["metadata"]["uid"]
    status = wait_until(
        "mirror Synced", lambda: synced_status(kubectl, name, nativeUid=first_uid), timeout=30
    )
    obj = kubectl.get("priorityclassmirror", name)
    assert condition(obj, "Accepted")["status"] == "True"  # type: ignore[index]
    assert condition(obj, "Ready")["status"] == "True"  # type: ignore[index]
    assert status["podCount"] == 0

    # A pod of the class (for a scheduler nobody serves, so it stays Pending but is counted).
    kubectl.apply(namespace(NS))
    kubectl.create(pod("uses-created", NS, "nobody-serves-this", priority_class=name))
    assert kubectl.get("pod", "uses-created", NS)["spec"]["priority"] == 1234
    wait_until(
        "pod counted", lambda: synced_status(kubectl, name, podCount=1, outdatedPodCount=0), timeout=30
    )

    # Mutable fields: patched in place.
    kubectl.patch("priorityclassmirror", name, {"spec": {"description": "second"}})
    wait_until(
        "description patched",
        native_where(kubectl, name, lambda p: p.get("description") == "second"),
        timeout=30,
    )
    assert native(kubectl, name)["metadata"]["uid"] == first_uid  # type: ignore[index]

    # Immutable value: deleted and created again; the running pod keeps its old priority.
    kubectl.patch("priorityclassmirror", name, {"spec": {"value": 4321}})
    pc = wait_until(
        "recreated with the new value",
        native_where(kubectl, name, lambda p: p["value"] == 4321),
        timeout=30,
    )
    assert pc["metadata"]["uid"] != first_uid
    assert pc["description"] == "second"
    assert pc["metadata"]["annotations"][ORIGIN_ANNOTATION] == "created"
    wait_until(
        "new uid and outdated pod in status",
        lambda: synced_status(kubectl, name, nativeUid=pc["metadata"]["uid"], podCount=1, outdatedPodCount=1),
        timeout=30,
    )

    # A hand-deleted native class comes back.
    kubectl.delete("priorityclass", name, wait=True)
    wait_until(
        "repaired",
        native_where(kubectl, name, lambda p: p["metadata"]["uid"] != pc["metadata"]["uid"]),
        timeout=30,
    )

    # Deleting the mirror deletes the class it created.
    kubectl.delete("pod", "uses-created", NS)
    kubectl.delete("priorityclassmirror", name)
    wait_until("native class deleted", lambda: native(kubectl, name) is None, timeout=30)


def test_adopts_existing_class_and_keeps_it(operator_process: Any, kubectl: Kubectl) -> None:
    name = "e2e-pcm-adopted"
    kubectl.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "labels": {"team": "platform"}},
            "value": 77,
            "description": "made by hand",
        }
    )
    original_uid = native(kubectl, name)["metadata"]["uid"]  # type: ignore[index]

    kubectl.apply(mirror(name, 77, description="managed now"))
    pc = wait_until(
        "adopted",
        native_where(
            kubectl, name, lambda p: origin(p) == "adopted" and p.get("description") == "managed now"
        ),
        timeout=30,
    )
    assert pc["metadata"]["uid"] == original_uid
    assert pc["metadata"]["labels"] == {"team": "platform", MANAGED_BY_LABEL: "policy-scheduler"}
    assert not pc["metadata"].get("ownerReferences")
    wait_until("mirror Synced", lambda: synced_status(kubectl, name, nativeUid=original_uid), timeout=30)

    # An adopted class whose value changes is recreated, still as adopted (no owner).
    kubectl.patch("priorityclassmirror", name, {"spec": {"value": 78}})
    pc = wait_until("recreated", native_where(kubectl, name, lambda p: p["value"] == 78), timeout=30)
    assert pc["metadata"]["annotations"][ORIGIN_ANNOTATION] == "adopted"
    assert pc["metadata"]["labels"]["team"] == "platform"
    assert not pc["metadata"].get("ownerReferences")
    kept_uid = pc["metadata"]["uid"]

    # Deleting the mirror keeps the class and drops our marks.
    kubectl.delete("priorityclassmirror", name)
    released = wait_until(
        "released",
        native_where(kubectl, name, lambda p: origin(p) is None),
        timeout=30,
    )
    assert released["metadata"]["uid"] == kept_uid
    assert released["value"] == 78
    assert MANAGED_BY_LABEL not in released["metadata"]["labels"]
    kubectl.delete("priorityclass", name)


VALUE_MAXIMUM = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/value/maximum"
CRD = "priorityclassmirrors.scheduling.policy-scheduler.io"


def test_restart_with_an_invalid_stored_spec_serves_the_persisted_one(
    operator_process: Any, kubectl: Kubectl
) -> None:
    """A spec the API server stored but the operator rejects (an older CRD without the maximum
    allowed it); the restarted operator keeps the class on the spec persisted in status."""
    name = "e2e-pcm-persisted"
    kubectl.apply(mirror(name, 1500))
    wait_until("mirror Synced", lambda: synced_status(kubectl, name, lastAcceptedGeneration=1), timeout=30)
    patch = json.dumps([{"op": "remove", "path": VALUE_MAXIMUM}])
    kubectl.run("patch", "crd", CRD, "--type=json", "-p", patch)
    try:
        wait_until(
            "the loosened schema takes the value",
            lambda: (
                kubectl.run(
                    "patch",
                    "priorityclassmirror",
                    name,
                    "--type=merge",
                    "-p",
                    '{"spec":{"value":2000000000}}',
                    check=False,
                ).returncode
                == 0
            ),
            timeout=30,
        )
    finally:
        restore = json.dumps([{"op": "add", "path": VALUE_MAXIMUM, "value": 1_000_000_000}])
        kubectl.run("patch", "crd", CRD, "--type=json", "-p", restore)

    def rejected() -> dict[str, Any] | None:
        obj = kubectl.get("priorityclassmirror", name)
        accepted = condition(obj, "Accepted") or {}
        status = obj.get("status") or {}
        return obj if status.get("observedGeneration") == 2 and accepted.get("status") == "False" else None

    obj = wait_until("generation 2 rejected", rejected, timeout=30)
    assert "spec.value" in condition(obj, "Accepted")["message"]  # type: ignore[index]
    assert obj["status"]["lastAcceptedGeneration"] == 1
    assert obj["status"]["lastAcceptedSpec"]["value"] == 1500

    operator_process.restart()

    def restored() -> dict[str, Any] | None:
        obj = kubectl.get("priorityclassmirror", name)
        message = (condition(obj, "Stalled") or {}).get("message") or ""
        return obj if "restored from status.lastAcceptedSpec" in message else None

    obj = wait_until("the restarted operator serves the persisted spec", restored, timeout=30)
    assert condition(obj, "Accepted")["status"] == "False"  # type: ignore[index]
    # The class in force is repaired to the persisted spec, not left alone nor given 2000000000.
    kubectl.delete("priorityclass", name, wait=True)
    pc = wait_until("class recreated from the persisted spec", lambda: native(kubectl, name), timeout=30)
    assert pc["value"] == 1500
    header = kubectl.run("get", "priorityclassmirror", name).stdout.splitlines()[0].split()
    assert header[:5] == ["NAME", "ACCEPTED", "GENERATION", "INFORCE", "VALUE"]
    row = kubectl.run("get", "priorityclassmirror", name).stdout.splitlines()[1].split()
    assert row[1:4] == ["False", "2", "1"]
    kubectl.delete("priorityclassmirror", name)
    wait_until("native class deleted", lambda: native(kubectl, name) is None, timeout=30)
